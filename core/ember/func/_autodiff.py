"""Reverse- and forward-mode transforms: grad, grad_and_value, vjp, jvp, linearize, jacrev,
jacfwd, hessian (``torch.func``'s semantics and messages).

Reverse mode runs ember's own autograd on fresh inputs: each differentiated input is replaced by a
differentiable alias that requires grad, so the gradient counts only the paths through it even
when ``func`` also closes over the original (no perturbation confusion), and the backward is
recorded only when something outside the transform can still differentiate it (an input or a
closed-over tensor already tracked by autograd, an enclosing grad). Under an enclosing ``vmap``
each input becomes a ``BatchedTensor`` of the innermost vmap (an unbatched one is broadcast over
the batch), so the graph is recorded on the examples and the gradient is per example.

Forward mode gives each input a tangent at a fresh level (``_dual.py``) and reads the outputs'
tangents at that level.
"""
from __future__ import annotations

import functools

from .._tensor import Tensor
from ..autograd import engine
from ..dispatch.grad_mode import enable_grad
from ..autograd.graph import AccumulateGrad, AutogradMeta, alias
from ..dispatch import keys as K
from ..utils._pytree import tree_flatten, tree_map, tree_unflatten
from ..autograd import dual as _dual
from ..dispatch import levels as _levels
from ._batched import BatchedTensor, make_batched
from ..autograd.record import gradient_edge
from ..ops import _batching, _grad
from ..ops.factories import eye
from ..ops.views import movedim, reshape, slice_op, view_op
from ._vmap import vmap

_AG = K.AUTOGRAD


# -- arguments ----------------------------------------------------------------------------------
def _wrap_argnum(argnum, n):
    if not isinstance(argnum, int) or isinstance(argnum, bool):
        raise RuntimeError(f"argnum must be int, got: {type(argnum)}")
    if 0 <= argnum < n:
        return argnum
    if -n <= argnum < 0:
        return argnum + n
    raise RuntimeError(f"Got argnum={argnum}, but only {n} positional inputs")


def _argnums(argnums, n):
    if isinstance(argnums, int) and not isinstance(argnums, bool):
        return _wrap_argnum(argnums, n)
    if isinstance(argnums, tuple):
        if not argnums:
            raise RuntimeError("argnums must be non-empty")
        out = tuple(_wrap_argnum(a, n) for a in argnums)
        if len(set(out)) != len(out):
            raise RuntimeError(f"argnums elements must be unique, got {argnums}")
        return out
    raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")


def _slice(args, argnums):
    return args[argnums] if isinstance(argnums, int) else tuple(args[i] for i in argnums)


def _replace(args, argnums, new):
    args = list(args)
    if isinstance(argnums, int):
        args[argnums] = new
    else:
        for i, v in zip(argnums, new):
            args[i] = v
    return tuple(args)


# -- reverse mode -------------------------------------------------------------------------------
def _grad_input(x, vmap_layer):
    """A differentiable alias of ``x`` that requires grad: a BatchedTensor of ``vmap_layer``
    when there is an enclosing vmap (``x`` broadcast over its batch if it is not batched)."""
    if not isinstance(x, Tensor):
        raise ValueError(f"Thing passed to transform API must be Tensor, got {type(x)}")
    if vmap_layer is not None and not (x.__class__ is BatchedTensor and
                                       x._level == vmap_layer.level):
        level = vmap_layer.level
        with _levels.Ceiling(level):
            y = make_batched(_batching.materialize(x, None, vmap_layer.batch_size), level)
        for lvl, t in (_dual.tangents_of(x) or {}).items():
            if lvl > level and _levels.layer_at(lvl) is not None:
                _dual.set_tangent(y, lvl, t if (t.__class__ is BatchedTensor and
                                                t._level == level) else _grad_input_plain(
                                                    t, vmap_layer))
    else:
        y = view_op(x, x._shape)
        if getattr(y, "_view_base", None) is not None and not x.requires_grad:
            del y._view_base   # a fresh input: in-place ops on it must not reach x
    if not y.requires_grad:
        if not y.dtype.category >= 2:
            raise RuntimeError(f"ember.func: only Tensors of floating point dtype can require "
                               f"gradients (a differentiated input has dtype {y.dtype})")
        y._ag = AutogradMeta(True)
        y._ks |= _AG
    return y


