/* 2-D max pooling's forward: each window's maximum and the flat plane index of its first
 * maximal element, one pass over each (batch, channel) plane.
 *
 * Python reference: ember/kit/pooling.py, max_pool (one numpy maximum per kernel offset over the
 * padded input, then one compare-and-select pass per offset for the indices: 2 * prod(k) passes
 * over the whole batch). The first element equal to the maximum wins, a NaN is the maximum and
 * the first NaN wins, and padding never does (windows start at their first real element), as
 * in the reference, so both give the same values and indices. The caller checks the layouts;
 * anything else takes the reference.
 */
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#define NO_IMPORT_ARRAY
#define PY_ARRAY_UNIQUE_SYMBOL ember_ARRAY_API
#include "ember_c.h"
#include <numpy/arrayobject.h>

/* geometry: H, W, OH, OW, KH, KW, SH, SW, PH, PW, DH, DW */
#define MAX_POOL(T)                                                                            \
    static int max_pool2d_##T(npy_intp planes, const npy_intp *g, const T *x, T *values,       \
                              npy_int64 *indices)                                              \
    {                                                                                          \
        npy_intp H = g[0], W = g[1], OH = g[2], OW = g[3], KH = g[4], KW = g[5];               \
        npy_intp SH = g[6], SW = g[7], PH = g[8], PW = g[9], DH = g[10], DW = g[11];           \
        for (npy_intp p = 0; p < planes; p++) {                                                \
            const T *in = x + p * H * W;                                                       \
            T *vo = values + p * OH * OW;                                                      \
            npy_int64 *io = indices + p * OH * OW;                                             \
            for (npy_intp oh = 0; oh < OH; oh++)                                               \
                for (npy_intp ow = 0; ow < OW; ow++) {                                         \
                    npy_intp best = -1;                                                        \
                    T top = 0;                                                                 \
                    for (npy_intp kh = 0; kh < KH; kh++) {                                     \
                        npy_intp h = oh * SH - PH + kh * DH;                                   \
                        if (h < 0 || h >= H)                                                   \
                            continue;                                                          \
                        for (npy_intp kw = 0; kw < KW; kw++) {                                 \
                            npy_intp w = ow * SW - PW + kw * DW;                               \
                            if (w < 0 || w >= W)                                               \
                                continue;                                                      \
                            T v = in[h * W + w];                                               \
                            if (best < 0 || v > top || (v != v && top == top)) {               \
                                top = v;                                                       \
                                best = h * W + w;                                              \
                            }                                                                  \
                        }                                                                      \
                    }                                                                          \
                    if (best < 0)                                                              \
                        return 0; /* a window of padding only: the reference decides */       \
                    vo[oh * OW + ow] = top;                                                    \
                    io[oh * OW + ow] = best;                                                   \
                }                                                                              \
        }                                                                                      \
        return 1;                                                                              \
    }

MAX_POOL(float)
MAX_POOL(double)

static int c_array(PyObject *o, int type, int ndim)
{
    if (!PyArray_CheckExact(o))
        return 0;
    PyArrayObject *a = (PyArrayObject *)o;
    return PyArray_TYPE(a) == type && PyArray_NDIM(a) == ndim && PyArray_IS_C_CONTIGUOUS(a);
}

/* max_pool2d(x, values, indices, kernel, stride, padding, dilation) -> bool: fills values and
 * indices (N, C, OH, OW); True when done, False when the arrays are not what this loop takes
 * (C-contiguous float32/float64 x and values of one dtype, int64 indices, every window holding
 * at least one element of x; the outputs are then partly written and the caller discards them) */
PyObject *py_max_pool2d(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    npy_intp g[12];
    if (nargs != 7 || !PyArg_ParseTuple(args[3], "nn", &g[4], &g[5]) ||
        !PyArg_ParseTuple(args[4], "nn", &g[6], &g[7]) ||
        !PyArg_ParseTuple(args[5], "nn", &g[8], &g[9]) ||
        !PyArg_ParseTuple(args[6], "nn", &g[10], &g[11])) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError,
                            "max_pool2d(x, values, indices, kernel, stride, padding, dilation)");
        return NULL;
    }
    if (!PyArray_CheckExact(args[0]))
        Py_RETURN_FALSE;
    int type = PyArray_TYPE((PyArrayObject *)args[0]);
    if ((type != NPY_FLOAT32 && type != NPY_FLOAT64) || !c_array(args[0], type, 4) ||
        !c_array(args[1], type, 4) || !c_array(args[2], NPY_INT64, 4) ||
        !PyArray_ISWRITEABLE((PyArrayObject *)args[1]) ||
        !PyArray_ISWRITEABLE((PyArrayObject *)args[2]))
        Py_RETURN_FALSE;
    PyArrayObject *x = (PyArrayObject *)args[0], *values = (PyArrayObject *)args[1],
                  *indices = (PyArrayObject *)args[2];
    const npy_intp *xs = PyArray_DIMS(x), *vs = PyArray_DIMS(values);
    if (!PyArray_SAMESHAPE(values, indices) || vs[0] != xs[0] || vs[1] != xs[1])
        Py_RETURN_FALSE;
    g[0] = xs[2]; g[1] = xs[3]; g[2] = vs[2]; g[3] = vs[3];
    for (int k = 4; k < 12; k++)
        if (g[k] < (k >= 8 && k < 10 ? 0 : 1))
            Py_RETURN_FALSE;
    npy_intp planes = xs[0] * xs[1];
    int done;
    Py_BEGIN_ALLOW_THREADS
    if (type == NPY_FLOAT32)
        done = max_pool2d_float(planes, g, (const float *)PyArray_DATA(x),
                                (float *)PyArray_DATA(values), (npy_int64 *)PyArray_DATA(indices));
    else
        done = max_pool2d_double(planes, g, (const double *)PyArray_DATA(x),
                                 (double *)PyArray_DATA(values),
                                 (npy_int64 *)PyArray_DATA(indices));
    Py_END_ALLOW_THREADS
    return PyBool_FromLong(done);
}
