/* Making tensors and storages, wrapping a kernel's numpy result, calling a ufunc quietly.
 *
 * Python references: ember/_tensor.py (Tensor._make), ember/runtime/storage.py (Storage),
 * ember/kit/array_backend.py (ArrayBackend.wrap, ieee_caller).
 */
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#define PY_ARRAY_UNIQUE_SYMBOL ember_ARRAY_API
#include "ember_c.h"
#include <numpy/arrayobject.h>

static PyObject *ieee_var, *ieee_quiet;   /* numpy's error-state context variable, "ignore" */

int tensors_init_numpy(void)
{
    import_array1(-1);
    return 0;
}

static long long device_key(PyObject *device, PyObject **key_out)
{
    PyObject *k = SLOT(device, OFF.dev_key);
    if (k != NULL && k != Py_None && PyLong_CheckExact(k) && PyObject_IsTrue(k) == 1) {
        Py_INCREF(k);
        *key_out = k;
        return 0;
    }
    /* first tensor on this device: keys.device_key allocates its bit */
    *key_out = PyObject_CallOneArg(DeviceKeyFn, device);
    return *key_out == NULL ? -1 : 0;
}

/* Tensor._make(storage, shape, stride, offset, dtype, device, native) for class `type` */
static PyObject *make(PyTypeObject *type, PyObject *const *a, Py_ssize_t nargs)
{
    PyObject *key, *t;
    if (nargs < 6 || nargs > 7) {
        PyErr_SetString(PyExc_TypeError, "Tensor._make takes storage, shape, stride, offset, "
                                         "dtype, device and optionally native");
        return NULL;
    }
    if (device_key(a[5], &key) < 0)
        return NULL;
    t = new_object(type);
    if (t == NULL) {
        Py_DECREF(key);
        return NULL;
    }
    Py_INCREF(a[0]); SLOT(t, OFF.t_storage) = a[0];
    Py_INCREF(a[1]); SLOT(t, OFF.t_shape) = a[1];
    Py_INCREF(a[2]); SLOT(t, OFF.t_stride) = a[2];
    Py_INCREF(a[3]); SLOT(t, OFF.t_offset) = a[3];
    Py_INCREF(a[4]); SLOT(t, OFF.t_dtype) = a[4];
    Py_INCREF(a[5]); SLOT(t, OFF.t_device) = a[5];
    SLOT(t, OFF.t_ks) = key;
    PyObject *native = nargs > 6 ? a[6] : Py_None;
    Py_INCREF(native); SLOT(t, OFF.t_native) = native;
    Py_INCREF(Py_None); SLOT(t, OFF.t_ag) = Py_None;
    return t;
}

PyObject *new_tensor(PyObject *const *args, Py_ssize_t nargs)
{
    return make(TensorType, args, nargs);
}

PyObject *py_new_tensor(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    return make(TensorType, args, nargs);
}

PyObject *py_make_tensor(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs < 1 || !PyType_Check(args[0]) ||
        !PyType_IsSubtype((PyTypeObject *)args[0], TensorType)) {
        PyErr_SetString(PyExc_TypeError, "Tensor._make: expected a Tensor class first");
        return NULL;
    }
    return make((PyTypeObject *)args[0], args + 1, nargs - 1);
}

static PyObject *storage(PyObject *data, PyObject *nbytes, PyObject *device)
{
    PyObject *s = new_object(StorageType);
    if (s == NULL)
        return NULL;
    Py_INCREF(data); SLOT(s, OFF.s_data) = data;
    Py_INCREF(nbytes); SLOT(s, OFF.s_nbytes) = nbytes;
    Py_INCREF(device); SLOT(s, OFF.s_device) = device;
    SLOT(s, OFF.s_version) = PyLong_FromLong(0);
    Py_INCREF(Py_None); SLOT(s, OFF.s_cache) = Py_None;
    return s;
}

PyObject *py_new_storage(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "new_storage(data, nbytes, device)");
        return NULL;
    }
    return storage(args[0], args[1], args[2]);
}

/* ArrayBackend.wrap for a non-empty numpy array with non-negative strides and a dtype ember
   knows; the Python method (`fallback`) for anything else (another array type, negative
   strides, no elements). */
