/* ember._C: module definition, slot offsets and the per-thread dispatch masks.
 *
 * Python reference for the masks: ember/dispatch/keys.py (_DispatchState.masks). Here they are
 * two C thread-locals, so the dispatcher reads them without an attribute lookup; install()
 * puts a data descriptor on _DispatchState, so `state.masks` reads and writes them from Python.
 */
#include "ember_c.h"

Offsets OFF;
PyTypeObject *TensorType, *StorageType, *AutogradMetaType, *SavedTensorType, *DtypeType;
PyObject *DeviceKeyFn;

_Thread_local long long tl_include = 0, tl_keep = -1;
_Thread_local PyObject *tl_masks = NULL;

void masks_set(long long include, long long keep)
{
    tl_include = include;
    tl_keep = keep;
    Py_CLEAR(tl_masks);
}

int slot_offset(PyObject *cls, const char *name, Py_ssize_t *out)
{
    PyObject *mro = ((PyTypeObject *)cls)->tp_mro;
    for (Py_ssize_t i = 0; mro && i < PyTuple_GET_SIZE(mro); i++) {
        PyTypeObject *base = (PyTypeObject *)PyTuple_GET_ITEM(mro, i);
        PyObject *d = PyDict_GetItemString(base->tp_dict, name);
        if (d == NULL)
            continue;
        if (Py_TYPE(d) != &PyMemberDescr_Type ||
            ((PyMemberDescrObject *)d)->d_member->type != T_OBJECT_EX) {
            PyErr_Format(PyExc_TypeError, "ember._C: %s.%s is not a __slots__ member",
                         ((PyTypeObject *)cls)->tp_name, name);
            return -1;
        }
        *out = ((PyMemberDescrObject *)d)->d_member->offset;
        return 0;
    }
    PyErr_Format(PyExc_TypeError, "ember._C: %s has no slot %s", ((PyTypeObject *)cls)->tp_name,
                 name);
    return -1;
}

PyObject *new_object(PyTypeObject *type)
{
    return type->tp_alloc(type, 0);
}

/* -- the masks descriptor ------------------------------------------------------------------- */
typedef struct {
    PyObject_HEAD
} MasksDescr;

static PyObject *masks_get(PyObject *self, PyObject *obj, PyObject *type)
{
    if (obj == NULL || obj == Py_None) {
        Py_INCREF(self);
        return self;
    }
    if (tl_masks == NULL) {
        tl_masks = Py_BuildValue("(LL)", tl_include, tl_keep);
        if (tl_masks == NULL)
            return NULL;
    }
    Py_INCREF(tl_masks);
    return tl_masks;
}

static int masks_put(PyObject *self, PyObject *obj, PyObject *value)
{
    if (value == NULL) {
        PyErr_SetString(PyExc_AttributeError, "the dispatch masks can't be deleted");
        return -1;
    }
    if (!PyTuple_Check(value) || PyTuple_GET_SIZE(value) != 2) {
        PyErr_SetString(PyExc_TypeError, "dispatch masks must be an (include, keep) tuple");
        return -1;
    }
    long long include = PyLong_AsLongLong(PyTuple_GET_ITEM(value, 0));
    if (include == -1 && PyErr_Occurred())
        return -1;
    long long keep = PyLong_AsLongLong(PyTuple_GET_ITEM(value, 1));
    if (keep == -1 && PyErr_Occurred())
        return -1;
    tl_include = include;
    tl_keep = keep;
    Py_INCREF(value);
    Py_XSETREF(tl_masks, value);
    return 0;
}

static PyTypeObject MasksDescrType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "ember._C.MasksDescriptor",
    .tp_basicsize = sizeof(MasksDescr),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "keys.state.masks kept in C thread-locals",
    .tp_descr_get = masks_get,
    .tp_descr_set = masks_put,
    .tp_new = PyType_GenericNew,
};

