"""Multi-tensor ops: PyTorch's ``_foreach_*`` family (one op over lists of tensors) and the fused
optimizer steps ``_fused_sgd_``, ``_fused_adam_``, ``_fused_adamw_``.

An optimizer step over many parameters costs, op by op, a dispatch per parameter and per
elementwise step. These ops take whole lists, so a backend runs each in one kernel call (the
array kit loops over the list in numpy without going back through the dispatcher; OpenCL
launches one kernel per list, see ``ember_opencl.ops_foreach``). Every op also has a composite
written with the single-tensor in-place ops, which runs wherever a backend has no kernel (the
meta device, plug-ins) and is the reference the kernels are checked against.

``_foreach_mul_`` and ``_foreach_div_`` also take a second list (PyTorch's ``.List``
overloads; ops ``_foreach_mul_list_`` / ``_foreach_div_list_``), which Adadelta's multi-tensor
step needs.

Kernel convention: lists of equal length whose tensors pair up elementwise (same shapes;
``self`` tensors are written in place and may be views); scalars are Python numbers. The
in-place ops return nothing. ``_foreach_sqrt`` returns a list of new tensors.

The fused steps follow ``torch.optim``'s single-tensor updates exactly (same association order):

* ``_fused_sgd_(params, grads, momentum_buffers, weight_decay, momentum, lr, dampening,
  nesterov, maximize, is_first_step)``: with momentum, a first step copies the gradient into
  the (given, zero) buffer, later ones do ``buf = momentum * buf + (1 - dampening) * grad``;
* ``_fused_adam_(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps, lr, beta1,
  beta2, weight_decay, eps, amsgrad, maximize)``: ``steps`` are the already incremented step
  counts (host floats); ``_fused_adamw_`` decays the parameter (``p *= 1 - lr * wd``) instead
  of adding ``wd * p`` to the gradient;
* ``_fused_adam_capturable_(..., state_steps, lr_tensor, lr, ..., decoupled)``: the same with
  tensor step counts, incremented by the op, and PyTorch's capturable formulas (what Adam and
  AdamW run with ``capturable=True`` or inside ``ember.compile``).
"""
from __future__ import annotations

from .._tensor import Tensor
from ..dispatch.grad_mode import no_grad
from ..dispatch import keys as _keys
from ..dispatch.dispatcher import define
from ..dispatch.facets import NOT_DIFFERENTIABLE
from .elementwise import binary as _bin, ternary as _tern
from ..linalg import vector_norm

__all__ = ["_foreach_add_", "_foreach_mul_", "_foreach_div_", "_foreach_lerp_",
           "_foreach_addcmul_", "_foreach_addcdiv_", "_foreach_maximum_", "_foreach_sqrt",
           "_foreach_add", "_foreach_mul", "_fused_sgd_", "_fused_adam_", "_fused_adamw_",
           "_fused_adam_capturable_", "_foreach_norm"]


# -- composites: the single-tensor ops, one tensor at a time ---------------------------------------
def _add_list(selfs, others, alpha):
    for s, o in zip(selfs, others):
        s.add_(o, alpha=alpha)


def _add_scalar(selfs, scalar):
    for s in selfs:
        s.add_(scalar)


def _mul_scalar(selfs, scalar):
    for s in selfs:
        s.mul_(scalar)


def _div_scalar(selfs, scalar):
    for s in selfs:
        s.div_(scalar)


def lerp_one(s, end, weight):
    """``s.lerp_(end, weight)`` with PyTorch's two-sided formula (exact at both ends)."""
    if weight < 0.5:
        s.add_(end - s, alpha=weight)
    else:
        s.sub_(end).mul_(1 - weight).add_(end)


def _lerp(selfs, ends, weight):
    for s, e in zip(selfs, ends):
        lerp_one(s, e, weight)


def _addcmul(selfs, t1, t2, value):
    for s, a, b in zip(selfs, t1, t2):
        s.add_(a * b, alpha=value)


def _addcdiv(selfs, t1, t2, value):
    for s, a, b in zip(selfs, t1, t2):
        s.add_(a / b, alpha=value)


def _maximum(selfs, others):
    for s, o in zip(selfs, others):
        s.copy_(s.maximum(o))


def _mul_tensor(selfs, scalar):
    for s in selfs:
        s.mul_(scalar)


