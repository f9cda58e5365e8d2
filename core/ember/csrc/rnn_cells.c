/* The pointwise parts of an LSTM step, each in one pass over the batch.
 *
 * Python references: ember/kit/rnn.py, _lstm_cell_backward (twenty numpy passes over (B, H)
 * arrays, each paying a call; on an RNN's small per-step arrays the calls are the cost) and
 * the gate arithmetic between the two tanh passes of _lstm_cell (five passes). The arithmetic
 * is the reference's, operation by operation in the same order and dtype (C11 does not
 * contract a * b + c into an fma), so both give the same bits. The caller checks the layouts;
 * anything else takes the reference.
 */
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#define NO_IMPORT_ARRAY
#define PY_ARRAY_UNIQUE_SYMBOL ember_ARRAY_API
#include "ember_c.h"
#include <numpy/arrayobject.h>

/* gh, gcy, c: (B, H); ws: (B, 5H) = i, f, g, o, tanh(c'); d: (B, 4H) out; gc: (B, H) out */
#define LSTM_CELL_BACKWARD(T)                                                                    \
    static void lstm_cell_backward_##T(Py_ssize_t B, Py_ssize_t H, const T *gh, const T *gcy,   \
                                       const T *c, const T *ws, T *d, T *gc)                    \
    {                                                                                            \
        for (Py_ssize_t b = 0; b < B; b++) {                                                     \
            const T *restrict i = ws + b * 5 * H, *restrict f = i + H, *restrict g = f + H;      \
            const T *restrict o = g + H, *restrict tc = o + H;                                   \
            const T *restrict ghb = gh + b * H, *restrict gcyb = gcy + b * H;                    \
            const T *restrict cb = c + b * H;                                                    \
            T *restrict di = d + b * 4 * H, *restrict df = di + H, *restrict dg = df + H;        \
            T *restrict dout = dg + H, *restrict s = gc + b * H;                                 \
            /* one loop per output (gcc vectorizes these); the cell gradient s waits in gc */    \
            for (Py_ssize_t j = 0; j < H; j++)                                                   \
                s[j] = (((T)1 - tc[j] * tc[j]) * o[j]) * ghb[j] + gcyb[j];                       \
            for (Py_ssize_t j = 0; j < H; j++)                                                   \
                di[j] = ((s[j] * g[j]) * i[j]) * ((T)1 - i[j]);                                  \
            for (Py_ssize_t j = 0; j < H; j++)                                                   \
                df[j] = ((s[j] * cb[j]) * f[j]) * ((T)1 - f[j]);                                 \
            for (Py_ssize_t j = 0; j < H; j++)                                                   \
                dg[j] = (((T)1 - g[j] * g[j]) * i[j]) * s[j];                                    \
            for (Py_ssize_t j = 0; j < H; j++)                                                   \
                dout[j] = ((ghb[j] * tc[j]) * o[j]) * ((T)1 - o[j]);                             \
            for (Py_ssize_t j = 0; j < H; j++)                                                   \
                s[j] = s[j] * f[j];                                                              \
        }                                                                                        \
    }

LSTM_CELL_BACKWARD(float)
LSTM_CELL_BACKWARD(double)

/* t: (B, 4H) = tanh of the scaled gates; c: (B, H); ws: (B, 5H) out, its first 4H columns =
 * i, f, g, o; cy: (B, H) out = f * c + i * g. sigmoid(x) = 0.5 * tanh(x / 2) + 0.5 for i, f, o;
 * g is tanh itself, scaled by 1 and shifted by 0 as the reference does (-0 + 0 is +0). */
#define LSTM_CELL_GATES(T)                                                                       \
    static void lstm_cell_gates_##T(Py_ssize_t B, Py_ssize_t H, const T *t, const T *c, T *ws,  \
                                    T *cy)                                                       \
    {                                                                                            \
        for (Py_ssize_t b = 0; b < B; b++) {                                                     \
            const T *restrict tb = t + b * 4 * H, *restrict cb = c + b * H;                      \
            T *restrict i = ws + b * 5 * H, *restrict f = i + H, *restrict g = f + H;            \
            T *restrict o = g + H, *restrict cyb = cy + b * H;                                   \
            /* one loop per output: gcc vectorizes these, not one loop writing all five */      \
            for (Py_ssize_t j = 0; j < H; j++)                                                   \
                i[j] = tb[j] * (T)0.5 + (T)0.5;                                                  \
            for (Py_ssize_t j = 0; j < H; j++)                                                   \
                f[j] = tb[H + j] * (T)0.5 + (T)0.5;                                              \
            for (Py_ssize_t j = 0; j < H; j++)                                                   \
                g[j] = tb[2 * H + j] * (T)1 + (T)0;                                              \
            for (Py_ssize_t j = 0; j < H; j++)                                                   \
                o[j] = tb[3 * H + j] * (T)0.5 + (T)0.5;                                          \
            for (Py_ssize_t j = 0; j < H; j++)                                                   \
                cyb[j] = f[j] * cb[j] + i[j] * g[j];                                             \
        }                                                                                        \
    }

