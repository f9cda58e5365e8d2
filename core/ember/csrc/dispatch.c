/* Op.__call__: the key set of the call, the thread's masks, the op's cache, the handler.
 *
 * Python reference: ember/dispatch/dispatcher.py, Op._call_python. This is its typed,
 * keyword-free path (the schema says where tensors may be); calls with keywords, untyped ops
 * (custom ops from a Python signature) and anything unusual go to the reference.
 */
#include "ember_c.h"

static PyObject *call_python;   /* Op._call_python */
static PyObject *str_resolve;

static inline int add_key(PyObject *t, long long *ks)
{
    PyObject *v = SLOT(t, OFF.t_ks);
    if (v == NULL)
        return 1;   /* not set (a half-built tensor): the reference raises properly */
    long long k = PyLong_AsLongLong(v);
    if (k == -1 && PyErr_Occurred())
        return -1;
    *ks |= k;
    return 0;
}

PyObject *c_op_call(PyObject *op, PyObject *args, PyObject *kwargs)
{
    PyObject *pos, *lists, *cache, *key, *handler, *result;
    Py_ssize_t n, i, k;
    long long ks = 0;
    int r;

    if (kwargs != NULL && PyDict_GET_SIZE(kwargs))
        goto slow;
    pos = SLOT(op, OFF.op_tensor_pos);
    if (pos == NULL || !PyTuple_CheckExact(pos))
        goto slow;
    n = PyTuple_GET_SIZE(args);
    for (k = 0; k < PyTuple_GET_SIZE(pos); k++) {
        i = PyLong_AsSsize_t(PyTuple_GET_ITEM(pos, k));
        if (i < n) {
            PyObject *a = PyTuple_GET_ITEM(args, i);
            if (is_tensor(a) && (r = add_key(a, &ks)) != 0) {
                if (r < 0)
                    return NULL;
                goto slow;
            }
        }
    }
    lists = SLOT(op, OFF.op_list_pos);
    if (lists != NULL && PyTuple_CheckExact(lists)) {
        for (k = 0; k < PyTuple_GET_SIZE(lists); k++) {
            i = PyLong_AsSsize_t(PyTuple_GET_ITEM(lists, k));
            if (i >= n)
                continue;
            PyObject *seq = PyTuple_GET_ITEM(args, i);
            if (!PyList_CheckExact(seq) && !PyTuple_CheckExact(seq))
                goto slow;
            for (Py_ssize_t j = 0; j < PySequence_Fast_GET_SIZE(seq); j++) {
                PyObject *x = PySequence_Fast_GET_ITEM(seq, j);
                if (is_tensor(x) && (r = add_key(x, &ks)) != 0) {
                    if (r < 0)
                        return NULL;
                    goto slow;
                }
            }
        }
    }
    ks = (ks | tl_include) & tl_keep;
    cache = SLOT(op, OFF.op_cache);
    if (cache == NULL || !PyDict_CheckExact(cache))
        goto slow;
    key = PyLong_FromLongLong(ks);
    if (key == NULL)
        return NULL;
    handler = PyDict_GetItemWithError(cache, key);
    if (handler != NULL) {
        Py_INCREF(handler);   /* the cache may be cleared while the handler runs */
    } else {
        if (PyErr_Occurred()) {
            Py_DECREF(key);
            return NULL;
        }
        handler = PyObject_CallMethodOneArg(op, str_resolve, key);
        if (handler == NULL) {
            Py_DECREF(key);
            return NULL;
        }
    }
    Py_DECREF(key);
    result = PyObject_Call(handler, args, NULL);
    Py_DECREF(handler);
    return result;

slow: {
        /* Op._call_python(op, *args, **kwargs) */
        Py_ssize_t na = PyTuple_GET_SIZE(args);
        PyObject *small[8];
        PyObject **stack = na + 1 <= 8 ? small : PyMem_Malloc((na + 1) * sizeof(PyObject *));
        if (stack == NULL)
            return PyErr_NoMemory();
        stack[0] = op;
        for (i = 0; i < na; i++)
            stack[i + 1] = PyTuple_GET_ITEM(args, i);
        result = PyObject_VectorcallDict(call_python, stack, na + 1, kwargs);
        if (stack != small)
            PyMem_Free(stack);
        return result;
    }
}

PyTypeObject OpBaseType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "ember._C.OpBase",
    .tp_basicsize = sizeof(PyObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "Op's compiled __call__ (dispatcher.py: Op._call_python is the reference)",
    .tp_call = c_op_call,
    .tp_new = PyType_GenericNew,
};

PyObject *install_dispatch(PyObject *self, PyObject *args)
{
    PyObject *op_cls, *tensor_cls, *py_call;
    if (!PyArg_ParseTuple(args, "OOO", &op_cls, &tensor_cls, &py_call))
        return NULL;
    if (slot_offset(op_cls, "_cache", &OFF.op_cache) < 0 ||
        slot_offset(op_cls, "_tensor_pos", &OFF.op_tensor_pos) < 0 ||
        slot_offset(op_cls, "_list_pos", &OFF.op_list_pos) < 0 ||
        slot_offset(tensor_cls, "_ks", &OFF.t_ks) < 0)
        return NULL;
    Py_INCREF(tensor_cls);
    Py_XSETREF(TensorType, (PyTypeObject *)tensor_cls);
    Py_INCREF(py_call);
    Py_XSETREF(call_python, py_call);
    if (str_resolve == NULL && (str_resolve = PyUnicode_InternFromString("_resolve")) == NULL)
        return NULL;
    Py_RETURN_NONE;
}
