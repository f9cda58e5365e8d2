/* nll_loss over (N, C) float32/float64 log-probabilities and int64 targets, reduced by mean or
 * sum, and its backward: one pass over the rows each.
 *
 * Python reference: ember/kit/loss.py nll_loss_forward / nll_loss_backward (a fancy-index read
 * of each row's target column, numpy's pairwise sums: about fifteen numpy calls, 17 us at
 * 32x10 where torch takes 2). The sums here are PyTorch's: its CPU kernel's cascade of partial
 * sums (aten/src/ATen/native/LossNLL.cpp), so the loss has torch's bits; the reference's
 * pairwise sums may differ from them in the last place. Rows whose target is ignore_index add
 * nothing and get a zero gradient, as in torch; a target outside [0, C) makes these return
 * None so that the reference raises its error.
 */
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#define NO_IMPORT_ARRAY
#define PY_ARRAY_UNIQUE_SYMBOL ember_ARRAY_API
#include "ember_c.h"
#include <numpy/arrayobject.h>

#define LEVELS 8   /* torch's cascade_sum_num_levels */

static npy_intp ceil_log2(npy_intp n)
{
    npy_intp r = 0;
    while (((npy_intp)1 << r) < n)
        r++;
    return r;
}

/* the forward's two sums; 0, or -1 when a target is out of range */
#define NLL_FORWARD(T)                                                                         \
    static int nll_forward_##T(npy_intp N, npy_intp C, const T *x, const npy_int64 *t,         \
                               const T *w, npy_int64 ignore, T *loss, T *total)                \
    {                                                                                          \
        npy_intp power = ceil_log2(N) / LEVELS;                                                \
        power = power > 4 ? power : 4;                                                         \
        npy_intp mask0 = ((npy_intp)1 << power) - 1, ignored = 0;                              \
        T wsum[LEVELS] = {0}, lsum[LEVELS] = {0};                                              \
        for (npy_intp b = 0; b < N; b++) {                                                     \
            npy_int64 k = t[b];                                                                \
            if (k == ignore) {                                                                 \
                ignored++;                                                                     \
                continue;                                                                      \
            }                                                                                  \
            if (k < 0 || k >= C)                                                               \
                return -1;                                                                     \
            T v = x[b * C + k];                                                                \
            if (w != NULL) {                                                                   \
                wsum[0] += w[k];                                                               \
                lsum[0] -= v * w[k];                                                           \
            } else                                                                             \
                lsum[0] -= v;                                                                  \
            for (int j = 0; j + 1 < LEVELS; j++) {                                             \
                if ((b & (mask0 << (j * power))) != 0)                                         \
                    break;                                                                     \
                wsum[j + 1] += wsum[j];                                                        \
                lsum[j + 1] += lsum[j];                                                        \
                wsum[j] = 0;                                                                   \
                lsum[j] = 0;                                                                   \
            }                                                                                  \
        }                                                                                      \
        T tw = 0, l = 0;                                                                       \
        if (w != NULL)                                                                         \
            for (int j = 0; j < LEVELS; j++)                                                   \
                tw += wsum[j];                                                                 \
        else                                                                                   \
            tw = (T)(N - ignored);                                                             \
        for (int j = 0; j < LEVELS; j++)                                                       \
            l += lsum[j];                                                                      \
        *loss = l;                                                                             \
        *total = tw;                                                                           \
        return 0;                                                                              \
    }                                                                                          \
                                                                                               \
    /* g: the loss's gradient (already divided by the total weight for a mean) */              \
    static int nll_backward_##T(npy_intp N, npy_intp C, const npy_int64 *t, const T *w,        \
                                npy_int64 ignore, T g, T *out)                                 \
    {                                                                                          \
        for (npy_intp b = 0; b < N; b++) {                                                     \
            npy_int64 k = t[b];                                                                \
            if (k == ignore)                                                                   \
                continue;                                                                      \
            if (k < 0 || k >= C)                                                               \
                return -1;                                                                     \
            out[b * C + k] = w != NULL ? w[k] * g : g;                                         \
        }                                                                                      \
        return 0;                                                                              \
    }

NLL_FORWARD(float)
NLL_FORWARD(double)

/* what both entry points read: (x, t, w) at ops, then reduction and ignore_index */
struct nll_call {
    int type;                     /* x's dtype */
    npy_intp N, C;
    PyArrayObject *x;
    const npy_int64 *t;
    const void *w;                /* NULL: no class weights */
    long reduction;
    long long ignore;
};

/* 1 and `c` filled when the arrays are what these loops take (x (N, C) C-contiguous
 * float32/float64, t (N,) int64, w None or (C,) of x's dtype, both C-contiguous) and the
 * reduction is mean or sum; 0 when they are not (the caller returns None); -1 with an
 * exception set */
