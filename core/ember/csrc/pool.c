/* 2-D max pooling's forward: each window's maximum and the flat plane index of its first
 * maximal element, one pass over each (batch, channel) plane.
 *
 * Python reference: ember/kit/pooling.py, max_pool (one numpy maximum per kernel offset over the
 * padded input, then one compare-and-select pass per offset for the indices: 2 * prod(k) passes
 * over the whole batch). The first element equal to the maximum wins, a NaN is the maximum and
 * the window's last NaN wins (PyTorch's kernel updates on every NaN), and padding never does
 * (windows start at their first real element), as in the reference, so both give the same
 * values and indices. The caller checks the layouts;
 * anything else takes the reference.
 */
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#define NO_IMPORT_ARRAY
#define PY_ARRAY_UNIQUE_SYMBOL ember_ARRAY_API
#include "ember_c.h"
#include <numpy/arrayobject.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define MAX_WINDOW 1024 /* kernel elements the compiled loop takes; larger ones: the reference */

/* geometry: H, W, OH, OW, KH, KW, SH, SW, PH, PW, DH, DW
 *
 * Windows that lie wholly inside a row's columns are computed a kernel offset at a time over
 * the whole output row (compare-and-select without branches: a data-dependent branch per
 * element mispredicts about half the time on random data, ~5 ns an element); windows cut by
 * the padding take the checked loop one window at a time. Both visit a window's elements in
 * the same order (kernel row, then column) and keep the first maximum, so they agree. */
/* the loops built for AVX-512, AVX2 and the baseline, picked at load time; no-trapping-math
 * lets gcc turn the NaN-aware compares into selects (only floating-point exception flags,
 * which nothing reads here, could differ) */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define VECTOR_CLONES                                                                          \
    __attribute__((target_clones("avx512f", "avx2", "default"), optimize("no-trapping-math")))
#else
#define VECTOR_CLONES
#endif