def _grad_input_plain(t, vmap_layer):
    """A tangent broadcast over the batch of ``vmap_layer`` (it goes with a lifted input)."""
    with _levels.Ceiling(vmap_layer.level):
        return make_batched(_batching.materialize(t, None, vmap_layer.batch_size),
                            vmap_layer.level)


def _reaches_outside(outputs, inputs) -> bool:
    """Does the graph recorded from ``inputs`` to ``outputs`` depend on anything autograd tracks
    outside this transform (an input tracked before, a closed-over leaf)? Then an enclosing
    differentiation may still need the backward, which must be recorded."""
    ours = set()
    for x in inputs:
        if x.grad_fn is not None:
            return True
        ours.add(id(x))
    seen = set()
    stack = [o.grad_fn for o in outputs if isinstance(o, Tensor) and o.grad_fn is not None]
    while stack:
        n = stack.pop()
        if n in seen:
            continue
        seen.add(n)
        if n.__class__ is AccumulateGrad:
            if id(n.variable) not in ours:
                return True
            continue
        for e in n.next_edges:
            if e is not None and e[0] not in seen:
                stack.append(e[0])
    return False


def _autograd_grad(outputs, inputs, cotangents, create_graph, retain_graph=True):
    """Gradients of ``outputs`` (with ``cotangents``) w.r.t. ``inputs``; None where unused."""
    pairs = [(o, g) for o, g in zip(outputs, cotangents) if o.requires_grad]
    if not pairs:
        return [None] * len(inputs)
    outs = [o for o, _ in pairs]
    grads = engine._make_grads(outs, [g for _, g in pairs])
    edges, gs = engine._root_edges(outs, grads)
    cap = [gradient_edge(t) for t in inputs]
    return engine.execute(edges, gs, keep_graph=retain_graph, create_graph=create_graph,
                          capture_edges=cap)


def _strip(t, keep_graph):
    """``t`` as seen outside the transform: without its autograd history unless an enclosing
    differentiation needs it; tangents and batching stay."""
    if keep_graph or not isinstance(t, Tensor) or t._ag is None:
        return t
    a = alias(t)
    fw = _dual.tangents_of(t)
    if fw:
        a._fw = dict(fw)
        a._ks |= K.BATCHED
    return a


def _zeros_like(t):
    return _grad.zeros_like(t)


def _fill(grads, inputs):
    return [_zeros_like(x) if g is None else g for g, x in zip(grads, inputs)]


class _GradLayer:
    """Context: a grad layer with grad mode on; yields the innermost enclosing vmap layer."""

    def __enter__(self):
        self.vmap = _levels.innermost_vmap()
        self.layer = _levels.push("grad")
        self.mode = enable_grad()
        self.mode.__enter__()
        return self

    def __exit__(self, *exc):
        self.mode.__exit__(*exc)
        _levels.pop(self.layer)


def _split_aux(output, has_aux, api):
    """(output, aux) of ``f``'s result: with ``has_aux`` it must be that pair, else aux is
    None."""
    if not has_aux:
        return output, None
    if not (isinstance(output, tuple) and len(output) == 2):
        raise RuntimeError(f"{api}: output of function f should be a tuple: (output, aux) if "
                           f"has_aux is True")
    return output


def grad_and_value(func, argnums=0, has_aux=False):
    """``func``'s gradient w.r.t. the arguments at ``argnums``, and its value."""
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        with _GradLayer() as g:
            nums = _argnums(argnums, len(args))
            diff = tree_map(lambda x: _grad_input(x, g.vmap), _slice(args, nums))
            output = func(*_replace(args, nums, diff), **kwargs)
            output, aux = _split_aux(output, has_aux, "grad_and_value(f)(*args)")
            if not isinstance(output, Tensor):
                raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a "
                                   f"Tensor, got {type(output)}")
            if output.ndim != 0:
                raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a "
                                   f"scalar Tensor, got tensor with {output.ndim} dims. Maybe "
                                   f"you wanted to use the vjp or jacrev APIs instead?")
            flat, spec = tree_flatten(diff)
            keep = g.layer.prev_grad_enabled and _reaches_outside([output], flat)
            grads = _autograd_grad([output], flat, [None], create_graph=keep,
                                   retain_graph=keep)
            grads = [_strip(x, keep) for x in _fill(grads, flat)]
            grads = tree_unflatten(grads, spec)
            value = _strip(output, keep)
            if has_aux:
                aux = tree_map(lambda t: _strip(t, keep), aux)
                return grads, (value, aux)
            return grads, value
    return wrapper