def _mul_list(selfs, others):
    for s, o in zip(selfs, others):
        s.mul_(o)


def _div_list(selfs, others):
    for s, o in zip(selfs, others):
        s.div_(o)


def _norm(selfs, ord):
    return [vector_norm(s, ord) for s in selfs]


def _sqrt(selfs):
    return [s.sqrt() for s in selfs]


def sgd_one(p, g, buf, weight_decay, momentum, lr, dampening, nesterov, maximize, first):
    """One parameter's SGD update in ember ops (``torch.optim.SGD``'s single-tensor path)."""
    if maximize:
        g = -g
    if weight_decay != 0:
        g = g.add(p, alpha=weight_decay)
    if momentum != 0:
        if first:
            buf.copy_(g)
        else:
            buf.mul_(momentum).add_(g, alpha=1 - dampening)
        g = g.add(buf, alpha=momentum) if nesterov else buf
    p.add_(g, alpha=-lr)


def _fused_sgd(params, grads, bufs, weight_decay, momentum, lr, dampening, nesterov, maximize,
               is_first_step):
    for i, (p, g) in enumerate(zip(params, grads)):
        sgd_one(p, g, bufs[i] if bufs else None, weight_decay, momentum, lr, dampening,
                nesterov, maximize, is_first_step)


def decayed_grad(p, g, weight_decay, maximize=False, decoupled=False, lr=None):
    """The gradient an update applies (torch.optim's single-tensor paths): negated for
    ``maximize``, plus ``weight_decay * p`` (L2) — or, ``decoupled`` (AdamW, NAdamW, RAdamW),
    ``p`` shrunk in place by ``1 - lr * weight_decay`` and the gradient left alone."""
    if maximize:
        g = -g
    if weight_decay != 0:
        if decoupled:
            p.mul_(1 - lr * weight_decay)
        else:
            g = g.add(p, alpha=weight_decay)
    return g


def adam_one(p, g, exp_avg, exp_avg_sq, max_sq, step, lr, beta1, beta2, weight_decay, eps,
             amsgrad, maximize, decoupled):
    """One parameter's Adam/AdamW update in ember ops (``torch.optim.Adam``'s single-tensor
    path); ``step`` is the incremented step count."""
    g = decayed_grad(p, g, weight_decay, maximize, decoupled, lr)
    lerp_one(exp_avg, g, 1 - beta1)
    exp_avg_sq.mul_(beta2).add_(g * g, alpha=1 - beta2)
    bias_correction1 = 1 - beta1 ** step
    bias_correction2_sqrt = (1 - beta2 ** step) ** 0.5
    if amsgrad:
        max_sq.copy_(max_sq.maximum(exp_avg_sq))
        denom = (max_sq.sqrt() / bias_correction2_sqrt).add_(eps)
    else:
        denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)
    p.add_(exp_avg / denom, alpha=-(lr / bias_correction1))


def adam_capturable_one(p, g, exp_avg, exp_avg_sq, max_sq, step, lr, beta1, beta2,
                        weight_decay, eps, amsgrad, maximize, decoupled):
    """One parameter's Adam/AdamW update with a tensor step count (already incremented, on
    ``p``'s device) and a number or tensor ``lr``: torch.optim's capturable formulas, all in
    tensor ops, so nothing is read on the host."""
    g = decayed_grad(p, g, weight_decay, maximize, decoupled, lr)
    lerp_one(exp_avg, g, 1 - beta1)
    exp_avg_sq.mul_(beta2).addcmul_(g, g, value=1 - beta2)
    step_size_neg = (lr / (1 - beta1 ** step)).neg()
    bias_correction2_sqrt = (1 - beta2 ** step).sqrt()
    if amsgrad:
        max_sq.copy_(max_sq.maximum(exp_avg_sq))
        sq = max_sq
    else:
        sq = exp_avg_sq
    denom = (sq.sqrt() / (bias_correction2_sqrt * step_size_neg)).add_(eps / step_size_neg)
    p.addcdiv_(exp_avg, denom)


def _adam_capturable_composite(params, grads, exp_avgs, exp_avg_sqs, max_sqs, steps, lr_tensor,
                               lr, beta1, beta2, weight_decay, eps, amsgrad, maximize,
                               decoupled):
    rate = lr_tensor[0] if lr_tensor else lr
    for i, p in enumerate(params):
        steps[i].add_(1)
        adam_capturable_one(p, grads[i], exp_avgs[i], exp_avg_sqs[i],
                            max_sqs[i] if amsgrad else None, steps[i], rate, beta1, beta2,
                            weight_decay, eps, amsgrad, maximize, decoupled)


