/* y += alpha * x in one pass over C-contiguous float32/float64 arrays of one shape: an
 * optimizer's p.add_(buf, alpha=-lr).
 *
 * Python reference: ember/kit/foreach.py add_ (alpha * x formed in 32k-element slices of a
 * scratch buffer, then added: two numpy passes and a third array through the cache). Each
 * element is rounded as there: the product in the dtype (alpha rounded to it first, as numpy
 * takes a Python float with a float32 array), then the sum; ISO C mode keeps gcc from fusing
 * the two into one rounding.
 */
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#define NO_IMPORT_ARRAY
#define PY_ARRAY_UNIQUE_SYMBOL ember_ARRAY_API
#include "ember_c.h"
#include <numpy/arrayobject.h>

struct axpy_job {
    int type;
    char *y;
    const char *x;
    double alpha;
};

static void axpy_range(void *ctx, Py_ssize_t a, Py_ssize_t b)
{
    struct axpy_job *j = ctx;
    if (j->type == NPY_FLOAT32) {
        float *restrict y = (float *)j->y + a;
        const float *restrict x = (const float *)j->x + a;
        float alpha = (float)j->alpha;
        for (npy_intp i = 0; i < b - a; i++) {
            float t = alpha * x[i];
            y[i] = y[i] + t;
        }
    } else {
        double *restrict y = (double *)j->y + a;
        const double *restrict x = (const double *)j->x + a;
        double alpha = j->alpha;
        for (npy_intp i = 0; i < b - a; i++) {
            double t = alpha * x[i];
            y[i] = y[i] + t;
        }
    }
}

/* axpy_(y, x, alpha) -> bool: y += alpha * x; False (nothing written) unless y and x are
 * C-contiguous arrays of one shape and float dtype, y writable and apart from x, and alpha a
 * real Python number */
PyObject *py_axpy_(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "axpy_(y, x, alpha)");
        return NULL;
    }
    if (!PyArray_CheckExact(args[0]) || !PyArray_CheckExact(args[1]) ||
        !(PyFloat_CheckExact(args[2]) || PyLong_CheckExact(args[2])))
        Py_RETURN_FALSE;
    PyArrayObject *y = (PyArrayObject *)args[0], *x = (PyArrayObject *)args[1];
    int type = PyArray_TYPE(y);
    if ((type != NPY_FLOAT32 && type != NPY_FLOAT64) || PyArray_TYPE(x) != type ||
        !PyArray_IS_C_CONTIGUOUS(y) || !PyArray_IS_C_CONTIGUOUS(x) || !PyArray_ISWRITEABLE(y) ||
        !PyArray_SAMESHAPE(y, x))
        Py_RETURN_FALSE;
    npy_intp n = PyArray_SIZE(y);
    char *yd = PyArray_DATA(y);
    const char *xd = PyArray_DATA(x);
    npy_intp bytes = n * PyArray_ITEMSIZE(y);
    if (xd < yd + bytes && yd < xd + bytes)
        Py_RETURN_FALSE;     /* overlapping: the reference's order of reads and writes */
    double alpha = PyFloat_AsDouble(args[2]);
    if (alpha == -1.0 && PyErr_Occurred())
        return NULL;
    struct axpy_job job = {type, yd, xd, alpha};
    Py_BEGIN_ALLOW_THREADS
    parallel_ranges(n, 8 * PARALLEL_GRAIN, axpy_range, &job);
    Py_END_ALLOW_THREADS
    Py_RETURN_TRUE;
}
