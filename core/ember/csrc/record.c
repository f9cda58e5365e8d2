/* The Autograd key's handler for an op with a derivative formula and no Tensor[] argument:
 * run the op below autograd, then record its backward node.
 *
 * Python reference: ember/autograd/record.py, _formula_handler's handler and, for an op with
 * one differentiable output, what _outputs does with it (the formula's setup, a saved result,
 * a view's base). Several outputs, an output already in a graph and anomaly mode go to the same
 * Python _outputs; calls with keywords go to the Python handler whole.
 */
#include "ember_c.h"

static PyObject *seq_counter;      /* graph._seq */
static PyObject *outputs_fn;       /* record._outputs */
static PyObject *gradient_edge_fn; /* record.gradient_edge */
static PyObject *node_class_fn;    /* nodes.node_class */
static PyObject *complex_error_fn; /* record._complex_error */
static PyObject *anomaly_state;    /* anomaly._local: anomaly.enabled() reads its .on */
static PyObject *str_on;
static long long AG_BIT;
static long COMPLEX_CAT, FLOATING_CAT;

typedef struct {
    PyObject_HEAD
    PyObject *op, *spec, *cls, *slot_idx, *save_pos, *diff_out, *fallback, *name, *setup;
    Py_ssize_t nargs;
    int complex_ok, simple, save_out, is_view;
} Recorder;

static PyObject *ZERO;
/* saved_hooks.in_use > 0 (set_saved_hooks): a saved-tensor hook may apply, so saving is left to
   the Python SavedTensor, which packs through it */
static int saved_hooks_on;

PyObject *set_saved_hooks(PyObject *self, PyObject *on)
{
    int v = PyObject_IsTrue(on);
    if (v < 0)
        return NULL;
    saved_hooks_on = v;
    Py_RETURN_NONE;
}

static long category(PyObject *dtype)
{
    PyObject *c = SLOT(dtype, OFF.dt_category);
    return c == NULL ? -1 : PyLong_AsLong(c);
}

static PyObject *autograd_meta(PyObject *node)
{
    PyObject *m = new_object(AutogradMetaType);
    if (m == NULL)
        return NULL;
    Py_INCREF(Py_True); SLOT(m, OFF.ag_requires_grad) = Py_True;
    Py_INCREF(node); SLOT(m, OFF.ag_grad_fn) = node;
    SLOT(m, OFF.ag_output_nr) = PyLong_FromLong(0);
    Py_INCREF(Py_None); SLOT(m, OFF.ag_grad) = Py_None;
    Py_INCREF(Py_None); SLOT(m, OFF.ag_hooks) = Py_None;
    Py_INCREF(Py_False); SLOT(m, OFF.ag_retains_grad) = Py_False;
    Py_INCREF(Py_None); SLOT(m, OFF.ag_acc) = Py_None;
    Py_INCREF(Py_None); SLOT(m, OFF.ag_base) = Py_None;
    Py_INCREF(Py_None); SLOT(m, OFF.ag_view_version) = Py_None;
    Py_INCREF(Py_None); SLOT(m, OFF.ag_post_acc_hooks) = Py_None;
    return m;
}

/* SavedTensor(t): graph.py's SavedTensor.__init__ with output_nr None */
static PyObject *saved_tensor(PyObject *t)
{
    PyObject *st = SLOT(t, OFF.t_storage), *version, *origin, *s;
    if (saved_hooks_on)
        return PyObject_CallOneArg((PyObject *)SavedTensorType, t);
    if (st == NULL || (version = SLOT(st, OFF.s_version)) == NULL) {
        PyErr_SetString(PyExc_AttributeError, "SavedTensor: a tensor without storage");
        return NULL;
    }
    PyObject *ag = SLOT(t, OFF.t_ag);
    PyObject *fn = (ag == NULL || ag == Py_None) ? NULL : SLOT(ag, OFF.ag_grad_fn);
    if (fn == NULL || fn == Py_None) {
        origin = Py_None;
        Py_INCREF(origin);
    } else {
        origin = PyTuple_Pack(2, fn, SLOT(ag, OFF.ag_output_nr));
        if (origin == NULL)
            return NULL;
    }
    s = new_object(SavedTensorType);
    if (s == NULL) {
        Py_DECREF(origin);
        return NULL;
    }
    Py_INCREF(t); SLOT(s, OFF.sv_data) = t;
    Py_INCREF(version); SLOT(s, OFF.sv_version) = version;
    Py_INCREF(Py_None); SLOT(s, OFF.sv_output_nr) = Py_None;
    SLOT(s, OFF.sv_origin) = origin;
    Py_INCREF(Py_None); SLOT(s, OFF.sv_hooked) = Py_None;
    return s;
}