def _adam_composite(decoupled):
    def run(params, grads, exp_avgs, exp_avg_sqs, max_sqs, steps, lr, beta1, beta2,
            weight_decay, eps, amsgrad, maximize):
        for i, p in enumerate(params):
            adam_one(p, grads[i], exp_avgs[i], exp_avg_sqs[i], max_sqs[i] if amsgrad else None,
                     steps[i], lr, beta1, beta2, weight_decay, eps, amsgrad, maximize, decoupled)
    return run


# -- the ops ---------------------------------------------------------------------------------------
def _op(schema, composite, applies=None):
    """A foreach op; ``applies``: the elementwise op it applies at each index with the same
    arguments element by element (its ``applies`` facet: fusion's foreach runs)."""
    op = define(schema, composite=composite, derivative=NOT_DIFFERENTIABLE, _depth=2)
    op.applies = applies
    return op


foreach_add_op_ = _op("_foreach_add_(Tensor(a!)[] self, Tensor[] other, Scalar alpha) -> ()",
                      _add_list, applies=_bin.add_op)
foreach_add_scalar_op_ = _op("_foreach_add_scalar_(Tensor(a!)[] self, Scalar scalar) -> ()",
                             _add_scalar, applies=_bin.add_op)
foreach_mul_op_ = _op("_foreach_mul_(Tensor(a!)[] self, Scalar scalar) -> ()", _mul_scalar,
                      applies=_bin.binary_ops["mul"][1])
foreach_mul_tensor_op_ = _op("_foreach_mul_tensor_(Tensor(a!)[] self, Tensor scalar) -> ()",
                             _mul_tensor)
foreach_norm_op = _op("_foreach_norm(Tensor[] self, Scalar ord) -> Tensor[]", _norm)
foreach_mul_list_op_ = _op("_foreach_mul_list_(Tensor(a!)[] self, Tensor[] other) -> ()",
                           _mul_list)
foreach_div_list_op_ = _op("_foreach_div_list_(Tensor(a!)[] self, Tensor[] other) -> ()",
                           _div_list)
foreach_div_op_ = _op("_foreach_div_(Tensor(a!)[] self, Scalar scalar) -> ()", _div_scalar,
                      applies=_bin.div_op)
foreach_lerp_op_ = _op("_foreach_lerp_(Tensor(a!)[] self, Tensor[] tensors1, Scalar weight) -> ()",
                       _lerp, applies=_tern.lerp_op)
foreach_addcmul_op_ = _op("_foreach_addcmul_(Tensor(a!)[] self, Tensor[] tensor1, "
                          "Tensor[] tensor2, Scalar value) -> ()", _addcmul,
                          applies=_tern.addcmul_op)
foreach_addcdiv_op_ = _op("_foreach_addcdiv_(Tensor(a!)[] self, Tensor[] tensor1, "
                          "Tensor[] tensor2, Scalar value) -> ()", _addcdiv,
                          applies=_tern.addcdiv_op)
foreach_maximum_op_ = _op("_foreach_maximum_(Tensor(a!)[] self, Tensor[] other) -> ()",
                          _maximum, applies=_bin.binary_ops["maximum"][1])
foreach_sqrt_op = _op("_foreach_sqrt(Tensor[] self) -> Tensor[]", _sqrt)
fused_sgd_op_ = _op("_fused_sgd_(Tensor(a!)[] self, Tensor[] grads, "
                    "Tensor(b!)[] momentum_buffer_list, float weight_decay, float momentum, "
                    "float lr, float dampening, bool nesterov, bool maximize, "
                    "bool is_first_step) -> ()", _fused_sgd)
_ADAM_ARGS = ("(Tensor(a!)[] self, Tensor[] grads, Tensor(b!)[] exp_avgs, "
              "Tensor(c!)[] exp_avg_sqs, Tensor(d!)[] max_exp_avg_sqs, float[] steps, float lr, "
              "float beta1, float beta2, float weight_decay, float eps, bool amsgrad, "
              "bool maximize) -> ()")