/* -- module ---------------------------------------------------------------------------------- */
static PyMethodDef methods[] = {
    {"install_dispatch", install_dispatch, METH_VARARGS,
     "install_dispatch(Op, Tensor, call_python): Op's slot offsets and its Python __call__"},
    {"install_tensors", install_tensors, METH_VARARGS,
     "install_tensors(Tensor, Storage, device, dtype, device_key)"},
    {"array_native", py_array_native, METH_O,
     "array_native(fallback) -> native(t): ArrayBackend.native for numpy storages"},
    {"array_wrapper", (PyCFunction)(void (*)(void))py_array_wrapper, METH_FASTCALL,
     "array_wrapper(np2dt, fallback) -> wrap(arr, device): ArrayBackend.wrap for numpy"},
    {"install_autograd", install_autograd, METH_VARARGS,
     "install_autograd(AutogradMeta, SavedTensor, FormulaNode, seq, grad_enabled)"},
    {"collect", (PyCFunction)(void (*)(void))collect_edges, METH_FASTCALL,
     "collect(spec, args, slots): autograd/record.py's collect"},
    {"set_saved_hooks", set_saved_hooks, METH_O,
     "set_saved_hooks(on): whether saved-tensor hooks may apply (autograd/saved_hooks.py)"},
    {"install_engine", install_engine, METH_VARARGS,
     "install_engine(FormulaNode, AccumulateGrad, Spec, Derivative, _Run, validate, _unpack, "
     "accumulate)"},
    {"run_graph", (PyCFunction)(void (*)(void))py_run_graph, METH_FASTCALL,
     "run_graph(ready, buffers, deps, run, keep_graph, with_extras): engine.execute's loop"},
    {"dependencies", py_dependencies, METH_O,
     "dependencies(root_edges) -> {node: incoming edges} (engine._dependencies)"},
    {"install_ieee", install_ieee, METH_VARARGS,
     "install_ieee(contextvar, quiet): numpy's error-state variable and its 'ignore' value"},
    {"new_tensor", (PyCFunction)(void (*)(void))py_new_tensor, METH_FASTCALL,
     "new_tensor(storage, shape, stride, offset, dtype, device, native=None) -> Tensor"},
    {"make_tensor", (PyCFunction)(void (*)(void))py_make_tensor, METH_FASTCALL,
     "make_tensor(cls, storage, shape, stride, offset, dtype, device, native=None)\n--\n\n"
     "Tensor._make, compiled (a classmethod of Tensor)"},
    {"new_storage", (PyCFunction)(void (*)(void))py_new_storage, METH_FASTCALL,
     "new_storage(data, nbytes, device) -> Storage"},
    {"ieee_call", (PyCFunction)(void (*)(void))py_ieee_call, METH_FASTCALL,
     "ieee_call(f, *args): f(*args) with numpy's floating-point warnings off"},
    {"lstm_cell_gates", (PyCFunction)(void (*)(void))py_lstm_cell_gates, METH_FASTCALL,
     "lstm_cell_gates(t, c, ws, cy) -> bool: kit/rnn.py's _lstm_cell between its tanh passes"},
    {"lstm_cell_backward", (PyCFunction)(void (*)(void))py_lstm_cell_backward, METH_FASTCALL,
     "lstm_cell_backward(gh, gcy, c, ws, d, gc) -> bool: kit/rnn.py's _lstm_cell_backward"},
    {"col2im2d", (PyCFunction)(void (*)(void))py_col2im2d, METH_FASTCALL,
     "col2im2d(acc, cols, stride, dilation) -> bool: kit/convolution.py's col2im loop"},
    {"im2col2d", (PyCFunction)(void (*)(void))py_im2col2d, METH_FASTCALL,
     "im2col2d(cols, z, stride, dilation) -> bool: kit/convolution.py's _columns copy"},
    {"max_pool2d", (PyCFunction)(void (*)(void))py_max_pool2d, METH_FASTCALL,
     "max_pool2d(x, values, indices, kernel, stride, padding, dilation) -> bool: "
     "kit/pooling.py's max_pool"},
    {"scatter_rows", (PyCFunction)(void (*)(void))py_scatter_rows, METH_FASTCALL,
     "scatter_rows(out, indices, g) -> bool: kit/pooling.py's put_along_axis for max pooling's "
     "backward"},
    {"set_threads", py_set_threads, METH_O,
     "set_threads(n): the threads compiled kernels split their work over (_threads.py)"},
    {"axpy_", (PyCFunction)(void (*)(void))py_axpy_, METH_FASTCALL,
     "axpy_(y, x, alpha) -> bool: kit/foreach.py's add_ with an alpha"},
    {"nll_loss", (PyCFunction)(void (*)(void))py_nll_loss, METH_FASTCALL,
     "nll_loss(x, t, w, reduction, ignore_index) -> (loss, total_weight) or None: "
     "kit/loss.py's nll_loss_forward"},
    {"nll_loss_backward", (PyCFunction)(void (*)(void))py_nll_loss_backward, METH_FASTCALL,
     "nll_loss_backward(g, x, t, w, reduction, ignore_index, total_weight) -> array or None: "
     "kit/loss.py's nll_loss_backward"},
    {"erf32", (PyCFunction)(void (*)(void))py_erf32, METH_FASTCALL,
     "erf32(x, out) -> bool: kit/erf32.py's _erf_into"},
    {"relu", py_relu, METH_O, "relu(x) -> ndarray or None: kit/elementwise.py's _relu"},
    {"threshold_backward", (PyCFunction)(void (*)(void))py_threshold_backward, METH_FASTCALL,
     "threshold_backward(g, x, threshold) -> ndarray or None: "
     "kit/activation_backward.py's threshold_backward"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "ember._C",
    "ember's compiled hot path (issue #31); EMBER_PURE_PYTHON=1 runs the Python reference.",
    -1, methods,
};

PyMODINIT_FUNC PyInit__C(void)
{
    if (tensors_init_numpy() < 0)
        return NULL;
    if (PyType_Ready(&MasksDescrType) < 0 || PyType_Ready(&OpBaseType) < 0 ||
        PyType_Ready(&FormulaRecorderType) < 0 || PyType_Ready(&UfuncKernelType) < 0 ||
        PyType_Ready(&ApiFunctionType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    PyObject *masks = PyType_GenericNew(&MasksDescrType, NULL, NULL);
    if (masks == NULL || PyModule_AddObject(m, "masks_descriptor", masks) < 0)
        goto fail;
    Py_INCREF(&OpBaseType);
    if (PyModule_AddObject(m, "OpBase", (PyObject *)&OpBaseType) < 0)
        goto fail;
    Py_INCREF(&ApiFunctionType);
    if (PyModule_AddObject(m, "ApiFunction", (PyObject *)&ApiFunctionType) < 0)
        goto fail;
    Py_INCREF(&UfuncKernelType);
    if (PyModule_AddObject(m, "UfuncKernel", (PyObject *)&UfuncKernelType) < 0)
        goto fail;
    Py_INCREF(&FormulaRecorderType);
    if (PyModule_AddObject(m, "FormulaRecorder", (PyObject *)&FormulaRecorderType) < 0)
        goto fail;
    return m;
fail:
    Py_DECREF(m);
    return NULL;
}