/* SavedTensor(out, 0): graph.py's SavedTensor.__init__ for an op's own output */
static PyObject *saved_output(PyObject *t)
{
    PyObject *st = SLOT(t, OFF.t_storage), *version, *alias, *s;
    if (saved_hooks_on)
        return PyObject_CallFunctionObjArgs((PyObject *)SavedTensorType, t, ZERO, NULL);
    if (st == NULL || (version = SLOT(st, OFF.s_version)) == NULL) {
        PyErr_SetString(PyExc_AttributeError, "SavedTensor: a tensor without storage");
        return NULL;
    }
    PyObject *targs[7] = {st, SLOT(t, OFF.t_shape), SLOT(t, OFF.t_stride), SLOT(t, OFF.t_offset),
                          SLOT(t, OFF.t_dtype), SLOT(t, OFF.t_device), SLOT(t, OFF.t_native)};
    alias = new_tensor(targs, 7);
    if (alias == NULL)
        return NULL;
    s = new_object(SavedTensorType);
    if (s == NULL) {
        Py_DECREF(alias);
        return NULL;
    }
    SLOT(s, OFF.sv_data) = alias;
    Py_INCREF(version); SLOT(s, OFF.sv_version) = version;
    Py_INCREF(ZERO); SLOT(s, OFF.sv_output_nr) = ZERO;
    Py_INCREF(Py_None); SLOT(s, OFF.sv_origin) = Py_None;
    Py_INCREF(Py_None); SLOT(s, OFF.sv_hooked) = Py_None;
    return s;
}

/* The edge and metadata of one argument, appended to ``edges`` and ``metas``: (node, nr) and
 * (shape, dtype, device) for a tensor that requires grad (returns 1, or 2 when it is complex),
 * else None to both (returns 0). -1 on error. */
static int append_edge(PyObject *x, PyObject *edges, PyObject *metas)
{
    PyObject *ag = is_tensor(x) ? SLOT(x, OFF.t_ag) : NULL;
    if (ag == NULL || ag == Py_None || SLOT(ag, OFF.ag_requires_grad) != Py_True)
        return (PyList_Append(edges, Py_None) < 0 || PyList_Append(metas, Py_None) < 0) ? -1 : 0;
    PyObject *fn = SLOT(ag, OFF.ag_grad_fn), *edge, *meta;
    PyObject *vv = SLOT(ag, OFF.ag_view_version);
    PyObject *acc = SLOT(ag, OFF.ag_acc), *leaf = NULL;
    if (fn != NULL && fn != Py_None && vv == Py_None)
        edge = PyTuple_Pack(2, fn, SLOT(ag, OFF.ag_output_nr));
    else if (fn == Py_None && vv == Py_None && acc != NULL && PyWeakref_Check(acc) &&
             (leaf = PyWeakref_GetObject(acc)) != Py_None)
        edge = PyTuple_Pack(2, leaf, ZERO);   /* a leaf's AccumulateGrad, alive */
    else
        edge = PyObject_CallOneArg(gradient_edge_fn, x);
    if (edge == NULL)
        return -1;
    int failed = PyList_Append(edges, edge) < 0;
    Py_DECREF(edge);
    if (failed)
        return -1;
    PyObject *d = SLOT(x, OFF.t_dtype);
    meta = PyTuple_Pack(3, SLOT(x, OFF.t_shape), d, SLOT(x, OFF.t_device));
    if (meta == NULL)
        return -1;
    failed = PyList_Append(metas, meta) < 0;
    Py_DECREF(meta);
    if (failed)
        return -1;
    long c = category(d);
    if (c == -1 && PyErr_Occurred())
        return -1;
    return c == COMPLEX_CAT ? 2 : 1;
}