def grad(func, argnums=0, has_aux=False):
    """The gradient of a scalar-valued ``func`` w.r.t. the arguments at ``argnums``."""
    gv = grad_and_value(func, argnums, has_aux)

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        grads, rest = gv(*args, **kwargs)
        return (grads, rest[1]) if has_aux else grads
    return wrapper


def vjp(func, *primals, has_aux=False):
    """``(func(*primals), vjp_fn)``: ``vjp_fn(cotangents)`` is the vector-Jacobian product, one
    gradient per primal (a tuple); with ``has_aux``, ``func`` returns (output, aux) and so does
    this, as ``(output, vjp_fn, aux)``."""
    with _GradLayer() as g:
        diff = tree_map(lambda x: _grad_input(x, g.vmap), primals)
        out = func(*diff)
        out, aux = _split_aux(out, has_aux, "vjp(f, *primals)")
        flat_out, out_spec = tree_flatten(out)
        for o in flat_out:
            if not isinstance(o, Tensor):
                raise RuntimeError(f"vjp(f, *primals): Expected f to be a function that returns "
                                   f"Tensors, got {type(o)}")
            if o.dtype.category < 2:
                raise RuntimeError(f"vjp(f, ...): All outputs of f must be floating-point or "
                                   f"complex Tensors, got Tensor with dtype {o.dtype}")
        flat_in, in_spec = tree_flatten(diff)
        keep = g.layer.prev_grad_enabled and _reaches_outside(flat_out, flat_in)
        out_value = tree_unflatten([_strip(o, keep) for o in flat_out], out_spec)
        if has_aux:
            aux = tree_map(lambda t: _strip(t, keep), aux)

    def vjp_fn(cotangents, *, retain_graph=True, create_graph=None):
        flat_ct, ct_spec = tree_flatten(cotangents)
        if ct_spec != out_spec:
            raise RuntimeError(f"Expected pytree structure of cotangents to be the same as "
                               f"pytree structure of outputs to the function. cotangents: "
                               f"{ct_spec}, primal output: {out_spec}")
        record = keep if create_graph is None else create_graph
        grads = _autograd_grad(flat_out, flat_in, flat_ct, create_graph=record,
                               retain_graph=retain_graph)
        grads = [_strip(x, record) for x in _fill(grads, flat_in)]
        return tree_unflatten(grads, in_spec)

    vjp_fn.keeps_graph = keep   # whether something outside still differentiates through it
    return (out_value, vjp_fn, aux) if has_aux else (out_value, vjp_fn)


# -- forward mode -------------------------------------------------------------------------------
_JVP = "jvp(f, primals, tangents)"