#define MAX_POOL(T, U)                                                                         \
    static int pool_window_##T(const T *in, const npy_intp *g, npy_intp oh, npy_intp ow,       \
                               T *vo, npy_int64 *io)                                           \
    {                                                                                          \
        npy_intp H = g[0], W = g[1], KH = g[4], KW = g[5];                                     \
        npy_intp best = -1;                                                                    \
        T top = 0;                                                                             \
        for (npy_intp kh = 0; kh < KH; kh++) {                                                 \
            npy_intp h = oh * g[6] - g[8] + kh * g[10];                                        \
            if (h < 0 || h >= H)                                                               \
                continue;                                                                      \
            for (npy_intp kw = 0; kw < KW; kw++) {                                             \
                npy_intp w = ow * g[7] - g[9] + kw * g[11];                                    \
                if (w < 0 || w >= W)                                                           \
                    continue;                                                                  \
                T v = in[h * W + w];                                                           \
                if (best < 0 || v > top || v != v) {                                           \
                    top = v;                                                                   \
                    best = h * W + w;                                                          \
                }                                                                              \
            }                                                                                  \
        }                                                                                      \
        if (best < 0)                                                                          \
            return 0; /* a window of padding only: the reference decides */                   \
        *vo = top;                                                                             \
        *io = best;                                                                            \
        return 1;                                                                              \
    }                                                                                          \
                                                                                               \
    /* one kernel offset (number k of the window) over n whole windows: r[j * S] against   \
     * the maxima so far; kr keeps the number of each window's offset that won */            \
    static inline void pool_offset_##T(T *vr, U *kr, const T *r, npy_intp n, npy_intp S,       \
                                       U k)                                                    \
    {                                                                                          \
        if (k == 0) {                                                                          \
            for (npy_intp j = 0; j < n; j++) {                                                 \
                vr[j] = r[j * S];                                                              \
                kr[j] = 0;                                                                     \
            }                                                                                  \
            return;                                                                            \
        }                                                                                      \
        for (npy_intp j = 0; j < n; j++) {                                                     \
            T v = r[j * S], t = vr[j];                                                         \
            int take = (v > t) | (v != v);                                                     \
            vr[j] = take ? v : t;                                                              \
            kr[j] = take ? k : kr[j];                                                          \
        }                                                                                      \
    }                                                                                          \
                                                                                               \
    /* 2x2 windows at stride 2 without padding (most CNNs' pooling): each window's four      \
     * elements compared in registers, in window order; the selects are bit masks, which      \
     * gcc cannot turn back into branches (a mispredicted branch per element costs 3x) */     \
    static inline void keep_##T(T v, npy_int64 at, T *best, npy_int64 *i)                      \
    {                                                                                          \
        int take = (v > *best) | (v != v);                                                     \
        U vb, bb, keep = -(U)take;                                                             \
        npy_uint64 at_mask = -(npy_uint64)take;                                                \
        memcpy(&vb, &v, sizeof vb);                                                            \
        memcpy(&bb, best, sizeof bb);                                                          \
        bb = (vb & keep) | (bb & ~keep);                                                       \
        memcpy(best, &bb, sizeof bb);                                                          \
        *i = (npy_int64)(((npy_uint64)at & at_mask) | ((npy_uint64)*i & ~at_mask));            \
    }                                                                                          \
                                                                                               \
    static void pool_2x2_##T(npy_intp planes, npy_intp H, npy_intp W, npy_intp OH,             \
                             npy_intp OW, const T *x, T *values, npy_int64 *indices)           \
    {                                                                                          \
        for (npy_intp p = 0; p < planes; p++)                                                  \
            for (npy_intp oh = 0; oh < OH; oh++) {                                             \
                const T *r0 = x + (p * H + 2 * oh) * W, *r1 = r0 + W;                           \
                T *vo = values + (p * OH + oh) * OW;                                           \
                npy_int64 *io = indices + (p * OH + oh) * OW, row = 2 * oh * W;                \
                for (npy_intp ow = 0; ow < OW; ow++) {                                         \
                    T best = r0[2 * ow];                                                       \
                    npy_int64 at = row + 2 * ow, i = at;                                       \
                    keep_##T(r0[2 * ow + 1], at + 1, &best, &i);                               \
                    keep_##T(r1[2 * ow], at + W, &best, &i);                                   \
                    keep_##T(r1[2 * ow + 1], at + W + 1, &best, &i);                           \
                    vo[ow] = best;                                                             \
                    io[ow] = i;                                                                \
                }                                                                              \
            }                                                                                  \
    }                                                                                          \
                                                                                               \
    VECTOR_CLONES                                                                              \
    static int max_pool2d_##T(npy_intp planes, const npy_intp *g, const T *x, T *values,       \
                              npy_int64 *indices)                                              \
    {                                                                                          \
        npy_intp H = g[0], W = g[1], OH = g[2], OW = g[3], KH = g[4], KW = g[5];               \
        npy_intp SH = g[6], SW = g[7], PH = g[8], PW = g[9], DH = g[10], DW = g[11];           \
        if (KH == 2 && KW == 2 && SH == 2 && SW == 2 && DH == 1 && DW == 1 && PH == 0 &&       \
            PW == 0 && 2 * OH <= H && 2 * OW <= W) {                                           \
            pool_2x2_##T(planes, H, W, OH, OW, x, values, indices);                            \
            return 1;                                                                          \
        }                                                                                      \
        /* [lo, hi): the output columns whose windows hold no padding */                      \
        npy_intp lo = (PW + SW - 1) / SW, last = W - 1 - (KW - 1) * DW + PW;                   \
        npy_intp hi = last < 0 ? 0 : last / SW + 1;                                            \
        hi = hi < OW ? hi : OW;                                                                \
        lo = lo < hi ? lo : hi;                                                                \
        if (KH * KW > MAX_WINDOW)                                                              \
            return 0;                                                                          \
        U *won = malloc(OW * sizeof(U));                                                       \
        if (won == NULL)                                                                       \
            return 0;                                                                          \
        for (npy_intp p = 0; p < planes; p++) {                                                \
            const T *in = x + p * H * W;                                                       \
            for (npy_intp oh = 0; oh < OH; oh++) {                                             \
                T *vo = values + (p * OH + oh) * OW;                                           \
                npy_int64 *io = indices + (p * OH + oh) * OW;                                  \
                for (npy_intp ow = lo > 0 ? 0 : hi; ow < OW; ow = (ow + 1 == lo ? hi : ow + 1))\
                    if (!pool_window_##T(in, g, oh, ow, vo + ow, io + ow))                     \
                        goto refuse;                                                           \
                if (lo == hi)                                                                  \
                    continue;                                                                  \
                /* kernel rows in the padding are skipped: the offsets that remain are      \
                 * numbered in window order, and offset k's element of window j is at          \
                 * in + lo * SW - PW + j * SW + delta[k] */                                    \
                U k = 0;                                                                       \
                npy_intp delta[MAX_WINDOW];                                                    \
                for (npy_intp kh = 0; kh < KH; kh++) {                                         \
                    npy_intp h = oh * SH - PH + kh * DH;                                       \
                    if (h < 0 || h >= H)                                                       \
                        continue;                                                              \
                    for (npy_intp kw = 0; kw < KW; kw++, k++) {                                \
                        delta[k] = h * W + kw * DW;                                            \
                        const T *r = in + lo * SW - PW + delta[k];                             \
                        if (SW == 1)                                                           \
                            pool_offset_##T(vo + lo, won + lo, r, hi - lo, 1, k);              \
                        else if (SW == 2)                                                      \
                            pool_offset_##T(vo + lo, won + lo, r, hi - lo, 2, k);              \
                        else                                                                   \
                            pool_offset_##T(vo + lo, won + lo, r, hi - lo, SW, k);             \
                    }                                                                          \
                }                                                                              \
                if (k == 0)                                                                    \
                    goto refuse; /* a row of windows in the padding only */                   \
                for (npy_intp ow = lo; ow < hi; ow++)                                          \
                    io[ow] = ow * SW - PW + delta[won[ow]];                                    \
            }                                                                                  \
        }                                                                                      \
        free(won);                                                                             \
        return 1;                                                                              \
    refuse:                                                                                    \
        free(won);                                                                             \
        return 0;                                                                              \
    }

MAX_POOL(float, npy_uint32)
MAX_POOL(double, npy_uint64)

/* a range of planes for one thread (threads.c) */
struct pool_job {
    int type;
    npy_intp g[12];
    const void *x;
    void *values;
    npy_int64 *indices;
    atomic_int done;
};

static void pool_planes(void *ctx, Py_ssize_t a, Py_ssize_t b)
{
    struct pool_job *j = ctx;
    const npy_intp *g = j->g;
    npy_intp in = g[0] * g[1], out = g[2] * g[3];
    int done = j->type == NPY_FLOAT32
                   ? max_pool2d_float(b - a, g, (const float *)j->x + a * in,
                                      (float *)j->values + a * out, j->indices + a * out)
                   : max_pool2d_double(b - a, g, (const double *)j->x + a * in,
                                       (double *)j->values + a * out, j->indices + a * out);
    if (!done)
        atomic_store(&j->done, 0);
}

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
    struct pool_job job = {type, {0}, PyArray_DATA(x), PyArray_DATA(values),
                           PyArray_DATA(indices), 1};
    memcpy(job.g, g, sizeof g);
    npy_intp planes = xs[0] * xs[1];
    Py_BEGIN_ALLOW_THREADS
    parallel_ranges(planes, PARALLEL_GRAIN / (g[0] * g[1] + 1) + 1, pool_planes, &job);
    Py_END_ALLOW_THREADS
    return PyBool_FromLong(atomic_load(&job.done));
}