/* record.collect(spec, args, slots): (edges, metas) over the tensor arguments, the tensors of
 * Tensor[] slots one by one, or None when none requires grad */
PyObject *collect_edges(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *spec, *call_args = NULL, *slots = NULL, *edges = NULL, *metas = NULL;
    int req = 0, cplx = 0;
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "collect(spec, args, slots) takes 3 arguments");
        return NULL;
    }
    spec = args[0];
    if ((call_args = PySequence_Fast(args[1], "collect: args")) == NULL ||
        (slots = PySequence_Fast(args[2], "collect: slots")) == NULL)
        goto error;
    Py_ssize_t na = PySequence_Fast_GET_SIZE(call_args);
    if ((edges = PyList_New(0)) == NULL || (metas = PyList_New(0)) == NULL)
        goto error;
    for (Py_ssize_t k = 0; k < PySequence_Fast_GET_SIZE(slots); k++) {
        PyObject *slot = PySequence_Fast_GET_ITEM(slots, k);
        if (!PyTuple_Check(slot) || PyTuple_GET_SIZE(slot) != 2) {
            PyErr_SetString(PyExc_TypeError, "collect: a slot is (index, is_list)");
            goto error;
        }
        Py_ssize_t i = PyLong_AsSsize_t(PyTuple_GET_ITEM(slot, 0));
        int is_list = PyObject_IsTrue(PyTuple_GET_ITEM(slot, 1));
        if ((i == -1 && PyErr_Occurred()) || is_list < 0)
            goto error;
        PyObject *a = i < na ? PySequence_Fast_GET_ITEM(call_args, i) : Py_None;
        PyObject *seq = is_list ? PySequence_Fast(a, "collect: a Tensor[] argument") :
                                  PyTuple_Pack(1, a);
        if (seq == NULL)
            goto error;
        for (Py_ssize_t j = 0; j < PySequence_Fast_GET_SIZE(seq); j++) {
            int r = append_edge(PySequence_Fast_GET_ITEM(seq, j), edges, metas);
            if (r < 0) {
                Py_DECREF(seq);
                goto error;
            }
            req |= r > 0;
            cplx |= r == 2;
        }
        Py_DECREF(seq);
    }
    Py_CLEAR(call_args);
    Py_CLEAR(slots);
    if (!req) {
        Py_DECREF(edges);
        Py_DECREF(metas);
        Py_RETURN_NONE;
    }
    if (cplx) {
        PyObject *formula = PyObject_GetAttrString(spec, "formula"), *ok;
        if (formula == NULL)
            goto error;
        ok = PyObject_GetAttrString(formula, "complex_ok");
        Py_DECREF(formula);
        int complex_ok = ok == NULL ? -1 : PyObject_IsTrue(ok);
        Py_XDECREF(ok);
        if (complex_ok < 0)
            goto error;
        if (!complex_ok) {
            PyObject *e = PyObject_CallOneArg(complex_error_fn, spec);
            Py_XDECREF(e);
            goto error;
        }
    }
    PyObject *result = PyTuple_Pack(2, edges, metas);
    Py_DECREF(edges);
    Py_DECREF(metas);
    return result;

error:
    Py_XDECREF(call_args);
    Py_XDECREF(slots);
    Py_XDECREF(edges);
    Py_XDECREF(metas);
    return NULL;
}

