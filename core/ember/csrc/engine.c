/* The backward engine's loop for the common case, and the formula nodes' apply/release.
 *
 * Python references: ember/autograd/engine.py — execute()'s while loop (run_graph here, used
 * when nothing is captured, anomaly mode is off and no profiler observes nodes), _add,
 * _Run.route, _dependencies; ember/autograd/nodes.py — FormulaNode.apply, finish and release,
 * for single-output nodes without Tensor[] arguments (others run their Python methods);
 * graph.py — AccumulateGrad.apply (engine.accumulate called directly).
 * A node with hooks or metadata (n._x) goes through the Python helper the engine passes.
 */
#include "ember_c.h"

static PyTypeObject *FormulaNodeType, *AccumulateGradType;
static PyObject *apply_ref, *release_ref;   /* FormulaNode.apply / .release (not overridden) */
static PyObject *accumulate_fn;   /* engine.accumulate: AccumulateGrad.apply's body */
static Py_ssize_t off_acc_variable;
static PyObject *validate_fn, *unpack_list_fn, *str_apply, *str_release, *str_num_outputs,
    *str_unpack, *str_finish;
static Py_ssize_t off_spec_n_out, off_spec_formula, off_spec_slots, off_spec_has_list,
    off_formula_backward, off_run_counts;
static const long long LEAF_FIRST = -(1LL << 62);
static PyObject *ONE_INT;

/* -- the ready queue: a binary heap of (key, order, node), smallest first --------------------- */
/* ties (leaf accumulators) run in the order they became ready, not by address, as in
   engine.py: the same graph then accumulates in the same order every time (ember.compile
   compares two captured steps op by op) */
typedef struct {
    long long key;
    long long order;
    PyObject *node;   /* strong */
} Entry;

typedef struct {
    Entry *e;
    Py_ssize_t n, cap;
    long long next_order;
} Heap;

static inline int less(const Entry *a, const Entry *b)
{
    return a->key < b->key || (a->key == b->key && a->order < b->order);
}

static int heap_push_at(Heap *h, long long key, long long order, PyObject *node);

static int heap_push(Heap *h, long long key, PyObject *node)
{
    return heap_push_at(h, key, h->next_order++, node);
}