static int nll_parse(PyObject *const *ops, PyObject *reduction, PyObject *ignore,
                     struct nll_call *c)
{
    c->reduction = PyLong_AsLong(reduction);
    c->ignore = PyLong_AsLongLong(ignore);
    if (PyErr_Occurred())
        return -1;
    PyObject *x = ops[0], *t = ops[1], *w = ops[2];
    if (!PyArray_CheckExact(x) || !PyArray_CheckExact(t) ||
        (c->reduction != 1 && c->reduction != 2))
        return 0;
    PyArrayObject *a = (PyArrayObject *)x, *b = (PyArrayObject *)t;
    int type = PyArray_TYPE(a);
    if ((type != NPY_FLOAT32 && type != NPY_FLOAT64) || PyArray_NDIM(a) != 2 ||
        !PyArray_IS_C_CONTIGUOUS(a) || PyArray_TYPE(b) != NPY_INT64 || PyArray_NDIM(b) != 1 ||
        !PyArray_IS_C_CONTIGUOUS(b) || PyArray_DIM(b, 0) != PyArray_DIM(a, 0))
        return 0;
    if (w != Py_None) {
        if (!PyArray_CheckExact(w))
            return 0;
        PyArrayObject *cw = (PyArrayObject *)w;
        if (PyArray_TYPE(cw) != type || PyArray_NDIM(cw) != 1 ||
            !PyArray_IS_C_CONTIGUOUS(cw) || PyArray_DIM(cw, 0) != PyArray_DIM(a, 1))
            return 0;
    }
    c->type = type;
    c->x = a;
    c->N = PyArray_DIM(a, 0);
    c->C = PyArray_DIM(a, 1);
    c->t = PyArray_DATA(b);
    c->w = w == Py_None ? NULL : PyArray_DATA((PyArrayObject *)w);
    return 1;
}

static PyObject *scalar_array(int type, double v)
{
    PyObject *r = PyArray_SimpleNew(0, NULL, type);
    if (r == NULL)
        return NULL;
    if (type == NPY_FLOAT32)
        *(float *)PyArray_DATA((PyArrayObject *)r) = (float)v;
    else
        *(double *)PyArray_DATA((PyArrayObject *)r) = v;
    return r;
}

/* nll_loss(x, t, w, reduction, ignore_index) -> (loss, total_weight) 0-d arrays, or None */
PyObject *py_nll_loss(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "nll_loss(x, t, w, reduction, ignore_index)");
        return NULL;
    }
    struct nll_call c;
    int ok = nll_parse(args, args[3], args[4], &c);
    if (ok <= 0) {
        if (ok < 0)
            return NULL;
        Py_RETURN_NONE;
    }
    double loss, total;
    int bad;
    if (c.type == NPY_FLOAT32) {
        float l, tw;
        bad = nll_forward_float(c.N, c.C, PyArray_DATA(c.x), c.t, c.w, c.ignore, &l, &tw);
        loss = c.reduction == 1 ? l / tw : l;   /* in float: torch's rounding */
        total = tw;
    } else {
        double l, tw;
        bad = nll_forward_double(c.N, c.C, PyArray_DATA(c.x), c.t, c.w, c.ignore, &l, &tw);
        loss = c.reduction == 1 ? l / tw : l;
        total = tw;
    }
    if (bad)
        Py_RETURN_NONE;
    PyObject *a = scalar_array(c.type, loss), *b = scalar_array(c.type, total);
    if (a == NULL || b == NULL) {
        Py_XDECREF(a);
        Py_XDECREF(b);
        return NULL;
    }
    return Py_BuildValue("(NN)", a, b);
}

/* nll_loss_backward(g, x, t, w, reduction, ignore_index, total_weight) -> a new (N, C) array
 * of x's dtype, or None; g and total_weight are 0-d arrays of x's dtype */
PyObject *py_nll_loss_backward(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 7) {
        PyErr_SetString(PyExc_TypeError,
                        "nll_loss_backward(g, x, t, w, reduction, ignore_index, total_weight)");
        return NULL;
    }
    struct nll_call c;
    int ok = nll_parse(args + 1, args[4], args[5], &c);
    if (ok <= 0) {
        if (ok < 0)
            return NULL;
        Py_RETURN_NONE;
    }
    for (int i = 0; i < 7; i += 6)
        if (!PyArray_CheckExact(args[i]) || PyArray_NDIM((PyArrayObject *)args[i]) != 0 ||
            PyArray_TYPE((PyArrayObject *)args[i]) != c.type)
            Py_RETURN_NONE;
    PyObject *out = PyArray_ZEROS(2, PyArray_DIMS(c.x), c.type, 0);
    if (out == NULL)
        return NULL;
    void *g = PyArray_DATA((PyArrayObject *)args[0]), *tw = PyArray_DATA((PyArrayObject *)args[6]);
    void *o = PyArray_DATA((PyArrayObject *)out);
    int bad;
    /* torch's order: -(g / total) for a mean, then times the class weight */
    if (c.type == NPY_FLOAT32) {
        float v = c.reduction == 1 ? *(float *)g / *(float *)tw : *(float *)g;
        bad = nll_backward_float(c.N, c.C, c.t, c.w, c.ignore, -v, o);
    } else {
        double v = c.reduction == 1 ? *(double *)g / *(double *)tw : *(double *)g;
        bad = nll_backward_double(c.N, c.C, c.t, c.w, c.ignore, -v, o);
    }
    if (bad) {
        Py_DECREF(out);
        Py_RETURN_NONE;
    }
    return out;
}
