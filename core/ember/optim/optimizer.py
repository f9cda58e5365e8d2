"""``Optimizer``: PyTorch's base class. Parameter groups, per-parameter state, step hooks and
state dicts in PyTorch's format (``{'state': {index: {...}}, 'param_groups': [{..., 'params':
[indices]}]}``).

Subclasses implement ``step(closure=None)``; the base wraps it (once per class, like PyTorch's
``profile_hook_step``) so that it runs under ``no_grad`` (grad mode on for optimizers built with
``differentiable=True``, like PyTorch's ``_use_grad_for_differentiable``) with the step hooks
around it.

Implementation flags, as PyTorch's optimizers take them: ``maximize`` is honoured everywhere;
``differentiable=True`` runs the step with autograd recording (non-leaf parameters allowed), so
a loss computed from the updated parameters differentiates through the update; ``foreach`` and
``fused`` are checked like PyTorch's (not both, ``fused`` not with ``differentiable``, ``fused``
only for floating-point parameters). SGD, Adam and AdamW run multi-tensor updates
(``implementation``: ``_foreach_*`` ops by default, ``_fused_*`` ops with ``fused=True``); the
other optimizers run their single-tensor update whatever the flags. ``capturable=True`` (Adam,
AdamW, RMSprop; and every step inside an ``ember.compile`` capture, Adagrad included) keeps the
step count as a tensor beside the parameters and does the bias corrections in tensor ops, so no
value is read on the host and ``mode="reduce-overhead"`` captures the whole step; a learning
rate may be a 1-element tensor, which schedulers update in place.
"""
from __future__ import annotations

import functools
import itertools
import warnings
from collections import OrderedDict, defaultdict
from copy import deepcopy

from .. import _dtype
from .._tensor import Tensor
from ..dispatch.grad_mode import enable_grad, set_grad_enabled
from ..autograd.tensor_api import zero_grads
from ..ops.foreach import decayed_grad  # (re-exported for the optimizers)
from ..utils.hooks import RemovableHandle
from ..compiler import is_compiling
from ..ops.factories import tensor, zeros_like
from .._warn import user_stacklevel

__all__ = ["Optimizer", "required", "register_optimizer_step_pre_hook",
           "register_optimizer_step_post_hook"]


class _RequiredParameter:
    """Singleton marking a hyper-parameter that every parameter group must give."""

    def __repr__(self):
        return "<required parameter>"


required = _RequiredParameter()


_global_pre_hooks: OrderedDict = OrderedDict()
_global_post_hooks: OrderedDict = OrderedDict()


def register_optimizer_step_pre_hook(hook):
    """``hook(optimizer, args, kwargs)`` before every optimizer's step."""
    handle = RemovableHandle(_global_pre_hooks)
    _global_pre_hooks[handle.id] = hook
    return handle


def register_optimizer_step_post_hook(hook):
    """``hook(optimizer, args, kwargs)`` after every optimizer's step."""
    handle = RemovableHandle(_global_post_hooks)
    _global_post_hooks[handle.id] = hook
    return handle


def _hooked_step(func):
    @functools.wraps(func)
    def wrapper(self, *args, **kwargs):
        for pre in itertools.chain(_global_pre_hooks.values(),
                                   self._optimizer_step_pre_hooks.values()):
            result = pre(self, args, kwargs)
            if result is not None:
                if isinstance(result, tuple) and len(result) == 2:
                    args, kwargs = result
                else:
                    raise RuntimeError(f"{func} must return None or a tuple of (new_args, "
                                       f"new_kwargs), but got {result}.")
        with set_grad_enabled(bool(self.defaults.get("differentiable", False))):
            out = func(self, *args, **kwargs)
        # lr schedulers read this to warn when they are stepped before the optimizer
        self._opt_called = True
        for post in itertools.chain(self._optimizer_step_post_hooks.values(),
                                    _global_post_hooks.values()):
            post(self, args, kwargs)
        return out
    wrapper.hooked = True
    return wrapper


def _typename(obj):
    if isinstance(obj, Tensor):
        return f"ember.Tensor (dtype {obj.dtype.name}, device {obj.device})"
    return type(obj).__module__ + "." + type(obj).__qualname__