fused_adam_op_ = _op("_fused_adam_" + _ADAM_ARGS, _adam_composite(False))
fused_adamw_op_ = _op("_fused_adamw_" + _ADAM_ARGS, _adam_composite(True))
fused_adam_capturable_op_ = _op(
    "_fused_adam_capturable_(Tensor(a!)[] self, Tensor[] grads, Tensor(b!)[] exp_avgs, "
    "Tensor(c!)[] exp_avg_sqs, Tensor(d!)[] max_exp_avg_sqs, Tensor(e!)[] state_steps, "
    "Tensor[] lr_tensor, float lr, float beta1, float beta2, float weight_decay, float eps, "
    "bool amsgrad, bool maximize, bool decoupled) -> ()", _adam_capturable_composite)


# -- the Python API (torch._foreach_*): checks, then one op ----------------------------------------
def _tensor_list(name, what, xs, n=None):
    xs = list(xs)
    if not all(isinstance(x, Tensor) for x in xs):
        bad = next(type(x).__name__ for x in xs if not isinstance(x, Tensor))
        raise TypeError(f"{name}(): argument '{what}' must be a list of Tensors, found {bad}")
    if n is not None and len(xs) != n:
        raise RuntimeError(f"{name}: Tensor lists must have the same number of tensors, got "
                           f"{n} and {len(xs)}")
    return xs


def _check_pairs(name, selfs, *lists):
    for other in lists:
        for a, b in zip(selfs, other):
            if a._shape != b._shape:
                raise RuntimeError(f"{name}: tensors of shapes {list(a._shape)} and "
                                   f"{list(b._shape)} do not match")
            if a.device is not b.device:
                raise RuntimeError(f"{name}: expected all tensors to be on the same device, "
                                   f"found {a.device} and {b.device}")


def _recorded(*lists):
    """True when autograd would record these tensors (grad mode on and one requires grad):
    then the single-tensor ops run, so each update is recorded like PyTorch's."""
    if not _keys.state.grad_enabled:
        return False
    return any(t.requires_grad for xs in lists for t in xs)


def _bump(*lists):
    for xs in lists:
        for t in xs:
            t._storage.version += 1


def _scalar(name, v):
    if isinstance(v, bool) or not isinstance(v, (int, float, complex)):
        raise TypeError(f"{name}(): expected a Python number, got {type(v).__name__}")
    return v


def _foreach_add_(self, other, alpha=1):
    """``torch._foreach_add_``: ``self[i] += alpha * other[i]`` (or ``+= other`` for a
    number)."""
    selfs = _tensor_list("_foreach_add_", "self", self)
    if isinstance(other, (int, float, complex)) and not isinstance(other, bool):
        if _recorded(selfs):
            return _add_scalar(selfs, other)
        foreach_add_scalar_op_(selfs, other)
    else:
        others = _tensor_list("_foreach_add_", "other", other, len(selfs))
        _check_pairs("_foreach_add_", selfs, others)
        if _recorded(selfs, others):
            return _add_list(selfs, others, alpha)
        foreach_add_op_(selfs, others, _scalar("_foreach_add_", alpha))
    _bump(selfs)


def _foreach_add(self, other, alpha=1):
    """``torch._foreach_add``: new tensors ``self[i] + alpha * other[i]``."""
    out = [t.clone() for t in _tensor_list("_foreach_add", "self", self)]
    _foreach_add_(out, other, alpha)
    return out


def _foreach_mul_(self, scalar):
    """``torch._foreach_mul_`` with a number, a list of tensors (``self[i] *= scalar[i]``), or
    a 0-d tensor on the tensors' device (a scale computed on the device, as
    ``clip_grad_norm_``'s): ``self[i] *= scalar``."""
    selfs = _tensor_list("_foreach_mul_", "self", self)
    if isinstance(scalar, (list, tuple)):
        return _list_op("_foreach_mul_", foreach_mul_list_op_, _mul_list, selfs, scalar)
    if isinstance(scalar, Tensor):
        if scalar.ndim != 0 or any(s.device is not scalar.device for s in selfs):
            raise RuntimeError(f"_foreach_mul_: a tensor scalar must be 0-d and on the "
                               f"tensors' device, got {list(scalar.shape)} on {scalar.device}")
        if _recorded(selfs, [scalar]):
            return _mul_tensor(selfs, scalar)
        foreach_mul_tensor_op_(selfs, scalar)
        _bump(selfs)
        return
    if _recorded(selfs):
        return _mul_scalar(selfs, scalar)
    foreach_mul_op_(selfs, _scalar("_foreach_mul_", scalar))
    _bump(selfs)