static PyObject *recorder_call(PyObject *self_, PyObject *args, PyObject *kwargs)
{
    Recorder *self = (Recorder *)self_;
    PyObject *out, *edges = NULL, *metas = NULL, *needs = NULL, *saved = NULL, *node = NULL;
    PyObject *cls = NULL, *result = NULL;
    Py_ssize_t na, k;
    int req = 0;

    if (kwargs != NULL && PyDict_GET_SIZE(kwargs))
        return PyObject_Call(self->fallback, args, kwargs);

    /* run_below: the op with AUTOGRAD out of this thread's keep mask */
    {
        long long inc = tl_include, keep = tl_keep;
        PyObject *prev = tl_masks;   /* our reference until it goes back */
        tl_masks = NULL;
        tl_keep = keep & ~AG_BIT;
        out = PyObject_Call(self->op, args, NULL);
        tl_include = inc;
        tl_keep = keep;
        Py_XSETREF(tl_masks, prev);
    }
    if (out == NULL)
        return NULL;

    na = PyTuple_GET_SIZE(args);
    edges = PyList_New(0);
    metas = PyList_New(0);
    needs = PyList_New(self->nargs);
    if (edges == NULL || metas == NULL || needs == NULL)
        goto error;
    for (k = 0; k < self->nargs; k++) {
        Py_INCREF(Py_False);
        PyList_SET_ITEM(needs, k, Py_False);
    }
    for (k = 0; k < PyTuple_GET_SIZE(self->slot_idx); k++) {
        Py_ssize_t i = PyLong_AsSsize_t(PyTuple_GET_ITEM(self->slot_idx, k));
        PyObject *x = i < na ? PyTuple_GET_ITEM(args, i) : Py_None;
        int r = append_edge(x, edges, metas);
        if (r < 0)
            goto error;
        if (r > 0) {
            if (i < self->nargs) {
                Py_INCREF(Py_True);
                Py_SETREF(PyList_GET_ITEM(needs, i), Py_True);
            }
            req = 1;
            if (r == 2 && !self->complex_ok) {
                PyObject *e = PyObject_CallOneArg(complex_error_fn, self->spec);
                Py_XDECREF(e);
                goto error;
            }
        }
    }
    if (!req) {
        Py_DECREF(edges);
        Py_DECREF(metas);
        Py_DECREF(needs);
        return out;
    }

    /* the arguments the formula gets: tensors only where saved */
    saved = PySequence_List(args);
    if (saved == NULL)
        goto error;
    for (k = 0; k < PyTuple_GET_SIZE(self->slot_idx); k++) {
        Py_ssize_t i = PyLong_AsSsize_t(PyTuple_GET_ITEM(self->slot_idx, k));
        if (i < na && Py_TYPE(PyList_GET_ITEM(saved, i)) == TensorType) {
            Py_INCREF(Py_None);
            Py_SETREF(PyList_GET_ITEM(saved, i), Py_None);
        }
    }
    for (k = 0; k < PyTuple_GET_SIZE(self->save_pos); k++) {
        PyObject *pair = PyTuple_GET_ITEM(self->save_pos, k);
        Py_ssize_t i = PyLong_AsSsize_t(PyTuple_GET_ITEM(pair, 0));
        PyObject *c = PyTuple_GET_ITEM(pair, 1);
        if (i >= na)
            continue;
        if (c != Py_None) {
            Py_ssize_t ci = PyLong_AsSsize_t(c);
            if (ci >= self->nargs || PyList_GET_ITEM(needs, ci) != Py_True)
                continue;
        }
        PyObject *a = PyTuple_GET_ITEM(args, i);
        if (is_tensor(a)) {
            PyObject *s = saved_tensor(a);
            if (s == NULL)
                goto error;
            Py_SETREF(PyList_GET_ITEM(saved, i), s);
        }
    }

    /* the node: FormulaNode.__init__(edges), then what the handler sets */
    if (self->cls != Py_None) {
        cls = self->cls;
        Py_INCREF(cls);
    } else if ((cls = PyObject_CallFunctionObjArgs(node_class_fn, self->spec, args, NULL)) == NULL) {
        goto error;
    }
    if (!PyType_Check(cls)) {
        PyErr_SetString(PyExc_TypeError, "node_class returned a non-class");
        goto error;
    }
    node = new_object((PyTypeObject *)cls);
    if (node == NULL)
        goto error;
    {
        PyObject *seq = PyIter_Next(seq_counter);
        if (seq == NULL)
            goto error;
        SLOT(node, OFF.n_seq) = seq;
    }
    SLOT(node, OFF.n_next_edges) = edges;
    edges = NULL;
    Py_INCREF(Py_None); SLOT(node, OFF.n_x) = Py_None;
    Py_INCREF(Py_None); SLOT(node, OFF.fn_result) = Py_None;
    Py_INCREF(Py_None); SLOT(node, OFF.fn_out_meta) = Py_None;
    SLOT(node, OFF.fn_metas) = metas;
    metas = NULL;
    Py_INCREF(self->spec); SLOT(node, OFF.fn_spec) = self->spec;
    SLOT(node, OFF.fn_needs) = needs;
    needs = NULL;
    SLOT(node, OFF.fn_args) = saved;
    saved = NULL;

    PyObject *view_src = NULL;   /* a view's input: borrowed from args */
    if (self->is_view && na > 0 && is_tensor(PyTuple_GET_ITEM(args, 0))) {
        PyObject *sag = SLOT(PyTuple_GET_ITEM(args, 0), OFF.t_ag);
        if (sag != NULL && sag != Py_None)
            view_src = PyTuple_GET_ITEM(args, 0);
    }
    if (self->simple && Py_TYPE(out) == TensorType && SLOT(out, OFF.t_ag) == Py_None &&
        category(SLOT(out, OFF.t_dtype)) >= FLOATING_CAT &&
        (!self->is_view || view_src != NULL)) {
        PyObject *on = PyObject_GetAttr(anomaly_state, str_on);
        if (on == NULL)
            goto error;
        int anomaly = PyObject_IsTrue(on);
        Py_DECREF(on);
        if (anomaly < 0)
            goto error;
        if (!anomaly) {
            PyObject *info = Py_None;
            Py_INCREF(info);
            if (self->setup != Py_None && (info = PyObject_Call(self->setup, args, NULL)) == NULL)
                goto error;
            Py_XSETREF(SLOT(node, OFF.fn_info), info);
            /* a view of a temporary inside the op is a new tensor to autograd */
            if (!self->is_view)
                Py_CLEAR(SLOT(out, OFF.t_view_base));
            PyObject *m = autograd_meta(node);
            if (m == NULL)
                goto error;
            if (view_src != NULL) {
                /* its base: the input's base when the input is itself a view, else the input */
                PyObject *sag = SLOT(view_src, OFF.t_ag);
                PyObject *base = SLOT(sag, OFF.ag_view_version) != Py_None ?
                                 SLOT(sag, OFF.ag_base) : view_src;
                PyObject *version = SLOT(SLOT(out, OFF.t_storage), OFF.s_version);
                Py_INCREF(base);
                Py_SETREF(SLOT(m, OFF.ag_base), base);
                Py_INCREF(version);
                Py_SETREF(SLOT(m, OFF.ag_view_version), version);
            }
            Py_SETREF(SLOT(out, OFF.t_ag), m);
            PyObject *ks = SLOT(out, OFF.t_ks);
            long long v = PyLong_AsLongLong(ks);
            if (v == -1 && PyErr_Occurred())
                goto error;
            PyObject *nks = PyLong_FromLongLong(v | AG_BIT);
            if (nks == NULL)
                goto error;
            Py_SETREF(SLOT(out, OFF.t_ks), nks);
            if (self->save_out) {   /* SavedTensor(out, 0): an alias, outside the graph */
                PyObject *r = saved_output(out);
                if (r == NULL)
                    goto error;
                Py_XSETREF(SLOT(node, OFF.fn_result), r);
            }
            Py_DECREF(node);
            Py_DECREF(cls);
            return out;
        }
    }
    result = PyObject_CallFunctionObjArgs(outputs_fn, self->spec, node, args, out, self->diff_out,
                                          NULL);
    Py_DECREF(node);
    Py_DECREF(cls);
    Py_DECREF(out);
    return result;

error:
    Py_XDECREF(out);
    Py_XDECREF(edges);
    Py_XDECREF(metas);
    Py_XDECREF(needs);
    Py_XDECREF(saved);
    Py_XDECREF(node);
    Py_XDECREF(cls);
    return NULL;
}

