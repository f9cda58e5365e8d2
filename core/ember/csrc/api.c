/* The elementwise API functions' first test: a tensor and an operand that need no rule (same
 * dtype and shape, or a Python number a float tensor takes), straight to the op.
 *
 * Python references: ember/ops/elementwise/binary.py — the fast branch at the top of add/sub
 * (_make_add_sub's fn), of the arith/cmp/logical functions (_make_binary's fn) and of div;
 * ember/ops/elementwise/unary.py — _make_unary's fn for a floating tensor (op(input, its dtype),
 * what fn's dtype rules give for every unary op but bitwise_not). An ApiFunction calls that
 * Python function (`fallback`, also its __wrapped__) for every other call: keywords, other
 * dtypes, broadcasting, scalars first, errors. It binds like a function (Tensor.exp, +).
 */
#include "ember_c.h"

enum { A_ADD_SUB = 0, A_BINARY = 1, A_DIV = 2, A_UNARY = 3 };

static PyObject *ONE;   /* the int 1 (alpha) */
static long INTEGRAL_CAT = 1, FLOATING_CAT = 2;

typedef struct {
    PyObject_HEAD
    PyObject *op, *fallback, *dict;
    vectorcallfunc vectorcall;
    int kind;
} ApiFunction;

static inline long cat(PyObject *t)
{
    PyObject *c = SLOT(SLOT(t, OFF.t_dtype), OFF.dt_category);
    return c == NULL ? -1 : PyLong_AsLong(c);
}

static inline int same_tensor_kind(PyObject *a, PyObject *b)
{
    /* other is a Tensor of input's dtype and shape */
    if (Py_TYPE(b) != TensorType || SLOT(b, OFF.t_dtype) != SLOT(a, OFF.t_dtype))
        return 0;
    PyObject *sa = SLOT(a, OFF.t_shape), *sb = SLOT(b, OFF.t_shape);
    return sa == sb || PyObject_RichCompareBool(sa, sb, Py_EQ) == 1;
}

static PyObject *call_op(PyObject *op, PyObject **args, Py_ssize_t n)
{
    PyObject *tuple = PyTuple_New(n);
    if (tuple == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_INCREF(args[i]);
        PyTuple_SET_ITEM(tuple, i, args[i]);
    }
    ternaryfunc call = Py_TYPE(op)->tp_call;
    PyObject *r = call == c_op_call ? c_op_call(op, tuple, NULL) : PyObject_Call(op, tuple, NULL);
    Py_DECREF(tuple);
    return r;
}

static PyObject *api_vectorcall(PyObject *self_, PyObject *const *args, size_t nargsf,
                                PyObject *kwnames)
{
    ApiFunction *f = (ApiFunction *)self_;
    Py_ssize_t n = PyVectorcall_NARGS(nargsf);
    if (kwnames != NULL && PyTuple_GET_SIZE(kwnames))
        goto python;
    if (f->kind == A_UNARY) {
        if (n == 1 && Py_TYPE(args[0]) == TensorType && cat(args[0]) == FLOATING_CAT) {
            PyObject *call[2] = {args[0], SLOT(args[0], OFF.t_dtype)};
            return call_op(f->op, call, 2);
        }
        goto python;
    }
    if (n != 2)
        goto python;
    PyObject *input = args[0], *other = args[1];
    if (Py_TYPE(input) == TensorType) {
        long c = cat(input);
        PyObject *d = SLOT(input, OFF.t_dtype);
        int ok;
        if (f->kind == A_DIV)
            ok = c == FLOATING_CAT && (PyFloat_CheckExact(other) || PyLong_CheckExact(other) ||
                                       same_tensor_kind(input, other));
        else
            ok = ((c == INTEGRAL_CAT || c == FLOATING_CAT) && same_tensor_kind(input, other)) ||
                 (PyFloat_CheckExact(other) && c == FLOATING_CAT) ||
                 (PyLong_CheckExact(other) &&
                  (c == FLOATING_CAT || (f->kind == A_ADD_SUB && c == INTEGRAL_CAT)));
        if (!ok)
            goto python;
        if (f->kind == A_BINARY) {
            PyObject *call[3] = {input, other, d};
            return call_op(f->op, call, 3);
        }
        PyObject *call[4] = {input, other, f->kind == A_DIV ? Py_None : ONE, d};
        return call_op(f->op, call, 4);
    }
    if (f->kind != A_BINARY && (PyFloat_CheckExact(input) || PyLong_CheckExact(input)) &&
        Py_TYPE(other) == TensorType && cat(other) == FLOATING_CAT) {
        /* 1 - p, 1 / x */
        PyObject *call[4] = {input, other, f->kind == A_DIV ? Py_None : ONE,
                             SLOT(other, OFF.t_dtype)};
        return call_op(f->op, call, 4);
    }
python:
    return PyObject_Vectorcall(f->fallback, args, nargsf, kwnames);
}