/* Max pooling's backward when no two windows overlap: each gradient written at its window's
 * index, out[r, idx[r, j]] = g[r, j] (the reference: one numpy put_along_axis). */
#define SCATTER_ROWS(T)                                                                        \
    static int scatter_rows_##T(npy_intp rows, npy_intp plane, npy_intp m, T *out,             \
                                const npy_int64 *idx, const T *g)                              \
    {                                                                                          \
        for (npy_intp r = 0; r < rows; r++, out += plane, idx += m, g += m)                    \
            for (npy_intp j = 0; j < m; j++) {                                                 \
                if (idx[j] < 0 || idx[j] >= plane)                                             \
                    return 0;                                                                  \
                out[idx[j]] = g[j];                                                            \
            }                                                                                  \
        return 1;                                                                              \
    }

SCATTER_ROWS(float)
SCATTER_ROWS(double)

struct scatter_job {
    int type;
    npy_intp plane, m;
    char *out;
    const npy_int64 *idx;
    const char *g;
    atomic_int done;
};

static void scatter_range(void *ctx, Py_ssize_t a, Py_ssize_t b)
{
    struct scatter_job *j = ctx;
    npy_intp P = j->plane, m = j->m;
    int done = j->type == NPY_FLOAT32
                   ? scatter_rows_float(b - a, P, m, (float *)j->out + a * P, j->idx + a * m,
                                        (const float *)j->g + a * m)
                   : scatter_rows_double(b - a, P, m, (double *)j->out + a * P, j->idx + a * m,
                                         (const double *)j->g + a * m);
    if (!done)
        atomic_store(&j->done, 0);
}

/* scatter_rows(out, indices, g) -> bool: out (R, P), indices and g (R, M), all C-contiguous,
 * out and g of one float dtype; False (out partly written) when they are not, or when an index
 * falls outside its row */
PyObject *py_scatter_rows(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "scatter_rows(out, indices, g)");
        return NULL;
    }
    if (!PyArray_CheckExact(args[0]))
        Py_RETURN_FALSE;
    int type = PyArray_TYPE((PyArrayObject *)args[0]);
    if ((type != NPY_FLOAT32 && type != NPY_FLOAT64) || !c_array(args[0], type, 2) ||
        !c_array(args[1], NPY_INT64, 2) || !c_array(args[2], type, 2) ||
        !PyArray_ISWRITEABLE((PyArrayObject *)args[0]))
        Py_RETURN_FALSE;
    PyArrayObject *out = (PyArrayObject *)args[0], *idx = (PyArrayObject *)args[1],
                  *g = (PyArrayObject *)args[2];
    if (!PyArray_SAMESHAPE(idx, g) || PyArray_DIM(out, 0) != PyArray_DIM(g, 0))
        Py_RETURN_FALSE;
    npy_intp rows = PyArray_DIM(out, 0), plane = PyArray_DIM(out, 1), m = PyArray_DIM(g, 1);
    struct scatter_job job = {type, plane, m, PyArray_DATA(out), PyArray_DATA(idx),
                              PyArray_DATA(g), 1};
    Py_BEGIN_ALLOW_THREADS
    parallel_ranges(rows, PARALLEL_GRAIN / (m + 1) + 1, scatter_range, &job);
    Py_END_ALLOW_THREADS
    return PyBool_FromLong(atomic_load(&job.done));
}