static PyObject *wrap_array(PyObject *np2dt, PyObject *fallback, PyObject *const *args,
                            Py_ssize_t nargs)
{
    PyObject *arr, *device, *dtype, *shape = NULL, *strides = NULL, *st = NULL;
    PyObject *nbytes = NULL, *zero = NULL, *out = NULL;
    if (nargs != 2)
        return PyObject_Vectorcall(fallback, args, nargs, NULL);
    arr = args[0];
    device = args[1];
    if (Py_TYPE(arr) != &PyArray_Type)
        return PyObject_Vectorcall(fallback, args, nargs, NULL);
    PyArrayObject *a = (PyArrayObject *)arr;
    if (PyArray_SIZE(a) == 0)  /* numpy's strides of an empty array are not PyTorch's */
        return PyObject_Vectorcall(fallback, args, nargs, NULL);
    dtype = PyDict_GetItemWithError(np2dt, (PyObject *)PyArray_DESCR(a));
    if (dtype == NULL) {
        if (PyErr_Occurred())
            return NULL;
        return PyObject_Vectorcall(fallback, args, nargs, NULL);
    }
    int nd = PyArray_NDIM(a);
    npy_intp *dims = PyArray_DIMS(a), *bst = PyArray_STRIDES(a);
    npy_intp isz = PyArray_ITEMSIZE(a);
    for (int i = 0; i < nd; i++)
        if (bst[i] < 0)
            return PyObject_Vectorcall(fallback, args, nargs, NULL);
    shape = PyTuple_New(nd);
    strides = PyTuple_New(nd);
    if (shape == NULL || strides == NULL)
        goto done;
    for (int i = 0; i < nd; i++) {
        PyObject *d = PyLong_FromSsize_t(dims[i]), *s = PyLong_FromSsize_t(bst[i] / isz);
        if (d == NULL || s == NULL) {
            Py_XDECREF(d);
            Py_XDECREF(s);
            goto done;
        }
        PyTuple_SET_ITEM(shape, i, d);
        PyTuple_SET_ITEM(strides, i, s);
    }
    nbytes = PyLong_FromSsize_t(PyArray_NBYTES(a));
    zero = PyLong_FromLong(0);
    if (nbytes == NULL || zero == NULL)
        goto done;
    st = storage(arr, nbytes, device);
    if (st == NULL)
        goto done;
    {
        PyObject *targs[7] = {st, shape, strides, zero, dtype, device, arr};
        out = make(TensorType, targs, 7);
    }
done:
    Py_XDECREF(shape);
    Py_XDECREF(strides);
    Py_XDECREF(nbytes);
    Py_XDECREF(zero);
    Py_XDECREF(st);
    return out;
}

static PyObject *wrapper_call(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    /* self: (np2dt, fallback) */
    return wrap_array(PyTuple_GET_ITEM(self, 0), PyTuple_GET_ITEM(self, 1), args, nargs);
}

static PyMethodDef wrapper_def = {
    "wrap", (PyCFunction)(void (*)(void))wrapper_call, METH_FASTCALL,
    "ArrayBackend.wrap(arr, device), compiled for numpy arrays"};

PyObject *py_array_wrapper(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 || !PyDict_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "array_wrapper(np2dt: dict, fallback)");
        return NULL;
    }
    PyObject *state = PyTuple_Pack(2, args[0], args[1]);
    if (state == NULL)
        return NULL;
    PyObject *f = PyCFunction_New(&wrapper_def, state);
    Py_DECREF(state);
    return f;
}

/* An array over ``data`` (memory ``base`` owns; ``descr`` is stolen), holding a reference to
   ``base``: what numpy makes for a view */
static PyObject *array_over(PyArray_Descr *descr, int nd, npy_intp *dims, npy_intp *strides,
                            char *data, int writeable, PyObject *base)
{
    PyObject *arr = PyArray_NewFromDescr(&PyArray_Type, descr, nd, dims, strides, data,
                                         writeable ? NPY_ARRAY_WRITEABLE : 0, NULL);
    if (arr == NULL)
        return NULL;
    Py_INCREF(base);
    if (PyArray_SetBaseObject((PyArrayObject *)arr, base) < 0) {
        Py_DECREF(arr);
        return NULL;
    }
    return arr;
}

/* ArrayBackend._flat_bytes for a storage whose data is a C-contiguous, non-empty ndarray (a
   kernel's fresh result, the common case): a 1-D uint8 view over its bytes, cached on the
   storage. Py_None (borrowed) when the data is anything else, so the caller takes the Python
   method; NULL on error. */
