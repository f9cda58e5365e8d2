"""Moving samples and callables between torch and ember.

A torch sample tensor becomes an ember tensor over a copy of the same storage span, viewed with
the same sizes, strides and storage offset, so a non-contiguous, expanded or offset sample stays
one in ember. Leaves that require grad stay leaves that require grad.

A callable an OpInfo names is found at its public torch path (``torch.nn.functional.relu``) and
looked up at the same ember path; the small lambdas PyTorch's database writes inline
(``lambda x, n: torch.polygamma(n, x)``) are rebound so that their global ``torch`` is ``ember``.
"""
from __future__ import annotations

import contextlib
import functools
import types

import numpy as np
import torch

import ember

# torch namespaces whose public callables OpInfos name, walked in this order (first path wins)
NAMESPACES = ("torch", "torch.Tensor", "torch.nn.functional", "torch.linalg", "torch.fft",
              "torch.special", "torch.masked", "torch.signal.windows", "torch.nn.init",
              "torch.sparse", "torch.func", "torch.autograd", "torch.functional")


class MissingName(AttributeError):
    """ember lacks the public name torch's callable lives at."""

    def __init__(self, path):
        super().__init__(f"ember has no {path.replace('torch', 'ember', 1)} (torch: {path})")
        self.path = path


class Unresolvable(LookupError):
    """A torch callable at no public path (an aten overload, a jiterator function)."""


# ---------------------------------------------------------------- dtypes, devices, values

def ember_dtype(dtype):
    return getattr(ember, str(dtype).split(".")[-1])


def torch_dtype(dtype):
    return getattr(torch, str(dtype).split(".")[-1])


_MEMORY_FORMATS = {torch.contiguous_format: "contiguous_format",
                   torch.channels_last: "channels_last",
                   torch.channels_last_3d: "channels_last_3d",
                   torch.preserve_format: "preserve_format"}


def tensor_to_ember(t, device="cpu"):
    """An ember tensor with ``t``'s values, sizes, strides and storage offset, on ``device``."""
    requires_grad = t.requires_grad
    t = t.detach()
    if t.is_conj():
        t = t.resolve_conj()
    if t.is_neg():
        t = t.resolve_neg()
    if t.layout != torch.strided:
        raise NotImplementedError(f"torch layout {t.layout} has no ember conversion here")
    size, stride, offset = tuple(t.shape), tuple(t.stride()), t.storage_offset()
    span = offset + (1 + sum((s - 1) * st for s, st in zip(size, stride)) if t.numel() else 0)
    flat = torch.as_strided(t, (span,), (1,), 0)
    if flat.dtype == torch.bfloat16:       # numpy has no bfloat16: go through float32 (exact)
        base = ember.from_numpy(flat.float().numpy().copy()).to(ember.bfloat16)
    else:
        base = ember.from_numpy(flat.numpy().copy())
    if device != "cpu":
        base = base.to(device)
    out = base.as_strided(size, stride, offset).detach()
    if requires_grad:
        out.requires_grad_(True)
    return out


def tensor_copy(t):
    """A torch tensor like ``t`` (same layout, fresh storage, a leaf again if it required grad)."""
    if t.layout != torch.strided:
        return t.detach().clone().requires_grad_(t.requires_grad)
    d = t.detach()
    if d.is_conj() or d.is_neg():
        return d.clone().requires_grad_(t.requires_grad)
    size, stride, offset = tuple(d.shape), tuple(d.stride()), d.storage_offset()
    span = offset + (1 + sum((s - 1) * st for s, st in zip(size, stride)) if d.numel() else 0)
    flat = torch.as_strided(d, (span,), (1,), 0).clone()
    return flat.as_strided(size, stride, offset).detach().requires_grad_(t.requires_grad)


def to_ember(obj, device="cpu", memo=None):
    """A torch sample argument as ember's: tensors (same layout), dtypes, devices, formats.
    A tensor that occurs more than once (``loss(x, x)``) becomes one ember tensor, so its
    gradient sums every use as torch's does; pass one ``memo`` dict to several calls to keep
    that across them."""
    memo = {} if memo is None else memo
    if isinstance(obj, torch.Tensor):
        if id(obj) not in memo:
            memo[id(obj)] = (obj, tensor_to_ember(obj, device))
        return memo[id(obj)][1]
    if isinstance(obj, torch.dtype):
        return ember_dtype(obj)
    if isinstance(obj, torch.device):
        return ember.device(device) if obj.type == "cpu" else ember.device(str(obj))
    if isinstance(obj, str) and obj == "cpu":
        return device
    if isinstance(obj, torch.memory_format):
        return getattr(ember, _MEMORY_FORMATS[obj])
    if isinstance(obj, torch.layout):
        return getattr(ember, str(obj).split(".")[-1])
    if isinstance(obj, torch.Size):
        return tuple(obj)
    if isinstance(obj, torch.Generator):
        g = ember.Generator(device)
        g.manual_seed(obj.initial_seed())
        return g
    if isinstance(obj, list):
        return [to_ember(x, device, memo) for x in obj]
    if isinstance(obj, tuple):
        items = [to_ember(x, device, memo) for x in obj]
        return type(obj)(*items) if hasattr(obj, "_fields") else tuple(items)
    if isinstance(obj, dict):
        return {k: to_ember(v, device, memo) for k, v in obj.items()}
    if isinstance(obj, torch.nn.Module):
        return module_to_ember(obj, device)
    if isinstance(obj, (types.FunctionType, types.BuiltinFunctionType)) and \
            torch_path(obj) is not None:         # distance_function=F.pairwise_distance & co
        return ember_callable(obj)
    return obj