static int heap_push_at(Heap *h, long long key, long long order, PyObject *node)
{
    if (order >= h->next_order)
        h->next_order = order + 1;
    if (h->n == h->cap) {
        Py_ssize_t cap = h->cap ? 2 * h->cap : 64;
        Entry *e = PyMem_Realloc(h->e, cap * sizeof(Entry));
        if (e == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        h->e = e;
        h->cap = cap;
    }
    Py_ssize_t i = h->n++;
    Entry x = {key, order, node};
    Py_INCREF(node);
    while (i > 0) {
        Py_ssize_t p = (i - 1) / 2;
        if (!less(&x, &h->e[p]))
            break;
        h->e[i] = h->e[p];
        i = p;
    }
    h->e[i] = x;
    return 0;
}

static PyObject *heap_pop(Heap *h)
{
    PyObject *top = h->e[0].node;
    Entry x = h->e[--h->n];
    Py_ssize_t i = 0;
    for (;;) {
        Py_ssize_t c = 2 * i + 1;
        if (c >= h->n)
            break;
        if (c + 1 < h->n && less(&h->e[c + 1], &h->e[c]))
            c++;
        if (!less(&h->e[c], &x))
            break;
        h->e[i] = h->e[c];
        i = c;
    }
    if (h->n > 0)
        h->e[i] = x;
    return top;   /* the reference the heap held */
}

static void heap_clear(Heap *h)
{
    for (Py_ssize_t i = 0; i < h->n; i++)
        Py_DECREF(h->e[i].node);
    PyMem_Free(h->e);
}

static inline int is_formula_node(PyObject *n)
{
    return PyType_IsSubtype(Py_TYPE(n), FormulaNodeType);
}

static long long node_key(PyObject *n)
{
    if (Py_TYPE(n) == AccumulateGradType)
        return LEAF_FIRST;
    PyObject *seq = SLOT(n, OFF.n_seq);
    long long s = seq == NULL ? 0 : PyLong_AsLongLong(seq);
    return -s;
}

static Py_ssize_t num_outputs(PyObject *n)
{
    if (is_formula_node(n)) {
        PyObject *spec = SLOT(n, OFF.fn_spec);
        PyObject *k = spec == NULL ? NULL : SLOT(spec, off_spec_n_out);
        if (k != NULL)
            return PyLong_AsSsize_t(k);
    }
    PyObject *k = PyObject_GetAttr(n, str_num_outputs);
    if (k == NULL)
        return -1;
    Py_ssize_t v = PyLong_AsSsize_t(k);
    Py_DECREF(k);
    return v;
}

/* _Run.route(g): count one more place gradient g was stored */
static int route(PyObject *run, PyObject *g)
{
    PyObject *counts = SLOT(run, off_run_counts), *key, *e;
    if (counts == NULL || !PyDict_Check(counts)) {
        PyErr_SetString(PyExc_TypeError, "engine: run.counts is not a dict");
        return -1;
    }
    key = PyLong_FromVoidPtr(g);
    if (key == NULL)
        return -1;
    e = PyDict_GetItemWithError(counts, key);
    if (e != NULL && PyList_CheckExact(e) && PyList_GET_SIZE(e) == 2 &&
        PyWeakref_GetObject(PyList_GET_ITEM(e, 1)) == g) {
        PyObject *c = PyNumber_Add(PyList_GET_ITEM(e, 0), ONE_INT);
        Py_DECREF(key);
        if (c == NULL)
            return -1;
        return PyList_SetItem(e, 0, c);
    }
    if (PyErr_Occurred()) {
        Py_DECREF(key);
        return -1;
    }
    PyObject *ref = PyWeakref_NewRef(g, NULL), *one = PyLong_FromLong(1), *entry = NULL;
    int r = -1;
    if (ref != NULL && one != NULL && (entry = PyList_New(2)) != NULL) {
        PyList_SET_ITEM(entry, 0, one);
        PyList_SET_ITEM(entry, 1, ref);
        one = ref = NULL;
        r = PyDict_SetItem(counts, key, entry);
    }
    Py_XDECREF(ref);
    Py_XDECREF(one);
    Py_XDECREF(entry);
    Py_DECREF(key);
    return r;
}

/* engine._add(buffers, n, nr, g, run) */
static int add_grad(PyObject *buffers, PyObject *m, Py_ssize_t nr, PyObject *g, PyObject *run)
{
    PyObject *buf = PyDict_GetItemWithError(buffers, m);
    if (buf == NULL) {
        if (PyErr_Occurred())
            return -1;
        Py_ssize_t k = num_outputs(m);
        if (k < 0 && PyErr_Occurred())
            return -1;
        Py_ssize_t size = k > nr + 1 ? k : nr + 1;
        buf = PyList_New(size);
        if (buf == NULL)
            return -1;
        for (Py_ssize_t i = 0; i < size; i++) {
            Py_INCREF(Py_None);
            PyList_SET_ITEM(buf, i, Py_None);
        }
        int r = PyDict_SetItem(buffers, m, buf);
        Py_DECREF(buf);
        if (r < 0)
            return -1;
    } else {
        while (PyList_GET_SIZE(buf) <= nr)
            if (PyList_Append(buf, Py_None) < 0)
                return -1;
    }
    PyObject *old = PyList_GET_ITEM(buf, nr);
    if (old == Py_None) {
        Py_INCREF(g);
        PyList_SetItem(buf, nr, g);
        return route(run, g);
    }
    PyObject *sum = PyNumber_Add(old, g);
    if (sum == NULL)
        return -1;
    return PyList_SetItem(buf, nr, sum);
}

/* -- FormulaNode.apply for one output and no Tensor[] argument ------------------------------ */
static PyObject *unpack_arg(PyObject *a, PyObject *node)
{
    if (Py_TYPE(a) == SavedTensorType) {
        PyObject *d = SLOT(a, OFF.sv_data), *nr = SLOT(a, OFF.sv_output_nr);
        if (d != NULL && d != Py_None && nr == Py_None) {
            PyObject *st = SLOT(d, OFF.t_storage);
            PyObject *v = st == NULL ? NULL : SLOT(st, OFF.s_version);
            PyObject *want = SLOT(a, OFF.sv_version);
            if (v != NULL && want != NULL && (v == want ||
                                              PyObject_RichCompareBool(v, want, Py_EQ) == 1)) {
                Py_INCREF(d);
                return d;
            }
        }
        /* freed, modified in place, or the node's own output: SavedTensor.unpack decides */
        return PyObject_CallMethodOneArg(a, str_unpack, node);
    }
    if (PyList_CheckExact(a))
        return PyObject_CallFunctionObjArgs(unpack_list_fn, a, node, NULL);
    Py_INCREF(a);
    return a;
}

static PyObject *formula_finish(PyObject *node, PyObject *spec, PyObject *res)
{
    PyObject *slots = SLOT(spec, off_spec_slots), *metas = SLOT(node, OFF.fn_metas);
    PyObject *edges = SLOT(node, OFF.n_next_edges), *seq, *out;
    if (SLOT(spec, off_spec_has_list) != Py_False || !PyList_CheckExact(slots) ||
        !PyList_CheckExact(metas) || !PySequence_Check(edges))
        return PyObject_CallMethodOneArg(node, str_finish, res);
    seq = PySequence_Fast(res, "a backward formula must return a sequence of gradients");
    if (seq == NULL)
        return NULL;
    Py_ssize_t n_res = PySequence_Fast_GET_SIZE(seq), n = PyList_GET_SIZE(slots);
    out = PyList_New(n);
    if (out == NULL) {
        Py_DECREF(seq);
        return NULL;
    }
    for (Py_ssize_t k = 0; k < n; k++) {
        Py_ssize_t i = PyLong_AsSsize_t(PyTuple_GET_ITEM(PyList_GET_ITEM(slots, k), 0));
        PyObject *r = i < n_res ? PySequence_Fast_GET_ITEM(seq, i) : Py_None;
        PyObject *e = PySequence_GetItem(edges, k), *v;
        if (e == NULL)
            goto error;
        int no_edge = e == Py_None;
        Py_DECREF(e);
        if (r == Py_None || no_edge) {
            v = Py_None;
            Py_INCREF(v);
        } else {
            PyObject *m = PyList_GET_ITEM(metas, k);
            if (Py_TYPE(r) == TensorType && PyTuple_Check(m) && PyTuple_GET_SIZE(m) == 3 &&
                SLOT(r, OFF.t_dtype) == PyTuple_GET_ITEM(m, 1) &&
                SLOT(r, OFF.t_device) == PyTuple_GET_ITEM(m, 2) &&
                PyObject_RichCompareBool(SLOT(r, OFF.t_shape), PyTuple_GET_ITEM(m, 0),
                                         Py_EQ) == 1) {
                v = r;
                Py_INCREF(v);
            } else {
                PyObject *kk = PyLong_FromSsize_t(k);
                v = kk == NULL ? NULL :
                    PyObject_CallFunctionObjArgs(validate_fn, r, m, node, kk, NULL);
                Py_XDECREF(kk);
                if (v == NULL)
                    goto error;
            }
        }
        PyList_SET_ITEM(out, k, v);
    }
    Py_DECREF(seq);
    return out;
error:
    Py_DECREF(seq);
    Py_DECREF(out);
    return NULL;
}

static PyObject *formula_apply(PyObject *node, PyObject *grads)
{
    PyObject *spec = SLOT(node, OFF.fn_spec), *saved = SLOT(node, OFF.fn_args);
    PyObject *formula, *backward, *res, *out, **stack;
    Py_ssize_t n, i;
    if (spec == NULL || saved == NULL || !PyList_CheckExact(saved) ||
        SLOT(spec, off_spec_n_out) == NULL || PyLong_AsLong(SLOT(spec, off_spec_n_out)) != 1)
        return PyObject_CallMethodOneArg(node, str_apply, grads);
    formula = SLOT(spec, off_spec_formula);
    backward = formula == NULL ? NULL : SLOT(formula, off_formula_backward);
    if (backward == NULL)
        return PyObject_CallMethodOneArg(node, str_apply, grads);
    n = PyList_GET_SIZE(saved);
    stack = PyMem_Malloc((n + 2) * sizeof(PyObject *));
    if (stack == NULL)
        return PyErr_NoMemory();
    stack[0] = node;
    stack[1] = PyList_GET_ITEM(grads, 0);
    for (i = 0; i < n; i++) {
        stack[i + 2] = unpack_arg(PyList_GET_ITEM(saved, i), node);
        if (stack[i + 2] == NULL) {
            for (Py_ssize_t j = 0; j < i; j++)
                Py_DECREF(stack[j + 2]);
            PyMem_Free(stack);
            return NULL;
        }
    }
    res = PyObject_Vectorcall(backward, stack, n + 2, NULL);
    for (i = 0; i < n; i++)
        Py_DECREF(stack[i + 2]);
    PyMem_Free(stack);
    if (res == NULL)
        return NULL;
    out = formula_finish(node, spec, res);
    Py_DECREF(res);
    return out;
}

static void free_saved(PyObject *a)
{
    if (Py_TYPE(a) == SavedTensorType) {
        Py_INCREF(Py_None);
        Py_XSETREF(SLOT(a, OFF.sv_data), Py_None);
        Py_INCREF(Py_None);   /* a saved-tensor hook's packed value goes too */
        Py_XSETREF(SLOT(a, OFF.sv_hooked), Py_None);
    }
}

/* FormulaNode.release */
static void formula_release(PyObject *node)
{
    PyObject *saved = SLOT(node, OFF.fn_args), *r = SLOT(node, OFF.fn_result);
    if (saved != NULL && PyList_CheckExact(saved))
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(saved); i++) {
            PyObject *a = PyList_GET_ITEM(saved, i);
            if (PyList_CheckExact(a))
                for (Py_ssize_t j = 0; j < PyList_GET_SIZE(a); j++)
                    free_saved(PyList_GET_ITEM(a, j));
            else
                free_saved(a);
        }
    if (r != NULL && PyTuple_Check(r))
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(r); i++)
            free_saved(PyTuple_GET_ITEM(r, i));
    else if (r != NULL)
        free_saved(r);
}