LSTM_CELL_GATES(float)
LSTM_CELL_GATES(double)

static int usable(PyObject *o, int type, Py_ssize_t rows, Py_ssize_t cols)
{
    if (!PyArray_CheckExact(o))
        return 0;
    PyArrayObject *a = (PyArrayObject *)o;
    return PyArray_TYPE(a) == type && PyArray_NDIM(a) == 2 && PyArray_IS_C_CONTIGUOUS(a) &&
           PyArray_DIM(a, 0) == rows && PyArray_DIM(a, 1) == cols;
}

/* Whether args[k] are all C-contiguous float32 or float64 arrays of shape (B, widths[k] * H),
 * with (B, H) and the dtype those of the cell state args[cell], and the outputs (the last
 * `outputs` arguments) writeable; sets B, H and type. */
static int cell_layouts(PyObject *const *args, Py_ssize_t n, const int *widths, Py_ssize_t cell,
                        Py_ssize_t outputs, Py_ssize_t *B, Py_ssize_t *H, int *type)
{
    if (!PyArray_CheckExact(args[cell]) || PyArray_NDIM((PyArrayObject *)args[cell]) != 2)
        return 0;
    PyArrayObject *c = (PyArrayObject *)args[cell];
    *B = PyArray_DIM(c, 0), *H = PyArray_DIM(c, 1), *type = PyArray_TYPE(c);
    if (*type != NPY_FLOAT32 && *type != NPY_FLOAT64)
        return 0;
    for (Py_ssize_t k = 0; k < n; k++)
        if (!usable(args[k], *type, *B, widths[k] * *H) ||
            (k >= n - outputs && !PyArray_ISWRITEABLE((PyArrayObject *)args[k])))
            return 0;
    return 1;
}

#define DATA(k, T) ((T *)PyArray_DATA((PyArrayObject *)args[k]))

/* lstm_cell_backward(gh, gcy, c, ws, d, gc) -> bool: True when done, False when the arrays are
 * not all C-contiguous float32 or float64 of matching shapes (the caller runs the reference) */
PyObject *py_lstm_cell_backward(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    static const int widths[] = {1, 1, 1, 5, 4, 1};
    Py_ssize_t B, H;
    int type;
    if (nargs != 6) {
        PyErr_SetString(PyExc_TypeError, "lstm_cell_backward(gh, gcy, c, ws, d, gc)");
        return NULL;
    }
    if (!cell_layouts(args, nargs, widths, 2, 2, &B, &H, &type))
        Py_RETURN_FALSE;
    Py_BEGIN_ALLOW_THREADS
    if (type == NPY_FLOAT32)
        lstm_cell_backward_float(B, H, DATA(0, float), DATA(1, float), DATA(2, float),
                                 DATA(3, float), DATA(4, float), DATA(5, float));
    else
        lstm_cell_backward_double(B, H, DATA(0, double), DATA(1, double), DATA(2, double),
                                  DATA(3, double), DATA(4, double), DATA(5, double));
    Py_END_ALLOW_THREADS
    Py_RETURN_TRUE;
}

/* lstm_cell_gates(t, c, ws, cy) -> bool: True when done, False when the arrays are not all
 * C-contiguous float32 or float64 of matching shapes (the caller runs the reference) */
PyObject *py_lstm_cell_gates(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    static const int widths[] = {4, 1, 5, 1};
    Py_ssize_t B, H;
    int type;
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "lstm_cell_gates(t, c, ws, cy)");
        return NULL;
    }
    if (!cell_layouts(args, nargs, widths, 1, 2, &B, &H, &type))
        Py_RETURN_FALSE;
    Py_BEGIN_ALLOW_THREADS
    if (type == NPY_FLOAT32)
        lstm_cell_gates_float(B, H, DATA(0, float), DATA(1, float), DATA(2, float),
                              DATA(3, float));
    else
        lstm_cell_gates_double(B, H, DATA(0, double), DATA(1, double), DATA(2, double),
                               DATA(3, double));
    Py_END_ALLOW_THREADS
    Py_RETURN_TRUE;
}

#undef DATA