def jvp(func, primals, tangents, *, strict=False, has_aux=False):
    """``(func(*primals), J·tangents)``: the Jacobian-vector product by forward-mode AD."""
    if not isinstance(primals, tuple):
        raise RuntimeError(f"{_JVP}: Expected primals to be a tuple. E.g. it should be valid to "
                           f"call f(*primals).")
    flat_p, p_spec = tree_flatten(primals)
    flat_t, t_spec = tree_flatten(tangents)
    if p_spec != t_spec:
        raise RuntimeError(f"{_JVP}: Expected primals and tangents to have the same python "
                           f"structure. For example, if primals is a tuple of 3 tensors, "
                           f"tangents also must be. Got primals with structure {p_spec} and "
                           f"tangents with structure {t_spec}")
    for elts, what in ((flat_p, "primals"), (flat_t, "tangents")):
        if not elts:
            raise RuntimeError(f"{_JVP}: Expected {what} to contain at least one Tensor.")
        for e in elts:
            if not isinstance(e, Tensor):
                raise RuntimeError(f"{_JVP}: Expected {what} to only contain Tensors, got "
                                   f"{type(e)}")
    layer = _levels.push("jvp")
    try:
        duals = [_dual.make_dual_at(p, t, layer.level) for p, t in zip(flat_p, flat_t)]
        out = func(*tree_unflatten(duals, p_spec))
        out, aux = _split_aux(out, has_aux, _JVP)
        flat_out, out_spec = tree_flatten(out)
        if not flat_out:
            raise RuntimeError(f"{_JVP}: Expected f to be a function that has non-empty output "
                               f"(got output = {out})")
        primals_out, tangents_out = [], []
        for o in flat_out:
            if not isinstance(o, Tensor):
                raise RuntimeError(f"{_JVP}: expected f(*args) to return only tensors, got "
                                   f"unsupported type {type(o)}")
            p, t = _dual.unpack_at(o, layer.level)
            if t is None:
                if strict:
                    raise RuntimeError("jvp(f, primals, tangents, strict=True): The output of f "
                                       "is independent of the inputs. This is not allowed with "
                                       "strict=True.")
                t = _zeros_like(p)
            primals_out.append(p)
            tangents_out.append(t)
        if has_aux:
            aux = tree_map(lambda x: _dual.unpack_at(x, layer.level)[0] if isinstance(x, Tensor)
                           else x, aux)
    finally:
        _dual.clear_layer(layer)
        _levels.pop(layer)
    result = (tree_unflatten(primals_out, out_spec), tree_unflatten(tangents_out, out_spec))
    return result + (aux,) if has_aux else result


def linearize(func, *primals):
    """``(func(*primals), jvp_fn)``: ``jvp_fn(*tangents)`` is the Jacobian-vector product at
    ``primals``, evaluated on the recorded graph without running ``func`` again (as the
    transpose of the vector-Jacobian product, which is linear in its cotangent)."""
    output, vjp_fn = vjp(func, *primals)
    flat_out, out_spec = tree_flatten(output)
    cts = [_zeros_like(o) for o in flat_out]

    def cotangent_map(*gs):
        return tuple(tree_flatten(vjp_fn(tree_unflatten(list(gs), out_spec),
                                         create_graph=True))[0])

    _, pullback = vjp(cotangent_map, *cts)
    flat_p, p_spec = tree_flatten(primals)

    def jvp_fn(*tangents):
        flat_t, t_spec = tree_flatten(tangents)
        if t_spec != p_spec:
            raise RuntimeError(f"linearize: Expected tangents to have the same python structure "
                               f"as primals. Got primals with structure {p_spec} and tangents "
                               f"with structure {t_spec}")
        for p, t in zip(flat_p, flat_t):
            if not isinstance(t, Tensor) or t._shape != p._shape:
                got = list(t._shape) if isinstance(t, Tensor) else type(t).__name__
                raise RuntimeError(f"linearize: tangent of shape {got} does not match its primal "
                                   f"of shape {list(p._shape)}")
        got = pullback(tuple(flat_t), create_graph=vjp_fn.keeps_graph)
        return tree_unflatten(list(got), out_spec)

    return output, jvp_fn


# -- Jacobians ----------------------------------------------------------------------------------
def _basis(flat, numels, dtype_of):
    """The standard basis of the concatenated elements, split per tensor: tensor i gets
    (total, *shape_i) with the identity's columns for its elements."""
    total = sum(numels)
    out = []
    start = 0
    for t, n in zip(flat, numels):
        e = eye(total, dtype=dtype_of(t), device=t.device)
        cols = slice_op(e, 1, start, start + n, 1)
        out.append(view_op(cols.contiguous(), (total,) + t._shape))
        start += n
    return out


def _error_if_complex(api, tensors, is_input):
    for t in tensors:
        if isinstance(t, Tensor) and t.is_complex():
            what = "inputs" if is_input else "outputs"
            raise RuntimeError(f"{api}: Expected all {what} to be real but received complex "
                               f"tensor at flattened {'input' if is_input else 'output'} index "
                               f"{tensors.index(t)}")


