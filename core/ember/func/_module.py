"""Modules as functions of their state: ``functional_call``, ``stack_module_state`` and
``replace_all_batch_norm_modules_`` (``torch.func``'s)."""
from __future__ import annotations

import contextlib

from .._tensor import Tensor
from ..dispatch.grad_mode import no_grad
from ..ops.shape import stack


def _get_owner(module, dotted):
    path, _, name = dotted.rpartition(".")
    owner = module
    for part in path.split(".") if path else ():
        sub = owner._modules.get(part) if hasattr(owner, "_modules") else None
        if sub is None:
            return None, name
        owner = sub
    return owner, name


def _tied_names(module):
    """name -> every name of the same tensor (tied weights), for parameters and buffers."""
    groups = {}
    for n, t in list(module.named_parameters(remove_duplicate=False)) + \
            list(module.named_buffers(remove_duplicate=False)):
        groups.setdefault(id(t), []).append(n)
    out = {}
    for names in groups.values():
        for n in names:
            out[n] = names
    return out


@contextlib.contextmanager
def _reparametrized(module, values, tie_weights, strict):
    expected = set(n for n, _ in module.named_parameters(remove_duplicate=False)) | \
        set(n for n, _ in module.named_buffers(remove_duplicate=False))
    values = dict(values)
    if tie_weights:
        tied = _tied_names(module)
        for name in list(values):
            group = tied.get(name, [name])
            given = [n for n in group if n in values]
            if len(given) > 1 and any(values[n] is not values[given[0]] for n in given[1:]):
                raise ValueError(f"functional_call got multiple values for keys {sorted(given)}, "
                                 f"which are tied. Consider using tie_weights=False")
            for n in group:
                values.setdefault(n, values[name])
    if strict:
        missing = sorted(expected - set(values))
        unexpected = sorted(set(values) - expected)
        if missing or unexpected:
            parts = []
            if unexpected:
                parts.append("\tUnexpected key(s): " + ", ".join(repr(k) for k in unexpected) +
                             ".")
            if missing:
                parts.append("\tMissing key(s): " + ", ".join(repr(k) for k in missing) + ".")
            raise RuntimeError(f"Error(s) in reparametrizing for {module._get_name()}:\n" +
                               "\n".join(parts))
    saved = []
    try:
        for name, value in values.items():
            owner, attr = _get_owner(module, name)
            if owner is None:
                raise AttributeError(f"functional_call: {module._get_name()} has no submodule "
                                     f"for key '{name}'")
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"functional_call: the value for '{name}' must be a Tensor, got "
                                f"{type(value).__name__}")
            if attr in owner._parameters:
                saved.append((owner._parameters, attr, owner._parameters[attr]))
                owner._parameters[attr] = value
            elif attr in owner._buffers:
                saved.append((owner._buffers, attr, owner._buffers[attr]))
                owner._buffers[attr] = value
            else:
                had = attr in owner.__dict__
                saved.append((owner.__dict__, attr, owner.__dict__.get(attr) if had else _ABSENT))
                owner.__dict__[attr] = value
        yield
    finally:
        for store, attr, old in reversed(saved):
            if old is _ABSENT:
                store.pop(attr, None)
            else:
                store[attr] = old


_ABSENT = object()


def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *,
                    tie_weights=True, strict=False):
    """Call ``module`` with its parameters and buffers replaced by the given tensors (a dict,
    or a tuple/list of dicts with distinct keys) for the duration of the call."""
    if isinstance(parameter_and_buffer_dicts, dict):
        values = parameter_and_buffer_dicts
    elif isinstance(parameter_and_buffer_dicts, (list, tuple)):
        if not all(isinstance(d, dict) for d in parameter_and_buffer_dicts):
            raise ValueError("Expected all elements of parameter_and_buffer_dicts to be "
                             "dictionaries")
        counts = {}
        for d in parameter_and_buffer_dicts:
            for k in d:
                counts[k] = counts.get(k, 0) + 1
        repeated = [k for k, n in counts.items() if n > 1]
        if repeated:
            raise ValueError(f"{repeated} appeared in multiple dictionaries; behavior of "
                             f"functional call is ambiguous")
        values = {k: v for d in parameter_and_buffer_dicts for k, v in d.items()}
    else:
        raise ValueError(f"Expected parameter_and_buffer_dicts to be a dict, or a list/tuple of "
                         f"dicts, but got {type(parameter_and_buffer_dicts)}")
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    with _reparametrized(module, values, tie_weights, strict):
        return module(*args, **(kwargs or {}))


def stack_module_state(models):
    """``(params, buffers)``: each model's parameters and buffers stacked along a new dim 0, by
    name, for running an ensemble with ``vmap(functional_call)``."""
    models = list(models)
    if not models:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if not (all(m.training for m in models) or all(not m.training for m in models)):
        raise RuntimeError("stack_module_state: Expected all models to have the same "
                           "training/eval mode.")
    if not all(type(m) is type(models[0]) for m in models):
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")
    all_params = [dict(m.named_parameters()) for m in models]
    params = {k: _stacked([p[k] for p in all_params], k) for k in all_params[0]}
    all_buffers = [dict(m.named_buffers()) for m in models]
    buffers = {k: _stacked([b[k] for b in all_buffers], k) for k in all_buffers[0]}
    return params, buffers


def _stacked(tensors, name):
    all_req = all(t.requires_grad for t in tensors)
    if not all_req and any(t.requires_grad for t in tensors):
        raise RuntimeError(f"Expected {name} from each model to have the same .requires_grad")
    with no_grad():
        result = stack([t.detach() for t in tensors])
    if all_req:
        result.requires_grad_()
    return result


def replace_all_batch_norm_modules_(root):
    """In place: every batch norm module under ``root`` stops tracking running statistics (it
    normalizes with the batch's own), so it can run under ``vmap``. Returns ``root``."""
    for module in root.modules():
        if _is_batch_norm(module) and getattr(module, "track_running_stats", False):
            module.running_mean = None
            module.running_var = None
            module.num_batches_tracked = None
            module.track_running_stats = False
    return root


def _is_batch_norm(module) -> bool:
    try:
        # layering: ember.func stays below ember.nn
        from ..nn.modules.normalization import _BatchNorm
    except ImportError:  # moved: recognise it by what it holds
        _BatchNorm = None
    if _BatchNorm is not None and isinstance(module, _BatchNorm):
        return True
    return type(module).__name__.startswith("BatchNorm") and hasattr(module, "running_mean")