static int plain_formula(PyObject *n)
{
    /* a FormulaNode whose apply and release are FormulaNode's own */
    return is_formula_node(n) &&
           _PyType_Lookup(Py_TYPE(n), str_apply) == apply_ref &&
           _PyType_Lookup(Py_TYPE(n), str_release) == release_ref;
}

static int all_none(PyObject *buf)
{
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(buf); i++)
        if (PyList_GET_ITEM(buf, i) != Py_None)
            return 0;
    return 1;
}

/* run_graph(ready, buffers, deps, run, keep_graph, with_extras): execute()'s loop */
PyObject *py_run_graph(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *ready, *buffers, *deps, *run, *with_extras;
    int keep_graph;
    Heap heap = {NULL, 0, 0, 0};
    if (nargs != 6) {
        PyErr_SetString(PyExc_TypeError, "run_graph(ready, buffers, deps, run, keep_graph, "
                                         "with_extras)");
        return NULL;
    }
    ready = args[0];
    buffers = args[1];
    deps = args[2];
    run = args[3];
    keep_graph = PyObject_IsTrue(args[4]);
    with_extras = args[5];
    if (!PyList_Check(ready) || !PyDict_Check(buffers) || !PyDict_Check(deps) || keep_graph < 0) {
        PyErr_SetString(PyExc_TypeError, "run_graph: ready list, buffers and deps dicts");
        return NULL;
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(ready); i++) {
        PyObject *entry = PyList_GET_ITEM(ready, i);
        if (!PyTuple_Check(entry) || PyTuple_GET_SIZE(entry) != 3 ||
            heap_push_at(&heap, PyLong_AsLongLong(PyTuple_GET_ITEM(entry, 0)),
                         PyLong_AsLongLong(PyTuple_GET_ITEM(entry, 1)),
                         PyTuple_GET_ITEM(entry, 2)) < 0)
            goto error;
    }
    while (heap.n > 0) {
        PyObject *n = heap_pop(&heap), *buf, *outs, *edges, *x;
        buf = PyDict_GetItemWithError(buffers, n);
        if (buf != NULL) {
            Py_INCREF(buf);
            if (PyDict_DelItem(buffers, n) < 0) {
                Py_DECREF(buf);
                Py_DECREF(n);
                goto error;
            }
        } else if (PyErr_Occurred()) {
            Py_DECREF(n);
            goto error;
        }
        x = SLOT(n, OFF.n_x);
        if (x != NULL && x != Py_None) {
            outs = PyObject_CallFunctionObjArgs(with_extras, n, buf ? buf : Py_None, run,
                                                keep_graph ? Py_True : Py_False, NULL);
        } else if (buf == NULL || !PyList_CheckExact(buf) || all_none(buf)) {
            outs = PyTuple_New(0);
        } else if (Py_TYPE(n) == AccumulateGradType) {
            /* AccumulateGrad.apply: accumulate(self.variable, grads[0]); nothing flows on */
            PyObject *v = SLOT(n, off_acc_variable);
            PyObject *r = v == NULL ? NULL :
                PyObject_CallFunctionObjArgs(accumulate_fn, v, PyList_GET_ITEM(buf, 0), NULL);
            if (v == NULL)
                PyErr_SetString(PyExc_AttributeError, "AccumulateGrad without its variable");
            outs = r == NULL ? NULL : PyTuple_New(0);
            Py_XDECREF(r);
        } else if (plain_formula(n)) {
            outs = formula_apply(n, buf);
            if (outs != NULL && !keep_graph)
                formula_release(n);
        } else {
            outs = PyObject_CallMethodOneArg(n, str_apply, buf);
            if (outs != NULL && !keep_graph) {
                PyObject *r = PyObject_CallMethodNoArgs(n, str_release);
                if (r == NULL)
                    Py_CLEAR(outs);
                Py_XDECREF(r);
            }
        }
        Py_XDECREF(buf);
        if (outs == NULL) {
            Py_DECREF(n);
            goto error;
        }
        PyObject *outs_seq = PySequence_Fast(outs, "a node must return a sequence");
        Py_DECREF(outs);
        edges = outs_seq == NULL ? NULL : PySequence_Fast(SLOT(n, OFF.n_next_edges),
                                                          "next_edges must be a sequence");
        if (edges == NULL) {
            Py_XDECREF(outs_seq);
            Py_DECREF(n);
            goto error;
        }
        Py_ssize_t n_outs = PySequence_Fast_GET_SIZE(outs_seq);
        int failed = 0;
        for (Py_ssize_t k = 0; k < PySequence_Fast_GET_SIZE(edges) && !failed; k++) {
            PyObject *e = PySequence_Fast_GET_ITEM(edges, k);
            if (e == Py_None)
                continue;
            if (!PyTuple_Check(e) || PyTuple_GET_SIZE(e) != 2) {
                PyErr_SetString(PyExc_TypeError, "engine: an edge is not a (node, input_nr) tuple");
                failed = 1;
                break;
            }
            PyObject *m = PyTuple_GET_ITEM(e, 0);
            PyObject *g = k < n_outs ? PySequence_Fast_GET_ITEM(outs_seq, k) : Py_None;
            if (g != Py_None) {
                Py_ssize_t nr = PyLong_AsSsize_t(PyTuple_GET_ITEM(e, 1));
                PyObject *mbuf = PyDict_GetItemWithError(buffers, m);
                if (mbuf == NULL && PyErr_Occurred()) {
                    failed = 1;
                    break;
                }
                if (mbuf == NULL && nr == 0 && num_outputs(m) == 1) {
                    PyObject *single = PyList_New(1);
                    if (single == NULL) {
                        failed = 1;
                        break;
                    }
                    Py_INCREF(g);
                    PyList_SET_ITEM(single, 0, g);
                    failed = PyDict_SetItem(buffers, m, single) < 0 || route(run, g) < 0;
                    Py_DECREF(single);
                } else if (PyErr_Occurred()) {
                    failed = 1;
                } else {
                    failed = add_grad(buffers, m, nr, g, run) < 0;
                }
                if (failed)
                    break;
            }
            PyObject *left_obj = PyDict_GetItemWithError(deps, m);
            long left = left_obj == NULL ? 0 : PyLong_AsLong(left_obj);
            if (left_obj == NULL) {
                PyErr_SetObject(PyExc_KeyError, m);   /* as deps[m] raises */
                failed = 1;
                break;
            }
            left -= 1;
            PyObject *lo = PyLong_FromLong(left);
            if (lo == NULL || PyDict_SetItem(deps, m, lo) < 0) {
                Py_XDECREF(lo);
                failed = 1;
                break;
            }
            Py_DECREF(lo);
            if (left == 0 && heap_push(&heap, node_key(m), m) < 0)
                failed = 1;
        }
        Py_DECREF(edges);
        Py_DECREF(outs_seq);
        Py_DECREF(n);
        if (failed)
            goto error;
    }
    heap_clear(&heap);
    Py_RETURN_NONE;
error:
    heap_clear(&heap);
    return NULL;
}