def jacrev(func, argnums=0, *, has_aux=False, chunk_size=None, _preallocate_and_copy=False):
    """The Jacobian of ``func`` w.r.t. the arguments at ``argnums``, by reverse mode: one
    vector-Jacobian product per output element, vmapped (``chunk_size`` at a time)."""
    if chunk_size is not None and not (isinstance(chunk_size, int) and chunk_size > 0):
        raise ValueError("jacrev: `chunk_size` should be greater than 0.")

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        nums = _argnums(argnums, len(args))
        primals = _slice(args, nums)
        _error_if_complex("jacrev", tree_flatten(primals)[0], True)

        def f(*diff):
            return func(*_replace(args, nums, diff[0] if isinstance(nums, int) else diff),
                        **kwargs)
        packed = (primals,) if isinstance(nums, int) else primals
        res = vjp(f, *packed, has_aux=has_aux)
        output, vjp_fn = res[0], res[1]
        flat_out, out_spec = tree_flatten(output)
        _error_if_complex("jacrev", flat_out, False)
        numels = [o.numel() for o in flat_out]
        basis = _basis(flat_out, numels, lambda o: o.dtype)
        rows = vmap(vjp_fn, chunk_size=chunk_size)(tree_unflatten(basis, out_spec))
        flat_rows, in_spec = tree_flatten(rows)   # per primal: (total, *primal shape)
        jac = []
        start = 0
        for o, n in zip(flat_out, numels):
            per_input = [_rows_to_jac(r, start, n, o._shape) for r in flat_rows]
            jac.append(tree_unflatten(per_input, in_spec)[0] if isinstance(nums, int)
                       else tree_unflatten(per_input, in_spec))
            start += n
        jac = tree_unflatten(jac, out_spec)
        return (jac, res[2]) if has_aux else jac
    return wrapper


def _rows_to_jac(rows, start, n, out_shape):
    part = slice_op(rows, 0, start, start + n, 1)
    return reshape(part, tuple(out_shape) + tuple(rows._shape[1:]))


def jacfwd(func, argnums=0, has_aux=False, *, randomness="error", chunk_size=None):
    """The Jacobian of ``func`` w.r.t. the arguments at ``argnums``, by forward mode: one
    Jacobian-vector product per input element, vmapped (``chunk_size`` at a time, an ember
    extension)."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        nums = _argnums(argnums, len(args))
        primals = _slice(args, nums)
        flat_p, p_spec = tree_flatten(primals)
        _error_if_complex("jacfwd", flat_p, True)
        numels = [p.numel() for p in flat_p]
        basis = tree_unflatten(_basis(flat_p, numels, lambda p: p.dtype), p_spec)

        def f(*diff):
            return func(*_replace(args, nums, diff[0] if isinstance(nums, int) else diff),
                        **kwargs)
        packed = (primals,) if isinstance(nums, int) else primals

        def push_jvp(tangent_basis):
            tangents = (tangent_basis,) if isinstance(nums, int) else tangent_basis
            out = jvp(f, packed, tangents, has_aux=has_aux)
            _error_if_complex("jacfwd", tree_flatten(out[0])[0], False)
            return (out[1], out[2]) if has_aux else out[1]

        res = vmap(push_jvp, randomness=randomness, chunk_size=chunk_size)(basis)
        cols, aux = (res if has_aux else (res, None))
        flat_cols, out_spec = tree_flatten(cols)   # per output: (total, *out shape)
        jac = []
        for c in flat_cols:
            per_input = []
            start = 0
            out_shape = c._shape[1:]
            for p, n in zip(flat_p, numels):
                per_input.append(_cols_to_jac(c, start, n, out_shape, p._shape))
                start += n
            jac.append(tree_unflatten(per_input, p_spec))
        jac = tree_unflatten(jac, out_spec)
        if has_aux:
            aux = tree_map(lambda t: t[0] if isinstance(t, Tensor) else t, aux)
            return jac, aux
        return jac
    return wrapper


def _cols_to_jac(cols, start, n, out_shape, in_shape):
    part = slice_op(cols, 0, start, start + n, 1)
    part = movedim(part, 0, -1) if part.ndim > 1 else part
    return reshape(part, tuple(out_shape) + tuple(in_shape))


def hessian(func, argnums=0):
    """The Hessian of a scalar ``func``: forward-over-reverse, ``jacfwd(jacrev(func))``."""
    return jacfwd(jacrev(func, argnums), argnums)