def _list_op(name, op, composite, selfs, other):
    """``self[i] (op)= other[i]`` over two lists of tensors that pair up."""
    others = _tensor_list(name, "other", other, len(selfs))
    _check_pairs(name, selfs, others)
    if _recorded(selfs, others):
        return composite(selfs, others)
    op(selfs, others)
    _bump(selfs)


def _foreach_norm(self, ord=2):
    """``torch._foreach_norm``: the vector norm of each tensor (0-d tensors), in one op."""
    selfs = _tensor_list("_foreach_norm", "self", self)
    if _recorded(selfs):
        return _norm(selfs, ord)
    return list(foreach_norm_op(selfs, float(ord)))


def _foreach_mul(self, scalar):
    out = [t.clone() for t in _tensor_list("_foreach_mul", "self", self)]
    _foreach_mul_(out, scalar)
    return out


def _foreach_div_(self, scalar):
    """``torch._foreach_div_`` with a number or a list of tensors: ``self[i] /= scalar``
    (``/= scalar[i]``)."""
    selfs = _tensor_list("_foreach_div_", "self", self)
    if isinstance(scalar, (list, tuple)):
        return _list_op("_foreach_div_", foreach_div_list_op_, _div_list, selfs, scalar)
    if _recorded(selfs):
        return _div_scalar(selfs, scalar)
    foreach_div_op_(selfs, _scalar("_foreach_div_", scalar))
    _bump(selfs)


def _foreach_lerp_(self, tensors1, weight):
    """``torch._foreach_lerp_`` with a number weight."""
    selfs = _tensor_list("_foreach_lerp_", "self", self)
    ends = _tensor_list("_foreach_lerp_", "tensors1", tensors1, len(selfs))
    _check_pairs("_foreach_lerp_", selfs, ends)
    if _recorded(selfs, ends):
        return _lerp(selfs, ends, weight)
    foreach_lerp_op_(selfs, ends, _scalar("_foreach_lerp_", weight))
    _bump(selfs)


def _ternary(name, op, composite):
    def fn(self, tensor1, tensor2, value=1):
        selfs = _tensor_list(name, "self", self)
        t1 = _tensor_list(name, "tensor1", tensor1, len(selfs))
        t2 = _tensor_list(name, "tensor2", tensor2, len(selfs))
        _check_pairs(name, selfs, t1, t2)
        if _recorded(selfs, t1, t2):
            return composite(selfs, t1, t2, value)
        op(selfs, t1, t2, _scalar(name, value))
        _bump(selfs)
    fn.__name__ = name
    fn.__doc__ = f"``torch.{name}`` with a number value."
    return fn


_foreach_addcmul_ = _ternary("_foreach_addcmul_", foreach_addcmul_op_, _addcmul)
_foreach_addcdiv_ = _ternary("_foreach_addcdiv_", foreach_addcdiv_op_, _addcdiv)


def _foreach_maximum_(self, other):
    """``torch._foreach_maximum_`` with a list."""
    selfs = _tensor_list("_foreach_maximum_", "self", self)
    others = _tensor_list("_foreach_maximum_", "other", other, len(selfs))
    _check_pairs("_foreach_maximum_", selfs, others)
    if _recorded(selfs, others):
        return _maximum(selfs, others)
    foreach_maximum_op_(selfs, others)
    _bump(selfs)


def _foreach_sqrt(self):
    """``torch._foreach_sqrt``: new tensors."""
    selfs = _tensor_list("_foreach_sqrt", "self", self)
    if _recorded(selfs):
        return _sqrt(selfs)
    return list(foreach_sqrt_op(selfs))