/* engine._dependencies(root_edges, False)[0]: incoming edges per reachable node */
PyObject *py_dependencies(PyObject *self, PyObject *root_edges)
{
    PyObject *deps = PyDict_New(), *seen = PySet_New(NULL), *stack = PyList_New(0), *it, *e;
    if (deps == NULL || seen == NULL || stack == NULL)
        goto error;
    it = PyObject_GetIter(root_edges);
    if (it == NULL)
        goto error;
    while ((e = PyIter_Next(it)) != NULL) {
        PyObject *n = PySequence_GetItem(e, 0);
        Py_DECREF(e);
        if (n == NULL) {
            Py_DECREF(it);
            goto error;
        }
        int has = PySet_Contains(seen, n);
        if (has == 0 && (PySet_Add(seen, n) < 0 || PyList_Append(stack, n) < 0))
            has = -1;
        Py_DECREF(n);
        if (has < 0) {
            Py_DECREF(it);
            goto error;
        }
    }
    Py_DECREF(it);
    if (PyErr_Occurred())
        goto error;
    while (PyList_GET_SIZE(stack) > 0) {
        Py_ssize_t top = PyList_GET_SIZE(stack) - 1;
        PyObject *n = PyList_GET_ITEM(stack, top);
        Py_INCREF(n);
        if (PyList_SetSlice(stack, top, top + 1, NULL) < 0) {
            Py_DECREF(n);
            goto error;
        }
        PyObject *edges = PySequence_Fast(SLOT(n, OFF.n_next_edges), "next_edges");
        Py_DECREF(n);
        if (edges == NULL)
            goto error;
        for (Py_ssize_t k = 0; k < PySequence_Fast_GET_SIZE(edges); k++) {
            PyObject *edge = PySequence_Fast_GET_ITEM(edges, k);
            if (edge == Py_None)
                continue;
            if (!PyTuple_Check(edge) || PyTuple_GET_SIZE(edge) != 2) {
                PyErr_SetString(PyExc_TypeError, "engine: an edge is not a (node, input_nr) tuple");
                Py_DECREF(edges);
                goto error;
            }
            PyObject *m = PyTuple_GET_ITEM(edge, 0), *c = PyDict_GetItemWithError(deps, m);
            long count = c == NULL ? 0 : PyLong_AsLong(c);
            PyObject *nc = PyLong_FromLong(count + 1);
            int bad = nc == NULL || PyDict_SetItem(deps, m, nc) < 0;
            Py_XDECREF(nc);
            if (!bad) {
                int has = PySet_Contains(seen, m);
                bad = has < 0 || (has == 0 && (PySet_Add(seen, m) < 0 ||
                                               PyList_Append(stack, m) < 0));
            }
            if (bad) {
                Py_DECREF(edges);
                goto error;
            }
        }
        Py_DECREF(edges);
    }
    Py_DECREF(seen);
    Py_DECREF(stack);
    return deps;
error:
    Py_XDECREF(deps);
    Py_XDECREF(seen);
    Py_XDECREF(stack);
    return NULL;
}