static PyObject *flat_bytes(PyObject *st)
{
    PyObject *data = SLOT(st, OFF.s_data);
    if (data == NULL || Py_TYPE(data) != &PyArray_Type)
        return Py_None;
    PyArrayObject *a = (PyArrayObject *)data;
    if (!PyArray_IS_C_CONTIGUOUS(a) || PyArray_SIZE(a) == 0)
        return Py_None;
    npy_intp n = PyArray_NBYTES(a);
    PyArray_Descr *u8 = PyArray_DescrFromType(NPY_UINT8);
    if (u8 == NULL)
        return NULL;
    PyObject *flat = array_over(u8, 1, &n, NULL, PyArray_BYTES(a), PyArray_ISWRITEABLE(a), data);
    if (flat == NULL)
        return NULL;
    Py_XSETREF(SLOT(st, OFF.s_cache), flat);   /* the storage owns it; borrowed from here on */
    return flat;
}

/* ArrayBackend.native for a tensor of a numpy storage: its cached view, else a strided view of
   the storage's flat bytes (the storage's cache), made here and cached; the Python method
   (`fallback`) for anything else (no flat view yet, another array type, strides or an offset
   the flat bytes don't hold — the Python raises numpy's error for those). */
static PyObject *native_view(PyObject *fallback, PyObject *t)
{
    PyObject *arr, *st, *flat, *shape, *stride, *offset, *dtype, *npdt;
    if (!is_tensor(t))
        return PyObject_CallOneArg(fallback, t);
    arr = SLOT(t, OFF.t_native);
    if (arr != NULL && arr != Py_None) {
        Py_INCREF(arr);
        return arr;
    }
    st = SLOT(t, OFF.t_storage);
    flat = st == NULL ? NULL : SLOT(st, OFF.s_cache);
    if (flat == Py_None && (flat = flat_bytes(st)) == NULL)
        return NULL;
    shape = SLOT(t, OFF.t_shape);
    stride = SLOT(t, OFF.t_stride);
    offset = SLOT(t, OFF.t_offset);
    dtype = SLOT(t, OFF.t_dtype);
    npdt = dtype == NULL || Py_TYPE(dtype) != DtypeType ? NULL : SLOT(dtype, OFF.dt_np);
    if (flat == NULL || Py_TYPE(flat) != &PyArray_Type || shape == NULL || stride == NULL ||
        offset == NULL || npdt == NULL || !PyArray_DescrCheck(npdt) || !PyTuple_Check(shape) ||
        !PyTuple_Check(stride) || PyTuple_GET_SIZE(shape) != PyTuple_GET_SIZE(stride) ||
        PyTuple_GET_SIZE(shape) > NPY_MAXDIMS || PyArray_NDIM((PyArrayObject *)flat) != 1)
        return PyObject_CallOneArg(fallback, t);
    int nd = (int)PyTuple_GET_SIZE(shape);
    npy_intp dims[NPY_MAXDIMS], strides[NPY_MAXDIMS];
    PyArray_Descr *descr = (PyArray_Descr *)npdt;
    npy_intp isz = PyDataType_ELSIZE(descr), lo = 0, hi = 0, empty = 0;
    for (int i = 0; i < nd; i++) {
        dims[i] = PyLong_AsSsize_t(PyTuple_GET_ITEM(shape, i));
        npy_intp s = PyLong_AsSsize_t(PyTuple_GET_ITEM(stride, i));
        if ((dims[i] == -1 || s == -1) && PyErr_Occurred())
            return NULL;
        if (dims[i] < 0 || s < 0)
            return PyObject_CallOneArg(fallback, t);
        strides[i] = s * isz;
        if (dims[i] == 0)
            empty = 1;
        else
            hi += (dims[i] - 1) * strides[i];
    }
    npy_intp off = PyLong_AsSsize_t(offset) * isz;
    if (off < 0 && PyErr_Occurred())
        return NULL;
    if (empty)
        off = 0;   /* an empty slice may start past the end of its storage */
    npy_intp size = PyArray_SIZE((PyArrayObject *)flat);
    if (off < 0 || (!empty && off + hi + isz > size) || lo < 0)
        return PyObject_CallOneArg(fallback, t);
    Py_INCREF(descr);
    arr = array_over(descr, nd, dims, strides, PyArray_BYTES((PyArrayObject *)flat) + off,
                     PyArray_ISWRITEABLE((PyArrayObject *)flat), flat);
    if (arr == NULL)
        return NULL;
    PyArray_UpdateFlags((PyArrayObject *)arr, NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_F_CONTIGUOUS |
                                              NPY_ARRAY_ALIGNED);
    Py_INCREF(arr);
    Py_XSETREF(SLOT(t, OFF.t_native), arr);
    return arr;
}