static int recorder_init(PyObject *self_, PyObject *args, PyObject *kwargs)
{
    Recorder *self = (Recorder *)self_;
    PyObject *op, *spec, *cls, *slot_idx, *save_pos, *diff_out, *fallback, *name, *setup;
    Py_ssize_t nargs;
    int complex_ok, simple, save_out, is_view;
    if (!PyArg_ParseTuple(args, "OOOO!nO!pppO!OUOp", &op, &spec, &cls, &PyTuple_Type, &slot_idx,
                          &nargs, &PyTuple_Type, &save_pos, &complex_ok, &simple, &save_out,
                          &PyTuple_Type, &diff_out, &fallback, &name, &setup, &is_view))
        return -1;
    self->save_out = save_out;
    Py_INCREF(op); Py_XSETREF(self->op, op);
    Py_INCREF(spec); Py_XSETREF(self->spec, spec);
    Py_INCREF(cls); Py_XSETREF(self->cls, cls);
    Py_INCREF(slot_idx); Py_XSETREF(self->slot_idx, slot_idx);
    Py_INCREF(save_pos); Py_XSETREF(self->save_pos, save_pos);
    Py_INCREF(diff_out); Py_XSETREF(self->diff_out, diff_out);
    Py_INCREF(fallback); Py_XSETREF(self->fallback, fallback);
    Py_INCREF(name); Py_XSETREF(self->name, name);
    Py_INCREF(setup); Py_XSETREF(self->setup, setup);
    self->is_view = is_view;
    self->nargs = nargs;
    self->complex_ok = complex_ok;
    self->simple = simple;
    return 0;
}

