/* The elementwise kernels' common case on the CPU backend: operands that are already numpy
 * arrays of the compute dtype (or Python scalars a float op takes as they are), too small for
 * the thread pool: the ufunc with floating-point warnings off, its result wrapped.
 *
 * Python reference: ember/kit/elementwise.py — binary(), add_sub(), unary() and div(), which a
 * UfuncKernel calls (its `fallback`) for every other case: dtype conversions, bfloat16, integer
 * rules, alpha != 1, large arrays split over threads, a tensor without its numpy view yet.
 */
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#define NO_IMPORT_ARRAY
#define PY_ARRAY_UNIQUE_SYMBOL ember_ARRAY_API
#include "ember_c.h"
#include <numpy/arrayobject.h>

enum { K_BINARY = 0, K_ADD_SUB = 1, K_UNARY = 2, K_DIV = 3 };

typedef struct {
    PyObject_HEAD
    PyObject *f, *out, *fallback, *wrap, *name;
    Py_ssize_t min_parallel;
    int kind;
} UfuncKernel;

static inline int same_dtype(PyArrayObject *a, PyArray_Descr *dt)
{
    return PyArray_DESCR(a) == dt || PyArray_EquivTypes(PyArray_DESCR(a), dt);
}

/* an operand as binary()'s operand() leaves it, or NULL: take the Python path */
static PyObject *operand(UfuncKernel *k, PyObject *x, PyArray_Descr *dt, PyObject **device)
{
    if (is_tensor(x)) {
        PyObject *a = SLOT(x, OFF.t_native);
        if (a == NULL || Py_TYPE(a) != &PyArray_Type || !same_dtype((PyArrayObject *)a, dt) ||
            PyArray_SIZE((PyArrayObject *)a) >= k->min_parallel)
            return NULL;
        if (*device == NULL)
            *device = SLOT(x, OFF.t_device);
        return a;
    }
    /* a float op takes a Python number as it is (weakly typed); float16 ones go to Python,
     * where mul and div compute in float32 with the number's full value as torch does */
    if ((PyFloat_CheckExact(x) || PyLong_CheckExact(x)) && dt->kind == 'f' &&
        dt->type_num != NPY_HALF)
        return x;
    return NULL;
}

static PyObject *kernel_call(PyObject *self_, PyObject *args, PyObject *kwargs)
{
    UfuncKernel *k = (UfuncKernel *)self_;
    Py_ssize_t n = PyTuple_GET_SIZE(args), want = k->kind == K_BINARY ? 3 :
                                                 k->kind == K_UNARY ? 2 : 4;
    PyObject *stack[3], *device = NULL, *r, *compute, *npdt;
    PyArray_Descr *dt;

    if ((kwargs != NULL && PyDict_GET_SIZE(kwargs)) || n != want)
        goto python;
    compute = PyTuple_GET_ITEM(args, n - 1);
    if (Py_TYPE(compute) != DtypeType)
        goto python;
    npdt = SLOT(compute, OFF.dt_np);
    if (npdt == NULL || !PyArray_DescrCheck(npdt))
        goto python;
    dt = (PyArray_Descr *)npdt;
    if (k->kind == K_ADD_SUB) {
        PyObject *alpha = PyTuple_GET_ITEM(args, 2);
        if (!PyLong_CheckExact(alpha) || PyLong_AsLong(alpha) != 1) {
            PyErr_Clear();
            goto python;
        }
    }
    if (k->kind == K_DIV && PyTuple_GET_ITEM(args, 2) != Py_None)
        goto python;   /* a rounding mode */
    stack[0] = k->f;
    if ((stack[1] = operand(k, PyTuple_GET_ITEM(args, 0), dt, &device)) == NULL)
        goto python;
    if (k->kind != K_UNARY &&
        (stack[2] = operand(k, PyTuple_GET_ITEM(args, 1), dt, &device)) == NULL)
        goto python;
    if (device == NULL)
        goto python;
    r = py_ieee_call(NULL, stack, k->kind == K_UNARY ? 2 : 3);
    if (r == NULL)
        return NULL;
    {
        PyArray_Descr *want_dt = k->out == Py_None ? dt : (PyArray_Descr *)k->out;
        if (Py_TYPE(r) != &PyArray_Type || !same_dtype((PyArrayObject *)r, want_dt)) {
            /* a conversion the Python path makes (result() / asarray): let it, from scratch */
            Py_DECREF(r);
            goto python;
        }
    }
    {
        PyObject *wargs[2] = {r, device};
        PyObject *t = PyObject_Vectorcall(k->wrap, wargs, 2, NULL);
        Py_DECREF(r);
        return t;
    }
python:
    return PyObject_Call(k->fallback, args, kwargs);
}