static PyObject *native_call(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 1)
        return PyObject_Vectorcall(self, args, nargs, NULL);
    return native_view(self, args[0]);
}

static PyMethodDef native_def = {
    "native", (PyCFunction)(void (*)(void))native_call, METH_FASTCALL,
    "ArrayBackend.native(t), compiled for numpy storages"};

PyObject *py_array_native(PyObject *self, PyObject *fallback)
{
    return PyCFunction_New(&native_def, fallback);
}

/* ieee_caller's call(f, *args): f(*args) with numpy's error state set to "ignore" */
PyObject *py_ieee_call(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs < 1) {
        PyErr_SetString(PyExc_TypeError, "ieee_call(f, *args)");
        return NULL;
    }
    if (ieee_var == NULL)
        return PyObject_Vectorcall(args[0], args + 1, nargs - 1, NULL);
    PyObject *token = PyContextVar_Set(ieee_var, ieee_quiet);
    if (token == NULL)
        return NULL;
    PyObject *r = PyObject_Vectorcall(args[0], args + 1, nargs - 1, NULL);
    PyObject *exc_type, *exc, *tb;
    PyErr_Fetch(&exc_type, &exc, &tb);
    int bad = PyContextVar_Reset(ieee_var, token);
    Py_DECREF(token);
    if (bad < 0) {
        Py_XDECREF(r);
        Py_XDECREF(exc_type);
        Py_XDECREF(exc);
        Py_XDECREF(tb);
        return NULL;
    }
    PyErr_Restore(exc_type, exc, tb);
    return r;
}

PyObject *install_ieee(PyObject *self, PyObject *args)
{
    PyObject *var, *quiet;
    if (!PyArg_ParseTuple(args, "OO", &var, &quiet))
        return NULL;
    Py_INCREF(var);
    Py_XSETREF(ieee_var, var);
    Py_INCREF(quiet);
    Py_XSETREF(ieee_quiet, quiet);
    Py_RETURN_NONE;
}

PyObject *install_tensors(PyObject *self, PyObject *args)
{
    PyObject *tensor_cls, *storage_cls, *device_cls, *dtype_cls, *device_key_fn;
    if (!PyArg_ParseTuple(args, "OOOOO", &tensor_cls, &storage_cls, &device_cls, &dtype_cls,
                          &device_key_fn))
        return NULL;
    if (slot_offset(tensor_cls, "_storage", &OFF.t_storage) < 0 ||
        slot_offset(tensor_cls, "_shape", &OFF.t_shape) < 0 ||
        slot_offset(tensor_cls, "_stride", &OFF.t_stride) < 0 ||
        slot_offset(tensor_cls, "_offset", &OFF.t_offset) < 0 ||
        slot_offset(tensor_cls, "dtype", &OFF.t_dtype) < 0 ||
        slot_offset(tensor_cls, "device", &OFF.t_device) < 0 ||
        slot_offset(tensor_cls, "_ks", &OFF.t_ks) < 0 ||
        slot_offset(tensor_cls, "_native", &OFF.t_native) < 0 ||
        slot_offset(tensor_cls, "_ag", &OFF.t_ag) < 0 ||
        slot_offset(tensor_cls, "_view_base", &OFF.t_view_base) < 0 ||
        slot_offset(storage_cls, "data", &OFF.s_data) < 0 ||
        slot_offset(storage_cls, "nbytes", &OFF.s_nbytes) < 0 ||
        slot_offset(storage_cls, "device", &OFF.s_device) < 0 ||
        slot_offset(storage_cls, "version", &OFF.s_version) < 0 ||
        slot_offset(storage_cls, "cache", &OFF.s_cache) < 0 ||
        slot_offset(device_cls, "_key", &OFF.dev_key) < 0 ||
        slot_offset(dtype_cls, "category", &OFF.dt_category) < 0 ||
        slot_offset(dtype_cls, "np", &OFF.dt_np) < 0)
        return NULL;
    Py_INCREF(dtype_cls);
    Py_XSETREF(DtypeType, (PyTypeObject *)dtype_cls);
    Py_INCREF(tensor_cls);
    Py_XSETREF(TensorType, (PyTypeObject *)tensor_cls);
    Py_INCREF(storage_cls);
    Py_XSETREF(StorageType, (PyTypeObject *)storage_cls);
    Py_INCREF(device_key_fn);
    Py_XSETREF(DeviceKeyFn, device_key_fn);
    Py_RETURN_NONE;
}
