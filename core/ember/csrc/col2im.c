/* im2col and col2im for 2-D convolutions: an image's windows copied out as a convolution's
 * columns, and columns added back into the image they index, one (batch, channel) plane at a
 * time.
 *
 * Python reference for im2col: ember/kit/convolution.py, _columns (a strided window view
 * reshaped to the columns: numpy copies it a row of OW elements at a time through its generic
 * strided loop, ~4x slower on small images). Both copy the same elements.
 *
 * Python reference for col2im: ember/kit/convolution.py, _input_grad's per-offset loop (one
 * numpy add per kernel offset, each over the whole batch). Those adds stream the whole image
 * through memory once per offset, with a strided inner loop; here a plane stays in cache across
 * its offsets.
 * Each element receives its contributions in the reference's order (offset by offset), so both
 * give the same bits. The caller checks the layouts; anything else takes the reference.
 */
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#define NO_IMPORT_ARRAY
#define PY_ARRAY_UNIQUE_SYMBOL ember_ARRAY_API
#include "ember_c.h"
#include <numpy/arrayobject.h>
#include <string.h>

/* acc: (B, C, H, W) C-contiguous; cols: (B, C, KH, KW, OH, OW) at byte strides cs */
#define COL2IM(T)                                                                              \
    static void col2im_##T(npy_intp p0, npy_intp p1, const npy_intp *shape, T *acc,           \
                           const char *cols, const npy_intp *cs, const npy_intp *kout,         \
                           npy_intp sh, npy_intp sw, npy_intp dh, npy_intp dw)                 \
    {                                                                                          \
        npy_intp C = shape[1], H = shape[2], W = shape[3];                                     \
        npy_intp KH = kout[0], KW = kout[1], OH = kout[2], OW = kout[3];                       \
        for (npy_intp p = p0; p < p1; p++) {                                                   \
            npy_intp b = p / C, c = p % C;                                                     \
            {                                                                                  \
                T *plane = acc + (b * C + c) * H * W;                                          \
                const char *src_bc = cols + b * cs[0] + c * cs[1];                             \
                for (npy_intp kh = 0; kh < KH; kh++)                                           \
                    for (npy_intp kw = 0; kw < KW; kw++) {                                     \
                        const char *src = src_bc + kh * cs[2] + kw * cs[3];                    \
                        for (npy_intp oh = 0; oh < OH; oh++) {                                 \
                            T *row = plane + (oh * sh + kh * dh) * W + kw * dw;                \
                            const char *s = src + oh * cs[4];                                  \
                            if (sw == 1 && cs[5] == (npy_intp)sizeof(T)) {                     \
                                const T *v = (const T *)s;                                     \
                                for (npy_intp ow = 0; ow < OW; ow++)                           \
                                    row[ow] += v[ow];                                          \
                            } else {                                                           \
                                for (npy_intp ow = 0; ow < OW; ow++)                           \
                                    row[ow * sw] += *(const T *)(s + ow * cs[5]);              \
                            }                                                                  \
                        }                                                                      \
                    }                                                                          \
            }                                                                                  \
        }                                                                                      \
    }

COL2IM(float)
COL2IM(double)

/* cols: (B, C, KH, KW, OH, OW) at byte strides cs; z: (B, C, H, W) C-contiguous */
#define IM2COL(T)                                                                              \
    static void im2col_##T(npy_intp p0, npy_intp p1, const npy_intp *shape, const T *z,       \
                           char *cols, const npy_intp *cs, const npy_intp *kout, npy_intp sh,  \
                           npy_intp sw, npy_intp dh, npy_intp dw)                              \
    {                                                                                          \
        npy_intp B = shape[0], C = shape[1], H = shape[2], W = shape[3];                       \
        npy_intp KH = kout[0], KW = kout[1], OH = kout[2], OW = kout[3];                       \
        /* planes in the order of the columns' memory, so that threads given neighbouring    \
         * ranges write whole rows of it, not the two halves of a cache line */               \
        int batch_inner = cs[0] < cs[1];                                                       \
        for (npy_intp p = p0; p < p1; p++) {                                                   \
            npy_intp b = batch_inner ? p % B : p / C, c = batch_inner ? p / B : p % C;         \
            {                                                                                  \
                const T *plane = z + (b * C + c) * H * W;                                      \
                char *dst_bc = cols + b * cs[0] + c * cs[1];                                   \
                for (npy_intp kh = 0; kh < KH; kh++)                                           \
                    for (npy_intp kw = 0; kw < KW; kw++) {                                     \
                        char *dst = dst_bc + kh * cs[2] + kw * cs[3];                          \
                        for (npy_intp oh = 0; oh < OH; oh++) {                                 \
                            const T *row = plane + (oh * sh + kh * dh) * W + kw * dw;          \
                            char *d = dst + oh * cs[4];                                        \
                            if (cs[5] == (npy_intp)sizeof(T)) {                                \
                                T *v = (T *)d;                                                 \
                                if (sw == 1 && OW >= 32)                                       \
                                    memcpy(v, row, OW * sizeof(T));                            \
                                else if (sw == 1) /* short rows: a call costs more */          \
                                    for (npy_intp ow = 0; ow < OW; ow++)                       \
                                        v[ow] = row[ow];                                       \
                                else if (sw == 2) /* a constant stride: gcc vectorizes it */    \
                                    for (npy_intp ow = 0; ow < OW; ow++)                       \
                                        v[ow] = row[ow * 2];                                   \
                                else                                                           \
                                    for (npy_intp ow = 0; ow < OW; ow++)                       \
                                        v[ow] = row[ow * sw];                                  \
                            } else {                                                           \
                                for (npy_intp ow = 0; ow < OW; ow++)                           \
                                    *(T *)(d + ow * cs[5]) = row[ow * sw];                     \
                            }                                                                  \
                        }                                                                      \
                    }                                                                          \
            }                                                                                  \
        }                                                                                      \
    }