static int kernel_init(PyObject *self_, PyObject *args, PyObject *kwargs)
{
    UfuncKernel *k = (UfuncKernel *)self_;
    PyObject *f, *out, *fallback, *wrap, *name;
    int kind;
    Py_ssize_t min_parallel;
    if (!PyArg_ParseTuple(args, "iOOOOnU", &kind, &f, &out, &fallback, &wrap, &min_parallel,
                          &name))
        return -1;
    if (kind < K_BINARY || kind > K_DIV || (out != Py_None && !PyArray_DescrCheck(out))) {
        PyErr_SetString(PyExc_ValueError, "UfuncKernel(kind 0-3, f, out dtype or None, "
                                          "fallback, wrap, min_parallel, name)");
        return -1;
    }
    k->kind = kind;
    k->min_parallel = min_parallel;
    Py_INCREF(f); Py_XSETREF(k->f, f);
    Py_INCREF(out); Py_XSETREF(k->out, out);
    Py_INCREF(fallback); Py_XSETREF(k->fallback, fallback);
    Py_INCREF(wrap); Py_XSETREF(k->wrap, wrap);
    Py_INCREF(name); Py_XSETREF(k->name, name);
    return 0;
}

static int kernel_traverse(PyObject *self_, visitproc visit, void *arg)
{
    UfuncKernel *k = (UfuncKernel *)self_;
    Py_VISIT(k->f);
    Py_VISIT(k->fallback);
    Py_VISIT(k->wrap);
    return 0;
}

static int kernel_clear(PyObject *self_)
{
    UfuncKernel *k = (UfuncKernel *)self_;
    Py_CLEAR(k->f);
    Py_CLEAR(k->out);
    Py_CLEAR(k->fallback);
    Py_CLEAR(k->wrap);
    Py_CLEAR(k->name);
    return 0;
}

static void kernel_dealloc(PyObject *self)
{
    PyObject_GC_UnTrack(self);
    kernel_clear(self);
    Py_TYPE(self)->tp_free(self);
}

static PyObject *kernel_repr(PyObject *self)
{
    return PyUnicode_FromFormat("<compiled kernel %U>", ((UfuncKernel *)self)->name);
}

static PyMemberDef kernel_members[] = {
    {"fallback", T_OBJECT, offsetof(UfuncKernel, fallback), READONLY,
     "the Python kernel this one transcribes (and calls for every other case)"},
    {"__name__", T_OBJECT, offsetof(UfuncKernel, name), READONLY, NULL},
    {"__wrapped__", T_OBJECT, offsetof(UfuncKernel, fallback), READONLY,
     "the Python function this one transcribes (for inspect and ember info)"},
    {NULL},
};

PyTypeObject UfuncKernelType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "ember._C.UfuncKernel",
    .tp_basicsize = sizeof(UfuncKernel),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "UfuncKernel(kind, f, out, fallback, wrap, min_parallel, name): kit/elementwise.py's "
              "binary (kind 0), add_sub (1), unary (2) or div (3) kernel for numpy operands, compiled",
    .tp_call = kernel_call,
    .tp_init = kernel_init,
    .tp_new = PyType_GenericNew,
    .tp_traverse = kernel_traverse,
    .tp_clear = kernel_clear,
    .tp_dealloc = kernel_dealloc,
    .tp_repr = kernel_repr,
    .tp_members = kernel_members,
};