def _fused_sgd_(params, grads, momentum_buffer_list, *, weight_decay, momentum, lr, dampening,
                nesterov, maximize, is_first_step):
    """One SGD step over lists (``torch._fused_sgd_``; see the module docstring)."""
    params = _tensor_list("_fused_sgd_", "self", params)
    grads = _tensor_list("_fused_sgd_", "grads", grads, len(params))
    bufs = _tensor_list("_fused_sgd_", "momentum_buffer_list", momentum_buffer_list or [])
    if momentum != 0 and len(bufs) != len(params):
        raise RuntimeError("_fused_sgd_: momentum needs one buffer per parameter")
    _check_pairs("_fused_sgd_", params, grads, *([bufs] if bufs else []))
    with no_grad():
        fused_sgd_op_(params, grads, bufs, float(weight_decay), float(momentum), float(lr),
                      float(dampening), bool(nesterov), bool(maximize), bool(is_first_step))
    _bump(params, bufs)


def _adam_lists(name, params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, amsgrad):
    """A fused Adam op's tensor lists, checked: one of each per parameter (``max_exp_avg_sqs``
    only with ``amsgrad``), each paired with its parameter."""
    params = _tensor_list(name, "self", params)
    n = len(params)
    grads = _tensor_list(name, "grads", grads, n)
    exp_avgs = _tensor_list(name, "exp_avgs", exp_avgs, n)
    exp_avg_sqs = _tensor_list(name, "exp_avg_sqs", exp_avg_sqs, n)
    max_sqs = _tensor_list(name, "max_exp_avg_sqs", max_exp_avg_sqs or [],
                           n if amsgrad else None)
    _check_pairs(name, params, grads, exp_avgs, exp_avg_sqs, *([max_sqs] if amsgrad else []))
    return params, grads, exp_avgs, exp_avg_sqs, max_sqs


def _fused_adam_common(name, op):
    def fn(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps, *, lr, beta1, beta2,
           weight_decay, eps, amsgrad, maximize):
        params, grads, exp_avgs, exp_avg_sqs, max_sqs = _adam_lists(
            name, params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, amsgrad)
        steps = [float(s) for s in steps]
        if len(steps) != len(params):
            raise RuntimeError(f"{name}: expected {len(params)} step counts, got {len(steps)}")
        with no_grad():
            op(params, grads, exp_avgs, exp_avg_sqs, max_sqs, steps, float(lr), float(beta1),
               float(beta2), float(weight_decay), float(eps), bool(amsgrad), bool(maximize))
        _bump(params, exp_avgs, exp_avg_sqs, max_sqs)
    fn.__name__ = name
    fn.__doc__ = f"One {name[7:-1]} step over lists (``torch.{name}``; see the module docstring)."
    return fn


def _fused_adam_capturable_(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps,
                            *, lr, beta1, beta2, weight_decay, eps, amsgrad, maximize,
                            decoupled):
    """One Adam (``decoupled``: AdamW) step over lists with tensor step counts — PyTorch's
    capturable update as one op: each ``state_steps[i]`` (a 0-d tensor on the parameters'
    device) is incremented in place and the bias corrections are computed from it where it
    lives, as is a tensor ``lr``; nothing is read on the host, so a captured training step
    replays it as one node."""
    name = "_fused_adam_capturable_"
    params, grads, exp_avgs, exp_avg_sqs, max_sqs = _adam_lists(
        name, params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, amsgrad)
    n = len(params)
    steps = _tensor_list(name, "state_steps", state_steps, n)
    for p, s in zip(params, steps):
        if s.ndim != 0 or s.device is not p.device or not s.is_floating_point():
            raise RuntimeError(f"{name}: each step count must be a 0-d floating tensor on its "
                               f"parameter's device, got {list(s.shape)} {s.dtype} on "
                               f"{s.device} for a parameter on {p.device}")
    lr_tensor = []
    if isinstance(lr, Tensor):
        if lr.numel() != 1 or (n and lr.device is not params[0].device):
            raise RuntimeError(f"{name}: a tensor lr must have one element on the parameters' "
                               f"device, got {list(lr.shape)} on {lr.device}")
        lr_tensor, lr = [lr.reshape(())], 0.0
    with no_grad():
        fused_adam_capturable_op_(params, grads, exp_avgs, exp_avg_sqs, max_sqs, steps,
                                  lr_tensor, float(lr), float(beta1), float(beta2),
                                  float(weight_decay), float(eps), bool(amsgrad),
                                  bool(maximize), bool(decoupled))
    _bump(params, exp_avgs, exp_avg_sqs, max_sqs, steps)


_fused_adam_ = _fused_adam_common("_fused_adam_", fused_adam_op_)
_fused_adamw_ = _fused_adam_common("_fused_adamw_", fused_adamw_op_)
