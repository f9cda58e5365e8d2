/* erf of float32 arrays by Eigen's rational approximation, evaluated in float64 and rounded
 * once: GELU's erf (forward and backward).
 *
 * Python reference: ember/kit/erf32.py _erf_into (a clip, a float64 copy and two Horner
 * evaluations over 32k-element slices: nine numpy passes, 8 ms of nanoGPT's 66 ms step). The
 * same float64 operations in the same order, each rounded apart (ISO C mode: no fused
 * multiply-add), so both give the same bits.
 */
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#define NO_IMPORT_ARRAY
#define PY_ARRAY_UNIQUE_SYMBOL ember_ARRAY_API
#include "ember_c.h"
#include <numpy/arrayobject.h>

/* kit/erf32.py's _P and _Q, highest power first */
static const double P[] = {-2.72614225801306e-10, 2.77068142495902e-08, -2.10102402082508e-06,
                           -5.69250639462346e-05, -7.34990630326855e-04, -2.95459980854025e-03,
                           -1.60960333262415e-02};
static const double Q[] = {-1.45660718464996e-05, -2.13374055278905e-04, -1.68282697438203e-03,
                           -7.37332916720468e-03, -1.42647390514189e-02};

struct erf_job {
    const float *x;
    float *out;
};

/* built for three instruction sets, picked at load time (the extension's baseline is SSE2,
 * where this loop runs 2 doubles at a time: slower than numpy's AVX-512 passes) */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
/* no-trapping-math: lets gcc turn the clip's compares into selects (only the floating-point
 * exception flags could differ, and numpy's callers ignore them here) */
__attribute__((target_clones("avx512f", "avx2", "default"), optimize("no-trapping-math")))
#endif
static void erf_range(void *ctx, Py_ssize_t a, Py_ssize_t b)
{
    struct erf_job *j = ctx;
    const float *restrict x = j->x + a;
    float *restrict out = j->out + a;
    for (npy_intp i = 0; i < b - a; i++) {
        /* np.clip(x, -4, 4): two selects, NaN stays NaN */
        float v = x[i], low = v < -4.0f ? -4.0f : v, clipped = low > 4.0f ? 4.0f : low;
        double c = clipped, x2 = c * c;
        double p = P[0] * x2 + P[1];     /* Horner, one rounding per operation */
        p = p * x2 + P[2];
        p = p * x2 + P[3];
        p = p * x2 + P[4];
        p = p * x2 + P[5];
        p = p * x2 + P[6];
        double q = Q[0] * x2 + Q[1];
        q = q * x2 + Q[2];
        q = q * x2 + Q[3];
        q = q * x2 + Q[4];
        out[i] = (float)(p * c / q);
    }
}

/* erf32(x, out) -> bool: out = erf(x) for C-contiguous float32 arrays of one shape (out may
 * be x); False when they are not */
PyObject *py_erf32(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "erf32(x, out)");
        return NULL;
    }
    if (!PyArray_CheckExact(args[0]) || !PyArray_CheckExact(args[1]))
        Py_RETURN_FALSE;
    PyArrayObject *x = (PyArrayObject *)args[0], *out = (PyArrayObject *)args[1];
    if (PyArray_TYPE(x) != NPY_FLOAT32 || PyArray_TYPE(out) != NPY_FLOAT32 ||
        !PyArray_IS_C_CONTIGUOUS(x) || !PyArray_IS_C_CONTIGUOUS(out) ||
        !PyArray_ISWRITEABLE(out) || !PyArray_SAMESHAPE(x, out))
        Py_RETURN_FALSE;
    struct erf_job job = {PyArray_DATA(x), PyArray_DATA(out)};
    Py_BEGIN_ALLOW_THREADS
    parallel_ranges(PyArray_SIZE(x), PARALLEL_GRAIN, erf_range, &job);
    Py_END_ALLOW_THREADS
    Py_RETURN_TRUE;
}