static int recorder_traverse(PyObject *self_, visitproc visit, void *arg)
{
    Recorder *self = (Recorder *)self_;
    Py_VISIT(self->op);
    Py_VISIT(self->spec);
    Py_VISIT(self->cls);
    Py_VISIT(self->fallback);
    Py_VISIT(self->diff_out);
    Py_VISIT(self->setup);
    return 0;
}

static int recorder_clear(PyObject *self_)
{
    Recorder *self = (Recorder *)self_;
    Py_CLEAR(self->op);
    Py_CLEAR(self->spec);
    Py_CLEAR(self->cls);
    Py_CLEAR(self->slot_idx);
    Py_CLEAR(self->save_pos);
    Py_CLEAR(self->diff_out);
    Py_CLEAR(self->fallback);
    Py_CLEAR(self->name);
    Py_CLEAR(self->setup);
    return 0;
}

static void recorder_dealloc(PyObject *self)
{
    PyObject_GC_UnTrack(self);
    recorder_clear(self);
    Py_TYPE(self)->tp_free(self);
}

static PyObject *recorder_repr(PyObject *self)
{
    return PyUnicode_FromFormat("<compiled autograd handler %U>", ((Recorder *)self)->name);
}

static PyMemberDef recorder_members[] = {
    {"__name__", T_OBJECT, offsetof(Recorder, name), READONLY, NULL},
    {"__wrapped__", T_OBJECT, offsetof(Recorder, fallback), READONLY,
     "the Python function this one transcribes (for inspect and ember info)"},
    {"fallback", T_OBJECT, offsetof(Recorder, fallback), READONLY,
     "the Python handler this one transcribes"},
    {NULL},
};

PyTypeObject FormulaRecorderType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "ember._C.FormulaRecorder",
    .tp_basicsize = sizeof(Recorder),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "record.py's formula handler, compiled",
    .tp_call = recorder_call,
    .tp_init = recorder_init,
    .tp_new = PyType_GenericNew,
    .tp_traverse = recorder_traverse,
    .tp_clear = recorder_clear,
    .tp_dealloc = recorder_dealloc,
    .tp_repr = recorder_repr,
    .tp_members = recorder_members,
};

