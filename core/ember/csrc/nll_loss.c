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

/* the arrays this loop takes: x (N, C) C-contiguous float32/float64, t (N,) int64, w None or
 * (C,) of x's dtype, both C-contiguous; the type number, or -1 */
static int nll_operands(PyObject *x, PyObject *t, PyObject *w)
{
    if (!PyArray_CheckExact(x) || !PyArray_CheckExact(t))
        return -1;
    PyArrayObject *a = (PyArrayObject *)x, *b = (PyArrayObject *)t;
    int type = PyArray_TYPE(a);
    if ((type != NPY_FLOAT32 && type != NPY_FLOAT64) || PyArray_NDIM(a) != 2 ||
        !PyArray_IS_C_CONTIGUOUS(a) || PyArray_TYPE(b) != NPY_INT64 || PyArray_NDIM(b) != 1 ||
        !PyArray_IS_C_CONTIGUOUS(b) || PyArray_DIM(b, 0) != PyArray_DIM(a, 0))
        return -1;
    if (w != Py_None) {
        if (!PyArray_CheckExact(w))
            return -1;
        PyArrayObject *c = (PyArrayObject *)w;
        if (PyArray_TYPE(c) != type || PyArray_NDIM(c) != 1 || !PyArray_IS_C_CONTIGUOUS(c) ||
            PyArray_DIM(c, 0) != PyArray_DIM(a, 1))
            return -1;
    }
    return type;
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
    long reduction = PyLong_AsLong(args[3]);
    long long ignore = PyLong_AsLongLong(args[4]);
    if (PyErr_Occurred())
        return NULL;
    int type = nll_operands(args[0], args[1], args[2]);
    if (type < 0 || (reduction != 1 && reduction != 2))
        Py_RETURN_NONE;
    PyArrayObject *x = (PyArrayObject *)args[0];
    npy_intp N = PyArray_DIM(x, 0), C = PyArray_DIM(x, 1);
    const npy_int64 *t = PyArray_DATA((PyArrayObject *)args[1]);
    const void *w = args[2] == Py_None ? NULL : PyArray_DATA((PyArrayObject *)args[2]);
    double loss, total;
    int bad;
    if (type == NPY_FLOAT32) {
        float l, tw;
        bad = nll_forward_float(N, C, PyArray_DATA(x), t, w, ignore, &l, &tw);
        if (reduction == 1)
            l = l / tw;
        loss = l;
        total = tw;
    } else {
        double l, tw;
        bad = nll_forward_double(N, C, PyArray_DATA(x), t, w, ignore, &l, &tw);
        if (reduction == 1)
            l = l / tw;
        loss = l;
        total = tw;
    }
    if (bad)
        Py_RETURN_NONE;
    PyObject *a = scalar_array(type, loss), *b = scalar_array(type, total);
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
    long reduction = PyLong_AsLong(args[4]);
    long long ignore = PyLong_AsLongLong(args[5]);
    if (PyErr_Occurred())
        return NULL;
    int type = nll_operands(args[1], args[2], args[3]);
    if (type < 0 || (reduction != 1 && reduction != 2))
        Py_RETURN_NONE;
    for (int i = 0; i < 7; i += 6)
        if (!PyArray_CheckExact(args[i]) || PyArray_NDIM((PyArrayObject *)args[i]) != 0 ||
            PyArray_TYPE((PyArrayObject *)args[i]) != type)
            Py_RETURN_NONE;
    PyArrayObject *x = (PyArrayObject *)args[1];
    npy_intp N = PyArray_DIM(x, 0), C = PyArray_DIM(x, 1);
    PyObject *out = PyArray_ZEROS(2, PyArray_DIMS(x), type, 0);
    if (out == NULL)
        return NULL;
    const npy_int64 *t = PyArray_DATA((PyArrayObject *)args[2]);
    const void *w = args[3] == Py_None ? NULL : PyArray_DATA((PyArrayObject *)args[3]);
    void *g = PyArray_DATA((PyArrayObject *)args[0]), *tw = PyArray_DATA((PyArrayObject *)args[6]);
    int bad;
    /* torch's order: -(g / total) for a mean, then times the class weight */
    if (type == NPY_FLOAT32) {
        float v = reduction == 1 ? *(float *)g / *(float *)tw : *(float *)g;
        bad = nll_backward_float(N, C, t, w, ignore, -v, PyArray_DATA((PyArrayObject *)out));
    } else {
        double v = reduction == 1 ? *(double *)g / *(double *)tw : *(double *)g;
        bad = nll_backward_double(N, C, t, w, ignore, -v, PyArray_DATA((PyArrayObject *)out));
    }
    if (bad) {
        Py_DECREF(out);
        Py_RETURN_NONE;
    }
    return out;
}
