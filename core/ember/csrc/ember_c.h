/* ember._C: the compiled hot path (issue #31).
 *
 * Each function here is a transcription of a Python function that stays in the package as the
 * readable reference (named in the comment above it); EMBER_PURE_PYTHON=1 runs that reference
 * instead. The classes stay Python classes with __slots__: the C code reads and writes their
 * slots at the offsets of their member descriptors, looked up once by install(), so a tensor
 * made here is the same object the Python code makes.
 */
#ifndef EMBER_C_H
#define EMBER_C_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

/* a __slots__ member of a Python object: borrowed, NULL when unset */
#define SLOT(o, off) (*(PyObject **)((char *)(o) + (off)))

/* store a new reference in a slot, releasing the old value */
static inline void slot_set(PyObject *o, Py_ssize_t off, PyObject *v)
{
    PyObject *old = SLOT(o, off);
    Py_XINCREF(v);
    SLOT(o, off) = v;
    Py_XDECREF(old);
}

/* offsets of the slots the hot path touches, filled by install() */
typedef struct {
    /* Tensor */
    Py_ssize_t t_storage, t_shape, t_stride, t_offset, t_dtype, t_device, t_ks, t_native, t_ag,
        t_view_base;
    /* Storage */
    Py_ssize_t s_data, s_nbytes, s_device, s_version, s_cache;
    /* device, dtype */
    Py_ssize_t dev_key, dt_category, dt_np;
    /* Op */
    Py_ssize_t op_cache, op_tensor_pos, op_list_pos;
    /* AutogradMeta */
    Py_ssize_t ag_requires_grad, ag_grad_fn, ag_output_nr, ag_grad, ag_hooks, ag_retains_grad,
        ag_acc, ag_base, ag_view_version, ag_post_acc_hooks;
    /* SavedTensor */
    Py_ssize_t sv_data, sv_version, sv_output_nr, sv_origin, sv_hooked;
    /* Node / FormulaNode */
    Py_ssize_t n_next_edges, n_seq, n_x, fn_spec, fn_args, fn_metas, fn_needs, fn_info, fn_result,
        fn_out_meta;
} Offsets;

extern Offsets OFF;

/* the Python classes (strong references, set by install()) */
extern PyTypeObject *TensorType, *StorageType, *AutogradMetaType, *SavedTensorType, *DtypeType;
extern PyObject *DeviceKeyFn;      /* ember.dispatch.keys.device_key */

/* the per-thread dispatch masks (keys.state.masks) */
extern _Thread_local long long tl_include, tl_keep;
extern _Thread_local PyObject *tl_masks;  /* the (include, keep) tuple Python last read/set */
void masks_set(long long include, long long keep);

static inline int is_tensor(PyObject *o)
{
    return Py_TYPE(o) == TensorType || PyType_IsSubtype(Py_TYPE(o), TensorType);
}

int slot_offset(PyObject *cls, const char *name, Py_ssize_t *out);
PyObject *new_object(PyTypeObject *type);

/* threads.c: fn(ctx, start, stop) over [0, n) split into ranges of at least `grain` units,
 * spread over ember's intra-op threads; call without the GIL */
#define PARALLEL_GRAIN 16384   /* elements of work below which a range is not split */
typedef void (*range_fn)(void *ctx, Py_ssize_t start, Py_ssize_t stop);
void parallel_ranges(Py_ssize_t n, Py_ssize_t grain, range_fn fn, void *ctx);
PyObject *py_set_threads(PyObject *self, PyObject *arg);

/* dispatch.c */
extern PyTypeObject OpBaseType;
PyObject *install_dispatch(PyObject *self, PyObject *args);
PyObject *c_op_call(PyObject *op, PyObject *args, PyObject *kwargs);

/* tensors.c */
PyObject *new_tensor(PyObject *const *args, Py_ssize_t nargs);
PyObject *py_new_tensor(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *py_make_tensor(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *py_new_storage(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *py_ieee_call(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *py_lstm_cell_backward(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *py_lstm_cell_gates(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *py_col2im2d(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *py_im2col2d(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *py_max_pool2d(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *py_scatter_rows(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *py_relu(PyObject *self, PyObject *x);
PyObject *py_erf32(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *py_nll_loss(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *py_nll_loss_backward(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *py_axpy_(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *py_threshold_backward(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *py_array_wrapper(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *py_array_native(PyObject *self, PyObject *fallback);
PyObject *install_tensors(PyObject *self, PyObject *args);
PyObject *install_ieee(PyObject *self, PyObject *args);
int tensors_init_numpy(void);

/* kernels.c, api.c */
extern PyTypeObject UfuncKernelType, ApiFunctionType;

/* engine.c */
PyObject *py_run_graph(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *py_dependencies(PyObject *self, PyObject *root_edges);
PyObject *install_engine(PyObject *self, PyObject *args);

/* record.c */
extern PyTypeObject FormulaRecorderType;
PyObject *install_autograd(PyObject *self, PyObject *args);
PyObject *set_saved_hooks(PyObject *self, PyObject *on);
PyObject *collect_edges(PyObject *self, PyObject *const *args, Py_ssize_t nargs);

#endif