class Optimizer:
    def __init__(self, params, defaults):
        self.defaults = defaults
        self._optimizer_step_pre_hooks = OrderedDict()
        self._optimizer_step_post_hooks = OrderedDict()
        self._patch_step_function()
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of "
                            "Tensors or dicts, but got " + _typename(params))
        self.state = defaultdict(dict)
        self.param_groups = []
        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for group in param_groups:
            self.add_param_group(group)

    def _patch_step_function(self):
        cls = self.__class__
        if not getattr(cls.step, "hooked", False):
            cls.step = _hooked_step(cls.step)

    def __getstate__(self):
        return {"defaults": self.defaults, "state": self.state,
                "param_groups": self.param_groups}

    # options a group saved by an older version may lack, filled in when a state is loaded
    # (PyTorch's per-optimizer __setstate__ setdefaults)
    _group_defaults = {}

    def __setstate__(self, state):
        self.__dict__.update(state)
        self.__dict__.setdefault("_optimizer_step_pre_hooks", OrderedDict())
        self.__dict__.setdefault("_optimizer_step_post_hooks", OrderedDict())
        self._patch_step_function()
        for group in self.__dict__.get("param_groups", ()):
            for key, default in self._group_defaults.items():
                group.setdefault(key, default)

    def __repr__(self):
        s = self.__class__.__name__ + " ("
        for i, group in enumerate(self.param_groups):
            s += f"\nParameter Group {i}\n"
            for key in sorted(group.keys()):
                if key != "params":
                    s += f"    {key}: {group[key]}\n"
        return s + ")"

    # -- hooks ----------------------------------------------------------------------------------
    def register_step_pre_hook(self, hook):
        """``hook(optimizer, args, kwargs)`` runs before ``step``; it may return a new
        ``(args, kwargs)`` pair."""
        handle = RemovableHandle(self._optimizer_step_pre_hooks)
        self._optimizer_step_pre_hooks[handle.id] = hook
        return handle

    def register_step_post_hook(self, hook):
        """``hook(optimizer, args, kwargs)`` runs after ``step``."""
        handle = RemovableHandle(self._optimizer_step_post_hooks)
        self._optimizer_step_post_hooks[handle.id] = hook
        return handle

    # -- parameter groups -----------------------------------------------------------------------
    def add_param_group(self, param_group):
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group)}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            params = [params]
        elif isinstance(params, (set, frozenset)):
            raise TypeError("optimizer parameters need to be organized in ordered collections, "
                            "but the ordering of tensors in sets will change between runs. "
                            "Please use a list instead.")
        else:
            params = list(params)
        names = [p[0] for p in params if isinstance(p, tuple)]
        tensors = [p[1] if isinstance(p, tuple) else p for p in params]
        param_group["params"] = tensors
        if names:
            if len(names) != len(tensors):
                raise ValueError("all optimizer params should be with/without names. Some param "
                                 "names are missing")
            param_group["param_names"] = names
        for p in tensors:
            if not isinstance(p, Tensor):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is "
                                + _typename(p))
            if not (p.is_leaf or p.retains_grad or self.defaults.get("differentiable")):
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(f"parameter group didn't specify a value of required "
                                 f"optimization parameter {name}")
            param_group.setdefault(name, default)
        if len(tensors) != len(set(tensors)):
            warnings.warn("optimizer contains a parameter group with duplicate parameters; in "
                          "future, this will cause an error; see github.com/pytorch/pytorch/"
                          "issues/40967 for more information", stacklevel=user_stacklevel())
        seen = set()
        for group in self.param_groups:
            seen.update(group["params"])
            if ("param_names" in param_group) != ("param_names" in group):
                which = "with names" if "param_names" in param_group else "without names"
                raise ValueError(f"all optimizer param groups should be with/without names. "
                                 f"cannot add param group {which} to the optimizer")
        if not seen.isdisjoint(tensors):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    def zero_grad(self, set_to_none=True):
        zero_grads((p for group in self.param_groups for p in group["params"]), set_to_none)

    def step(self, closure=None):
        """One update of every parameter that has a gradient; returns ``closure()``'s loss.
        The built-in optimizers write only the per-group update, ``_step_group``; an optimizer
        written for PyTorch overrides ``step`` itself."""
        if type(self)._step_group is Optimizer._step_group:
            raise NotImplementedError(f"{type(self).__name__} does not define step(); optimizers "
                                      f"subclass Optimizer and implement step(closure=None)")
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            pairs = grads_of(group, type(self).__name__)
            self._step_group(group, [p for p, _ in pairs], [g for _, g in pairs])
        return loss

    def _step_group(self, group, params, grads):
        """Update one parameter group's ``params`` (those with a gradient) from ``grads``."""
        raise NotImplementedError

    def _lazy_state(self, p, zeros=(), **scalars):
        """``p``'s state, made on its first step: a step counter, each of ``scalars`` as a
        host scalar (``step_counter``) and a zero tensor like ``p`` for each key in ``zeros``."""
        state = self.state[p]
        if len(state) == 0:
            state["step"] = step_counter()
            for key, value in scalars.items():
                state[key] = step_counter(value)
            for key in zeros:
                state[key] = zeros_state(p)
        return state

    def _closure_loss(self, closure):
        if closure is None:
            return None
        with enable_grad():
            return closure()

    # -- state dicts ----------------------------------------------------------------------------
    def state_dict(self):
        mapping = {}
        start = 0

        def pack(group):
            nonlocal start
            packed = {k: v for k, v in group.items() if k != "params"}
            for i, p in enumerate(group["params"], start):
                mapping.setdefault(id(p), i)
            packed["params"] = [mapping[id(p)] for p in group["params"]]
            start += len(packed["params"])
            return packed

        groups = [pack(g) for g in self.param_groups]
        state = {(mapping[id(k)] if isinstance(k, Tensor) else k): v
                 for k, v in self.state.items()}
        return {"state": state, "param_groups": groups}

    # state entries that are host scalars (never moved to the parameter's device or dtype)
    _host_state_keys = ("step",)

    @classmethod
    def _cast_state(cls, param, value, key=None):
        """A saved state value as this parameter's state: floating state follows the parameter's
        dtype and device; 'step' (and the class's other host scalars) stay as saved on the host,
        like PyTorch's non-capturable step counters."""
        if isinstance(value, Tensor):
            if key in cls._host_state_keys:
                return value.to("cpu") if value.device.type != "cpu" else value.clone()
            if param.is_floating_point():
                out = value.to(device=param.device, dtype=param.dtype)
            else:
                out = value.to(device=param.device)
            # never alias the caller's tensors: this optimizer updates its state in place
            return out.clone() if out is value else out
        if isinstance(value, dict):
            return {k: cls._cast_state(param, v, k) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return type(value)(cls._cast_state(param, v) for v in value)
        return value

    def load_state_dict(self, state_dict):
        if not isinstance(state_dict, dict) or "state" not in state_dict or \
                "param_groups" not in state_dict:
            raise ValueError(f"{type(self).__name__}.load_state_dict: expected a dict with keys "
                             f"'state' and 'param_groups' (from Optimizer.state_dict()), got "
                             f"{_typename(state_dict)}")
        groups = self.param_groups
        saved_groups = deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError(f"loaded state dict has a different number of parameter groups "
                             f"({len(saved_groups)}) than the optimizer ({len(groups)})")
        for i, (g, sg) in enumerate(zip(groups, saved_groups)):
            if len(g["params"]) != len(sg["params"]):
                raise ValueError(f"loaded state dict contains a parameter group that doesn't "
                                 f"match the size of optimizer's group: group {i} has "
                                 f"{len(sg['params'])} parameters saved, "
                                 f"{len(g['params'])} in the optimizer")
        id_map = dict(zip(itertools.chain.from_iterable(g["params"] for g in saved_groups),
                          itertools.chain.from_iterable(g["params"] for g in groups)))
        state = defaultdict(dict)
        for k, v in state_dict["state"].items():
            if k in id_map:
                state[id_map[k]] = self._cast_state(id_map[k], v)
            else:
                state[k] = v
        new_groups = []
        for g, sg in zip(groups, saved_groups):
            sg["params"] = g["params"]
            if "param_names" in g and "param_names" not in sg:
                sg["param_names"] = g["param_names"]
            new_groups.append(sg)
        # like PyTorch: through __setstate__, so options a saved group lacks (a state dict from
        # an older version) get the subclass's defaults
        self.__setstate__({"state": state, "param_groups": new_groups})


# -- helpers shared by the optimizers ---------------------------------------------------------
def check_hparams(name, lr, tensor_lr=False, **nonneg):
    """PyTorch's argument checks: lr >= 0 (a number, or — for the optimizers that take one,
    ``tensor_lr`` — a 1-element tensor that schedulers update in place, so a compiled step
    reads the current rate) and each listed value >= 0."""
    if isinstance(lr, Tensor):
        if not tensor_lr:
            raise TypeError(f"{name}: lr must be a Python number, got a Tensor (ember's SGD, "
                            f"Adam, AdamW, RMSprop, Adagrad and LBFGS take a tensor lr)")
        if lr.numel() != 1:
            raise ValueError(f"{name}: Tensor lr must be 1-element, got shape {list(lr.shape)}")
        if not lr.is_floating_point():
            raise TypeError(f"{name}: Tensor lr must be floating point, got {lr.dtype}")
        if not 0.0 <= float(lr.detach().reshape(()).item()):
            raise ValueError(f"Invalid learning rate: {lr}")
    elif not 0.0 <= lr:
        raise ValueError(f"Invalid learning rate: {lr}")
    labels = {"eps": "epsilon value", "initial_accumulator_value":
              "initial_accumulator_value value"}
    for key, value in nonneg.items():
        if not 0.0 <= value:
            raise ValueError(f"Invalid {labels.get(key, key + ' value')}: {value}")


def check_impl_flags(foreach=None, fused=None, differentiable=False):
    """PyTorch's checks of the implementation flags (see the module docstring)."""
    if fused and foreach:
        raise RuntimeError("`fused` and `foreach` cannot be `True` together.")
    if fused and differentiable:
        raise RuntimeError("`fused` does not support `differentiable`")


def implementation(group) -> str:
    """Which update a param group runs: "fused" (``fused=True``: one fused op per group),
    "single" (``foreach=False`` or ``differentiable=True``: one parameter at a time, every op
    recorded when differentiable) or "foreach" (the default: a few multi-tensor ops per group).
    PyTorch defaults to foreach on accelerators only; ember's multi-tensor ops are faster on
    every backend, CPU included, and give the same results, so foreach is ember's default
    everywhere."""
    if group.get("fused"):
        return "fused"
    if group.get("foreach") is False or group.get("differentiable"):
        return "single"
    return "foreach"


def check_betas(betas):
    betas = tuple(betas)
    if len(betas) != 2:
        raise ValueError(f"betas must be a pair (beta1, beta2), got {betas}")
    for i, b in enumerate(betas):
        if not 0.0 <= b < 1.0:
            raise ValueError(f"Invalid beta parameter at index {i}: {b}")
    return betas


def impl_defaults(foreach=None, fused=None, differentiable=False, capturable=None):
    """The implementation-flag entries of a param group (the keys PyTorch's groups carry;
    ``None`` for a flag the optimizer does not take)."""
    out = {"foreach": foreach, "differentiable": differentiable}
    if capturable is not None:
        out["capturable"] = capturable
    if fused is not False:
        out["fused"] = fused
    return out


def grads_of(group, name):
    """(param, grad) pairs of a group's parameters that have a gradient."""
    out = []
    for p in group["params"]:
        g = p.grad
        if g is None:
            continue
        if group.get("fused") and not p.is_floating_point():
            raise RuntimeError(f"`fused=True` requires all the params to be floating point "
                               f"Tensors, but {name} got one of dtype {p.dtype.name}")
        if g.device is not p.device or g._shape != p._shape:
            raise RuntimeError(f"{name}.step: a parameter of shape {list(p.shape)} on "
                               f"{p.device} has a gradient of shape {list(g.shape)} on "
                               f"{g.device}; they must match")
        out.append((p, g))
    return out


def step_counter(value=0.0, param=None):
    """A fresh 'step' state entry (or another host scalar of the state): a 0-d host tensor,
    like PyTorch (float64 when that is the default dtype). It stays on the CPU, so reading it
    never synchronizes a device — unless ``param`` is given (``capturable=True``: the count
    lives beside the parameter, like PyTorch's capturable counters; float32, or float64 for
    double-precision parameters so their bias corrections keep double precision)."""
    if param is not None:
        wide = param.dtype in (_dtype.float64, _dtype.complex128)
        return tensor(value, dtype=_dtype.float64 if wide else _dtype.float32,
                      device=param.device)
    d = _dtype.float64 if _dtype.get_default_dtype() is _dtype.float64 else _dtype.float32
    # on the CPU even under set_default_device: each step reads it back (bump)
    return tensor(value, dtype=d, device="cpu")


def tensor_steps(group):
    """Whether this step keeps its step counts and learning rate as tensors (PyTorch's
    ``capturable`` semantics: no host read, so ``ember.compile`` captures the whole step):
    with ``capturable=True``, and always inside an ``ember.compile`` capture, as PyTorch's
    optimizers do under ``torch.compile``."""
    if group.get("capturable"):
        return True
    return is_compiling()


def bump_tensor(step_t, device):
    """Increment a step counter in place; its value as a tensor on ``device`` (no host read)."""
    step_t.add_(1)
    return step_t if step_t.device == device else step_t.to(device)


def lr_on(lr, device):
    """The learning rate for ``device``'s parameters: a number, or a tensor on that device."""
    if isinstance(lr, Tensor) and lr.device != device:
        return lr.to(device)
    return lr


def host_lr(group):
    """The group's learning rate as a Python number (a tensor lr is read on the host)."""
    lr = group["lr"]
    return float(lr.item()) if isinstance(lr, Tensor) else lr


def add_scaled_(t, update, lr):
    """``t -= lr * update`` for a number or tensor ``lr``."""
    if isinstance(lr, Tensor):
        return t.sub_(update * lr)
    return t.add_(update, alpha=-lr)


def host_value(t):
    """A host scalar of the state (a 0-d tensor, or a number from an old state dict) as a
    Python float."""
    return float(t.item()) if isinstance(t, Tensor) else float(t)


def zeros_state(p):
    return zeros_like(p)


def neg_if(grad, maximize):
    return -grad if maximize else grad


def bump(step_t):
    """Increment a step counter in place and return its value as a Python float."""
    step_t.add_(1)
    return float(step_t.item())


def as_real(t):
    """``view_as_real`` for complex tensors (a float view with a trailing dimension of 2, sharing
    storage); real tensors pass through. PyTorch's Adam/RMSprop/Adagrad treat complex parameters
    as pairs of reals this way."""
    if t.dtype.category != _dtype.COMPLEX:
        return t
    real = _dtype.float32 if t.dtype is _dtype.complex64 else _dtype.float64
    return Tensor._make(t._storage, tuple(t._shape) + (2,),
                        tuple(s * 2 for s in t._stride) + (1,), t._offset * 2, real, t.device)


def add_scalar(t, value, differentiable):
    """``t + value``, in place on the temporary ``t`` unless the step is differentiable (then
    ``t`` may be saved for backward, e.g. the output of ``sqrt``)."""
    return t + value if differentiable else t.add_(value)


def addcmul_(t, a, b, value):
    """``t.addcmul_(a, b, value=value)``: t += value * a * b."""
    return t.addcmul_(a, b, value=value)


def addcdiv_(t, a, b, value):
    """``t.addcdiv_(a, b, value=value)``: t += value * a / b."""
    return t.addcdiv_(a, b, value=value)


def lerp_(t, end, weight):
    """``t.lerp_(end, weight)`` (PyTorch's two-sided formula, exact at both ends)."""
    return t.lerp_(end, weight)


def adam_moments_(p, grad, exp_avg, exp_avg_sq, step_t, *, beta1, beta2, weight_decay,
                  maximize, decoupled, lr):
    """The start Adam, NAdam and RAdam share: count the step, apply weight decay (L2 or
    decoupled) and maximize, and update the first moment and the second moment (the running
    average of squared gradients). Returns the step count and the real views (``as_real``) of
    the parameter, decayed gradient and both moments."""
    step = bump(step_t)
    grad = decayed_grad(p, grad, weight_decay, maximize, decoupled, lr)
    param, grad = as_real(p), as_real(grad)
    exp_avg, exp_avg_sq = as_real(exp_avg), as_real(exp_avg_sq)
    lerp_(exp_avg, grad, 1 - beta1)
    addcmul_(exp_avg_sq.mul_(beta2), grad, grad, 1 - beta2)
    return step, param, grad, exp_avg, exp_avg_sq


def check_state_steps(state_steps):
    """PyTorch's check at the top of the functional optimizers (``torch.optim.adam.adam``, …):
    step counts are 0-d tensors, not numbers (the API before PyTorch 1.12)."""
    if not all(isinstance(t, Tensor) for t in state_steps):
        raise RuntimeError("API has changed, `state_steps` argument must contain a list of "
                           "singleton tensors")


def check_no_grad_scaling(name, grad_scale, found_inf):
    """ember's fused steps take no AMP scale: refuse one rather than ignore it."""
    if grad_scale is not None or found_inf is not None:
        raise RuntimeError(f"{name}: ember's optimizer steps take no grad_scale/found_inf "
                           f"(unscale the gradients first, e.g. with GradScaler.unscale_)")


def functional_implementation(foreach, fused, differentiable=False):
    """``implementation`` for the functional forms' flags: the same choice a param group with
    these flags gets (foreach when neither is given, as ember's optimizers default)."""
    return implementation({"foreach": foreach, "fused": fused, "differentiable": differentiable})