PyObject *install_engine(PyObject *self, PyObject *args)
{
    PyObject *formula_node, *acc, *spec_cls, *derivative_cls, *run_cls, *validate, *unpack_list;
    PyObject *accumulate;
    if (!PyArg_ParseTuple(args, "O!O!OOOOOO", &PyType_Type, &formula_node, &PyType_Type, &acc,
                          &spec_cls, &derivative_cls, &run_cls, &validate, &unpack_list,
                          &accumulate))
        return NULL;
    if (slot_offset(acc, "variable", &off_acc_variable) < 0)
        return NULL;
    Py_INCREF(accumulate);
    Py_XSETREF(accumulate_fn, accumulate);
    if (slot_offset(spec_cls, "n_out", &off_spec_n_out) < 0 ||
        slot_offset(spec_cls, "formula", &off_spec_formula) < 0 ||
        slot_offset(spec_cls, "slots", &off_spec_slots) < 0 ||
        slot_offset(spec_cls, "has_list", &off_spec_has_list) < 0 ||
        slot_offset(derivative_cls, "backward", &off_formula_backward) < 0 ||
        slot_offset(run_cls, "counts", &off_run_counts) < 0)
        return NULL;
    if ((str_apply = PyUnicode_InternFromString("apply")) == NULL ||
        (str_release = PyUnicode_InternFromString("release")) == NULL ||
        (str_num_outputs = PyUnicode_InternFromString("num_outputs")) == NULL ||
        (str_unpack = PyUnicode_InternFromString("unpack")) == NULL ||
        (str_finish = PyUnicode_InternFromString("finish")) == NULL)
        return NULL;
    if (ONE_INT == NULL && (ONE_INT = PyLong_FromLong(1)) == NULL)
        return NULL;
    Py_INCREF(formula_node);
    Py_XSETREF(FormulaNodeType, (PyTypeObject *)formula_node);
    Py_INCREF(acc);
    Py_XSETREF(AccumulateGradType, (PyTypeObject *)acc);
    Py_XSETREF(apply_ref, _PyType_Lookup(FormulaNodeType, str_apply));
    Py_XINCREF(apply_ref);
    Py_XSETREF(release_ref, _PyType_Lookup(FormulaNodeType, str_release));
    Py_XINCREF(release_ref);
    Py_INCREF(validate);
    Py_XSETREF(validate_fn, validate);
    Py_INCREF(unpack_list);
    Py_XSETREF(unpack_list_fn, unpack_list);
    Py_RETURN_NONE;
}