IM2COL(float)
IM2COL(double)

/* a range of (batch, channel) planes for one thread (threads.c): both directions */
struct planes_job {
    int type, to_columns;
    const npy_intp *shape, *cs, *kout;
    void *image;
    char *cols;
    npy_intp sh, sw, dh, dw;
};

static void planes_range(void *ctx, Py_ssize_t a, Py_ssize_t b)
{
    struct planes_job *j = ctx;
    if (j->to_columns && j->type == NPY_FLOAT32)
        im2col_float(a, b, j->shape, j->image, j->cols, j->cs, j->kout, j->sh, j->sw, j->dh, j->dw);
    else if (j->to_columns)
        im2col_double(a, b, j->shape, j->image, j->cols, j->cs, j->kout, j->sh, j->sw, j->dh,
                      j->dw);
    else if (j->type == NPY_FLOAT32)
        col2im_float(a, b, j->shape, j->image, j->cols, j->cs, j->kout, j->sh, j->sw, j->dh, j->dw);
    else
        col2im_double(a, b, j->shape, j->image, j->cols, j->cs, j->kout, j->sh, j->sw, j->dh,
                      j->dw);
}

static void run_planes(struct planes_job *j)
{
    const npy_intp *k = j->kout;
    npy_intp per_plane = k[0] * k[1] * k[2] * k[3];
    parallel_ranges(j->shape[0] * j->shape[1], PARALLEL_GRAIN / (per_plane + 1) + 1,
                    planes_range, j);
}

/* both directions' calls: (image, columns) for col2im, (columns, image) for im2col
 * (`to_columns`), then stride and dilation. Returns 1 and fills `job` when the arrays are what the loops take (the
 * image C-contiguous, the columns aligned, both float32 or float64, the written one writable,
 * every window inside the image), 0 when they are not (the caller returns False), 2 when
 * there is nothing to do, -1 with an exception set */
static int planes_call(PyObject *const *args, Py_ssize_t nargs, int to_columns,
                       const char *usage, struct planes_job *job)
{
    npy_intp sh, sw, dh, dw;
    if (nargs != 4 || !PyArg_ParseTuple(args[2], "nn", &sh, &sw) ||
        !PyArg_ParseTuple(args[3], "nn", &dh, &dw)) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, usage);
        return -1;
    }
    if (!PyArray_CheckExact(args[0]) || !PyArray_CheckExact(args[1]))
        return 0;
    PyArrayObject *image = (PyArrayObject *)args[to_columns ? 1 : 0],
                  *cols = (PyArrayObject *)args[to_columns ? 0 : 1];
    int type = PyArray_TYPE(image);
    if ((type != NPY_FLOAT32 && type != NPY_FLOAT64) || PyArray_TYPE(cols) != type ||
        PyArray_NDIM(image) != 4 || PyArray_NDIM(cols) != 6 ||
        !PyArray_IS_C_CONTIGUOUS(image) || !PyArray_ISALIGNED(cols) ||
        !PyArray_ISWRITEABLE(to_columns ? cols : image) || sh < 1 || sw < 1 || dh < 1 ||
        dw < 1)
        return 0;
    const npy_intp *shape = PyArray_DIMS(image), *cshape = PyArray_DIMS(cols);
    if (cshape[0] != shape[0] || cshape[1] != shape[1])
        return 0;
    const npy_intp *kout = cshape + 2;     /* KH, KW, OH, OW */
    for (int k = 0; k < 4; k++)
        if (kout[k] < 1)
            return 2;
    if ((kout[2] - 1) * sh + (kout[0] - 1) * dh >= shape[2] ||
        (kout[3] - 1) * sw + (kout[1] - 1) * dw >= shape[3])
        return 0;                          /* a window outside the image: the reference raises */
    *job = (struct planes_job){type, to_columns, shape, PyArray_STRIDES(cols), kout,
                               PyArray_DATA(image), PyArray_BYTES(cols), sh, sw, dh, dw};
    return 1;
}

static PyObject *run_planes_call(PyObject *const *args, Py_ssize_t nargs, int to_columns,
                                 const char *usage)
{
    struct planes_job job;
    int r = planes_call(args, nargs, to_columns, usage, &job);
    if (r < 0)
        return NULL;
    if (r == 0)
        Py_RETURN_FALSE;
    if (r == 1) {
        Py_BEGIN_ALLOW_THREADS
        run_planes(&job);
        Py_END_ALLOW_THREADS
    }
    Py_RETURN_TRUE;
}

/* col2im2d(acc, cols, stride, dilation) -> bool: acc[b, c, oh * sh + kh * dh, ow * sw + kw * dw]
 * += cols[b, c, kh, kw, oh, ow]; True when done, False when the arrays are not what this loop
 * takes */
PyObject *py_col2im2d(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    return run_planes_call(args, nargs, 0, "col2im2d(acc, cols, stride, dilation)");
}

/* im2col2d(cols, z, stride, dilation) -> bool: cols[b, c, kh, kw, oh, ow] =
 * z[b, c, oh * sh + kh * dh, ow * sw + kw * dw]; True when done, False when the arrays are not
 * what this loop takes */
PyObject *py_im2col2d(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    return run_planes_call(args, nargs, 1, "im2col2d(cols, z, stride, dilation)");
}