static PyObject *api_descr_get(PyObject *self, PyObject *obj, PyObject *type)
{
    if (obj == NULL || obj == Py_None) {
        Py_INCREF(self);
        return self;
    }
    return PyMethod_New(self, obj);
}

static int api_init(PyObject *self_, PyObject *args, PyObject *kwargs)
{
    ApiFunction *f = (ApiFunction *)self_;
    PyObject *op, *fallback;
    int kind;
    if (!PyArg_ParseTuple(args, "iOO", &kind, &op, &fallback))
        return -1;
    if (kind < A_ADD_SUB || kind > A_UNARY || !PyCallable_Check(fallback)) {
        PyErr_SetString(PyExc_ValueError, "ApiFunction(kind 0-3, op, fallback function)");
        return -1;
    }
    f->kind = kind;
    f->vectorcall = api_vectorcall;
    Py_INCREF(op); Py_XSETREF(f->op, op);
    Py_INCREF(fallback); Py_XSETREF(f->fallback, fallback);
    if (ONE == NULL && (ONE = PyLong_FromLong(1)) == NULL)
        return -1;
    return 0;
}

static PyObject *api_call(PyObject *self, PyObject *args, PyObject *kwargs)
{
    return PyVectorcall_Call(self, args, kwargs);
}

static int api_traverse(PyObject *self_, visitproc visit, void *arg)
{
    ApiFunction *f = (ApiFunction *)self_;
    Py_VISIT(f->op);
    Py_VISIT(f->fallback);
    Py_VISIT(f->dict);
    return 0;
}

static int api_clear(PyObject *self_)
{
    ApiFunction *f = (ApiFunction *)self_;
    Py_CLEAR(f->op);
    Py_CLEAR(f->fallback);
    Py_CLEAR(f->dict);
    return 0;
}

static void api_dealloc(PyObject *self)
{
    PyObject_GC_UnTrack(self);
    api_clear(self);
    Py_TYPE(self)->tp_free(self);
}

static PyObject *api_repr(PyObject *self)
{
    return PyUnicode_FromFormat("<compiled fast path of %R>", ((ApiFunction *)self)->fallback);
}

static PyMemberDef api_members[] = {
    {"fallback", T_OBJECT, offsetof(ApiFunction, fallback), READONLY,
     "the Python function this one starts like (and calls for every other case)"},
    {"op", T_OBJECT, offsetof(ApiFunction, op), READONLY, "the op the common case calls"},
    {"kind", T_INT, offsetof(ApiFunction, kind), READONLY,
     "which API function's first test (_fastpath.API_*)"},
    {NULL},
};

static PyGetSetDef api_getset[] = {
    {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, NULL, NULL},
    {NULL},
};

PyTypeObject ApiFunctionType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "ember._C.ApiFunction",
    .tp_basicsize = sizeof(ApiFunction),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL |
                Py_TPFLAGS_METHOD_DESCRIPTOR,
    .tp_doc = "an elementwise API function's common case, compiled (csrc/api.c)",
    .tp_vectorcall_offset = offsetof(ApiFunction, vectorcall),
    .tp_dictoffset = offsetof(ApiFunction, dict),
    .tp_call = api_call,
    .tp_descr_get = api_descr_get,
    .tp_init = api_init,
    .tp_new = PyType_GenericNew,
    .tp_traverse = api_traverse,
    .tp_clear = api_clear,
    .tp_dealloc = api_dealloc,
    .tp_repr = api_repr,
    .tp_members = api_members,
    .tp_getset = api_getset,
};