@contextlib.contextmanager
def recording_init():
    """While active, every torch.nn module notes its constructor arguments (``_oracle_ctor``),
    so that a module a sample or a constructor receives can be rebuilt in ember."""
    classes = [c for c in vars(torch.nn).values()
               if isinstance(c, type) and issubclass(c, torch.nn.Module)]
    saved = {c: c.__dict__.get("__init__") for c in classes}

    def wrap(init):
        @functools.wraps(init)
        def __init__(self, *args, **kwargs):
            if "_oracle_ctor" not in self.__dict__:
                object.__setattr__(self, "_oracle_ctor", (type(self), args, kwargs))
            init(self, *args, **kwargs)
        return __init__

    for c, init in saved.items():
        if init is not None:
            c.__init__ = wrap(init)
    try:
        yield
    finally:
        for c, init in saved.items():
            if init is not None:
                c.__init__ = init


def module_to_ember(m, device="cpu"):
    """ember's module of the same class, constructor arguments and parameter values."""
    ctor = m.__dict__.get("_oracle_ctor")
    if ctor is None:
        raise NotImplementedError(f"{type(m).__name__} was not built under recording_init()")
    cls, args, kwargs = ctor
    em = ember_at(f"torch.nn.{cls.__name__}")(*to_ember(args, device), **to_ember(kwargs, device))
    em = em.to(device)
    values = dict(em.named_parameters()) | dict(em.named_buffers())
    with ember.no_grad():
        for name, t in list(m.named_parameters()) + list(m.named_buffers()):
            if t is not None and values.get(name) is not None:
                values[name].copy_(tensor_to_ember(t.detach(), device))
    em.train(m.training)
    return em


def copy_torch(obj):
    """A deep copy of a torch sample argument whose tensors keep their layout (for in-place use)."""
    if isinstance(obj, torch.Tensor):
        return tensor_copy(obj)
    if isinstance(obj, list):
        return [copy_torch(x) for x in obj]
    if isinstance(obj, tuple):
        items = [copy_torch(x) for x in obj]
        return type(obj)(*items) if hasattr(obj, "_fields") else tuple(items)
    if isinstance(obj, dict):
        return {k: copy_torch(v) for k, v in obj.items()}
    return obj


def ember_to_torch(x):
    """An ember tensor's values as a CPU torch tensor of the same dtype and shape."""
    x = x.detach().cpu()
    if x.dtype == ember.bfloat16:
        return torch.from_numpy(np.array(x.float().numpy())).to(torch.bfloat16)
    return torch.from_numpy(np.array(x.numpy()))


# ---------------------------------------------------------------- callables

@functools.lru_cache(maxsize=None)
def _torch_paths():
    """id(torch object) -> every public path it has in NAMESPACES."""
    import importlib
    paths: dict[int, list[str]] = {}
    keep = []       # hold the objects so their ids stay theirs
    for ns in NAMESPACES:
        if ns == "torch.Tensor":
            obj, names = torch.Tensor, dir(torch.Tensor)
        else:
            try:
                obj = importlib.import_module(ns)
            except ImportError:
                continue
            names = [n for n in dir(obj) if not n.startswith("_")]
        for name in names:
            try:
                value = getattr(obj, name)
            except Exception:
                continue
            if not callable(value) or isinstance(value, type) and ns != "torch.Tensor":
                continue
            keep.append(value)
            paths.setdefault(id(value), []).append(f"{ns}.{name}")
    _torch_paths.keep = keep
    return paths


def torch_path(fn, hint=None):
    """fn's public torch path, preferring one whose last part is ``hint``'s last part."""
    candidates = _torch_paths().get(id(fn))
    if not candidates:
        return None
    if hint:
        tail = hint.split(".")[-1]
        for p in candidates:
            if p.split(".")[-1] == tail:
                return p
    return candidates[0]


def ember_at(path):
    """The ember object at torch's ``path`` (``torch.linalg.svd`` -> ``ember.linalg.svd``)."""
    parts = path.split(".")[1:]
    if parts[:1] == ["functional"]:          # torch.functional.x is torch.x
        parts = parts[1:]
    obj = ember
    for p in parts:
        try:
            obj = getattr(obj, p)
        except AttributeError:
            raise MissingName(path) from None
    return obj


def _ember_wrapper_set_seed(op, *args, **kwargs):
    # PyTorch's wrapper_set_seed seeds torch's generator; ours seeds ember's
    ember.manual_seed(42)
    return op(*args, **kwargs)


_REBOUND_GLOBALS: dict[int, dict] = {}


def rebind(fn):
    """A copy of a function written in PyTorch's test modules whose global ``torch`` is ember."""
    key = id(fn.__globals__)
    g = _REBOUND_GLOBALS.get(key)
    if g is None:
        g = dict(fn.__globals__)
        g.update(torch=ember, wrapper_set_seed=_ember_wrapper_set_seed)
        _REBOUND_GLOBALS[key] = g
    new = types.FunctionType(fn.__code__, g, fn.__name__, to_ember(fn.__defaults__),
                             fn.__closure__)
    new.__kwdefaults__ = to_ember(fn.__kwdefaults__)
    return new


def is_test_helper(fn):
    return isinstance(fn, types.FunctionType) and \
        (fn.__module__ or "").startswith("torch.testing")


def ember_callable(fn, hint=None):
    """ember's counterpart of a torch callable named by an OpInfo (None stays None)."""
    if fn is None:
        return None
    path = torch_path(fn, hint)
    if path is not None:
        return ember_at(path)
    if is_test_helper(fn):
        return rebind(fn)
    if isinstance(fn, functools.partial):
        return functools.partial(ember_callable(fn.func, hint), *to_ember(fn.args),
                                 **to_ember(fn.keywords))
    raise Unresolvable(f"{fn!r} is at no public torch path")