PyObject *install_autograd(PyObject *self, PyObject *args)
{
    PyObject *meta_cls, *saved_cls, *node_cls, *counter, *outputs, *edge, *ncls, *cerr, *anomaly;
    long long ag;
    long cplx, flt;
    if (!PyArg_ParseTuple(args, "OOOOOOOOOLll", &meta_cls, &saved_cls, &node_cls, &counter,
                          &outputs, &edge, &ncls, &cerr, &anomaly, &ag, &cplx, &flt))
        return NULL;
    if (slot_offset(meta_cls, "requires_grad", &OFF.ag_requires_grad) < 0 ||
        slot_offset(meta_cls, "grad_fn", &OFF.ag_grad_fn) < 0 ||
        slot_offset(meta_cls, "output_nr", &OFF.ag_output_nr) < 0 ||
        slot_offset(meta_cls, "grad", &OFF.ag_grad) < 0 ||
        slot_offset(meta_cls, "hooks", &OFF.ag_hooks) < 0 ||
        slot_offset(meta_cls, "retains_grad", &OFF.ag_retains_grad) < 0 ||
        slot_offset(meta_cls, "acc", &OFF.ag_acc) < 0 ||
        slot_offset(meta_cls, "base", &OFF.ag_base) < 0 ||
        slot_offset(meta_cls, "view_version", &OFF.ag_view_version) < 0 ||
        slot_offset(meta_cls, "post_acc_hooks", &OFF.ag_post_acc_hooks) < 0 ||
        slot_offset(saved_cls, "data", &OFF.sv_data) < 0 ||
        slot_offset(saved_cls, "version", &OFF.sv_version) < 0 ||
        slot_offset(saved_cls, "output_nr", &OFF.sv_output_nr) < 0 ||
        slot_offset(saved_cls, "origin", &OFF.sv_origin) < 0 ||
        slot_offset(saved_cls, "hooked", &OFF.sv_hooked) < 0 ||
        slot_offset(node_cls, "next_edges", &OFF.n_next_edges) < 0 ||
        slot_offset(node_cls, "seq", &OFF.n_seq) < 0 ||
        slot_offset(node_cls, "_x", &OFF.n_x) < 0 ||
        slot_offset(node_cls, "_spec", &OFF.fn_spec) < 0 ||
        slot_offset(node_cls, "_args", &OFF.fn_args) < 0 ||
        slot_offset(node_cls, "_metas", &OFF.fn_metas) < 0 ||
        slot_offset(node_cls, "_needs", &OFF.fn_needs) < 0 ||
        slot_offset(node_cls, "_info", &OFF.fn_info) < 0 ||
        slot_offset(node_cls, "_result", &OFF.fn_result) < 0 ||
        slot_offset(node_cls, "_out_meta", &OFF.fn_out_meta) < 0)
        return NULL;
    /* collect() and the recorders share it: made here, before either can run */
    if (ZERO == NULL && (ZERO = PyLong_FromLong(0)) == NULL)
        return NULL;
    Py_INCREF(meta_cls);
    Py_XSETREF(AutogradMetaType, (PyTypeObject *)meta_cls);
    Py_INCREF(saved_cls);
    Py_XSETREF(SavedTensorType, (PyTypeObject *)saved_cls);
    Py_INCREF(counter); Py_XSETREF(seq_counter, counter);
    Py_INCREF(outputs); Py_XSETREF(outputs_fn, outputs);
    Py_INCREF(edge); Py_XSETREF(gradient_edge_fn, edge);
    Py_INCREF(ncls); Py_XSETREF(node_class_fn, ncls);
    Py_INCREF(cerr); Py_XSETREF(complex_error_fn, cerr);
    Py_INCREF(anomaly); Py_XSETREF(anomaly_state, anomaly);
    if (str_on == NULL && (str_on = PyUnicode_InternFromString("on")) == NULL)
        return NULL;
    AG_BIT = ag;
    COMPLEX_CAT = cplx;
    FLOATING_CAT = flt;
    Py_RETURN_NONE;
}
