"""``ember.nn.utils.parametrize``: a parameter computed from others on every access.

``register_parametrization(module, "weight", P)`` moves the tensor to
``module.parametrizations.weight.original`` (or ``original0``, ``original1``… when ``P``'s
``right_inverse`` returns several tensors) and makes ``module.weight`` a property returning
``P(original)``, so autograd differentiates through ``P`` and optimizers update the originals.
As in PyTorch, the module's class becomes a generated subclass ``Parametrized<Class>`` holding
the properties (other instances of the class are untouched), several parametrizations on one
tensor chain in registration order, assigning ``module.weight = X`` runs the ``right_inverse``
chain, state dicts carry ``parametrizations.weight.original``, and ``cached()`` computes each
parametrized tensor once per block.
"""
from __future__ import annotations

import collections.abc
import contextlib
import copy

from ..._tensor import Tensor
from ...dispatch.grad_mode import no_grad
from ..modules.container import ModuleDict, ModuleList
from ..modules.module import Module
from ..parameter import Parameter

__all__ = ["cached", "ParametrizationList", "register_parametrization", "is_parametrized",
           "remove_parametrizations", "type_before_parametrizations",
           "transfer_parametrizations_and_params"]

_cache_depth = 0
_cache: dict = {}


@contextlib.contextmanager
def cached():
    """Inside the block, each parametrized tensor is computed on first access and reused (one
    graph for a weight used several times); the values are dropped when the outermost block
    ends."""
    global _cache_depth, _cache
    _cache_depth += 1
    try:
        yield
    finally:
        _cache_depth -= 1
        if not _cache_depth:
            _cache = {}


def _register_parameter_or_buffer(module, name, value):
    if isinstance(value, Parameter):
        module.register_parameter(name, value)
    else:
        module.register_buffer(name, value)


def _set_in_place(dest, src):
    """``dest`` takes ``src``'s data keeping its identity (optimizers hold ``dest``)."""
    with no_grad():
        dest.data = src.detach()


class ParametrizationList(ModuleList):
    """``module.parametrizations[name]``: the parametrizations of one tensor, in order, and the
    original tensor(s) they are applied to. Made by ``register_parametrization``."""

    def __init__(self, modules, original, unsafe=False):
        if len(modules) == 0:
            raise ValueError("ParametrizationList requires one or more modules.")
        super().__init__(modules)
        self.unsafe = unsafe
        original_shape, original_dtype = original.shape, original.dtype
        with no_grad():
            new = original
            for module in reversed(self):
                if hasattr(module, "right_inverse"):
                    try:
                        new = module.right_inverse(new)
                    except NotImplementedError:
                        pass
        if not isinstance(new, (Tensor, collections.abc.Sequence)):
            raise ValueError(f"'right_inverse' must return a Tensor or a Sequence of tensors "
                             f"(list, tuple...). Got {type(new).__name__}")
        self.is_tensor = isinstance(new, Tensor)
        self.ntensors = 1 if self.is_tensor else len(new)
        if self.is_tensor:
            if original.dtype is not new.dtype:
                raise ValueError(f"When `right_inverse` outputs one tensor, it may not change "
                                 f"the dtype.\noriginal.dtype: {original.dtype}\n"
                                 f"right_inverse(original).dtype: {new.dtype}")
            if original.device is not new.device:
                raise ValueError(f"When `right_inverse` outputs one tensor, it may not change "
                                 f"the device.\noriginal.device: {original.device}\n"
                                 f"right_inverse(original).device: {new.device}")
            if new is not original:
                _set_in_place(original, new)
            _register_parameter_or_buffer(self, "original", original)
        else:
            for i, part in enumerate(new):
                if not isinstance(part, Tensor):
                    raise ValueError(f"'right_inverse' must return a Tensor or a Sequence of "
                                     f"tensors (list, tuple...). Got element {i} of the "
                                     f"sequence with type {type(part).__name__}.")
                if isinstance(original, Parameter):
                    part = Parameter(part, original.requires_grad)
                part.requires_grad_(original.requires_grad)
                _register_parameter_or_buffer(self, f"original{i}", part)
        if not self.unsafe:
            z = self()
            if not isinstance(z, Tensor):
                raise ValueError(f"A parametrization must return a tensor. Got "
                                 f"{type(z).__name__}.")
            if z.dtype is not original_dtype:
                raise ValueError(f"Registering a parametrization may not change the dtype of "
                                 f"the tensor, unless `unsafe` flag is enabled.\n"
                                 f"unparametrized dtype: {original_dtype}\n"
                                 f"parametrized dtype: {z.dtype}")
            if z.shape != original_shape:
                raise ValueError(f"Registering a parametrization may not change the shape of "
                                 f"the tensor, unless `unsafe` flag is enabled.\n"
                                 f"unparametrized shape: {original_shape}\n"
                                 f"parametrized shape: {z.shape}")

    def right_inverse(self, value):
        """Run the ``right_inverse`` chain on ``value`` (last registered first) and store the
        result in the original tensor(s), keeping their identity."""
        with no_grad():
            for module in reversed(self):
                if not hasattr(module, "right_inverse"):
                    raise RuntimeError(f"parametrization {type(module).__name__} does not "
                                       f"implement right_inverse.")
                value = module.right_inverse(value)
            if self.is_tensor:
                if not isinstance(value, Tensor):
                    raise ValueError(f"`right_inverse` should return a tensor. Got "
                                     f"{type(value).__name__}")
                if value.dtype is not self.original.dtype:
                    raise ValueError(f"The tensor returned by `right_inverse` has dtype "
                                     f"{value.dtype} while `original` has dtype "
                                     f"{self.original.dtype}")
                _set_in_place(self.original, value)
                return
            if not isinstance(value, collections.abc.Sequence):
                raise ValueError(f"'right_inverse' must return a sequence of tensors. Got "
                                 f"{type(value).__name__}.")
            if len(value) != self.ntensors:
                raise ValueError(f"'right_inverse' must return a sequence of tensors of length "
                                 f"{self.ntensors}. Got a sequence of length {len(value)}.")
            for i, t in enumerate(value):
                original_i = getattr(self, f"original{i}")
                if not isinstance(t, Tensor):
                    raise ValueError(f"'right_inverse' must return a sequence of tensors. Got "
                                     f"element {i} of type {type(t).__name__}.")
                if original_i.dtype is not t.dtype:
                    raise ValueError(f"Tensor {i} returned by `right_inverse` has dtype "
                                     f"{t.dtype} while `original{i}` has dtype "
                                     f"{original_i.dtype}")
                _set_in_place(original_i, t)

    def forward(self):
        if self.is_tensor:
            x = self[0](self.original)
        else:
            x = self[0](*(getattr(self, f"original{i}") for i in range(self.ntensors)))
        for module in list(self)[1:]:
            x = module(x)
        return x


def _parametrized_getstate(self):
    raise RuntimeError("Serialization of parametrized modules is only supported through "
                       "state_dict().")


def _parametrized_deepcopy(self, memo):
    found = memo.get(id(self))
    if found is not None:
        return found
    replica = self.__new__(self.__class__)
    memo[id(self)] = replica
    replica.__dict__ = copy.deepcopy(self.__dict__, memo)
    return replica


def _inject_new_class(module):
    """Give ``module`` (only this instance) a generated subclass to hold the properties."""
    cls = module.__class__
    attrs = {"__getstate__": _parametrized_getstate}
    if not hasattr(cls, "__deepcopy__"):
        attrs["__deepcopy__"] = _parametrized_deepcopy
    module.__class__ = type(f"Parametrized{cls.__name__}", (cls,), attrs)


def _inject_property(module, tensor_name):
    if hasattr(module, tensor_name):
        raise AssertionError(f"Module already has an attribute named '{tensor_name}'")

    def get_parametrized(self):
        parametrization = self.parametrizations[tensor_name]
        if not _cache_depth:
            return parametrization()
        key = (id(self), tensor_name)
        value = _cache.get(key)
        if value is None:
            value = _cache[key] = parametrization()
        return value

    def set_original(self, value):
        self.parametrizations[tensor_name].right_inverse(value)

    setattr(module.__class__, tensor_name, property(get_parametrized, set_original))


def _check_consistent(parametrization, module, tensor_name):
    """unsafe=False on a tensor already parametrized: the new parametrization must keep the
    dtype and shape (and so must its right_inverse)."""
    y = getattr(module, tensor_name)
    x = parametrization(y)
    if not isinstance(x, Tensor):
        raise ValueError(f"A parametrization must return a tensor. Got {type(x).__name__}.")
    if x.dtype is not y.dtype:
        raise ValueError(f"Registering a parametrization may not change the dtype of the tensor, "
                         f"unless the `unsafe` flag is enabled.\nmodule.{tensor_name}.dtype: "
                         f"{y.dtype}\nparametrization(module.{tensor_name}).dtype: {x.dtype}")
    if x.shape != y.shape:
        raise ValueError(f"Registering a parametrization may not change the shape of the tensor, "
                         f"unless the `unsafe` flag is enabled.\nmodule.{tensor_name}.shape: "
                         f"{y.shape}\nparametrization(module.{tensor_name}).shape: {x.shape}")
    if hasattr(parametrization, "right_inverse"):
        try:
            z = parametrization.right_inverse(x)
        except NotImplementedError:
            return
        if not isinstance(z, Tensor):
            raise ValueError(f"parametrization.right_inverse must return a tensor. Got: "
                             f"{type(z).__name__}")
        if z.dtype is not y.dtype or z.shape != y.shape:
            raise ValueError(f"The tensor returned by parametrization.right_inverse must have "
                             f"the same dtype and shape as module.{tensor_name}, unless the "
                             f"`unsafe` flag is enabled.\nmodule.{tensor_name}: {y.dtype} "
                             f"{y.shape}\nreturned: {z.dtype} {z.shape}")


def register_parametrization(module, tensor_name, parametrization, *, unsafe=False):
    """Make ``module.<tensor_name>`` return ``parametrization(original)``; see the module
    docstring. Returns ``module``."""
    if not isinstance(parametrization, Module):
        raise TypeError(f"register_parametrization(): the parametrization must be an "
                        f"ember.nn.Module, got {type(parametrization).__name__}")
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        if not unsafe:
            _check_consistent(parametrization, module, tensor_name)
        module.parametrizations[tensor_name].append(parametrization)
        module.parametrizations[tensor_name].unsafe |= unsafe
    elif tensor_name in module._buffers or tensor_name in module._parameters:
        original = getattr(module, tensor_name)
        if original is None:
            raise ValueError(f"Module '{type(module).__name__}' has its '{tensor_name}' set to "
                             f"None: there is nothing to parametrize")
        parametrizations = ParametrizationList([parametrization], original, unsafe=unsafe)
        delattr(module, tensor_name)
        if not is_parametrized(module):
            _inject_new_class(module)
            module.parametrizations = ModuleDict()
        _inject_property(module, tensor_name)
        module.parametrizations[tensor_name] = parametrizations
    else:
        raise ValueError(f"Module '{module}' does not have a parameter, a buffer, or a "
                         f"parametrized element with name '{tensor_name}'")
    return module


def is_parametrized(module, tensor_name=None) -> bool:
    """Does ``module`` have a parametrization (on ``tensor_name``, or on anything)?"""
    parametrizations = getattr(module, "parametrizations", None)
    if parametrizations is None or not isinstance(parametrizations, ModuleDict):
        return False
    if tensor_name is None:
        return len(parametrizations) > 0
    return tensor_name in parametrizations


def remove_parametrizations(module, tensor_name, leave_parametrized=True):
    """Undo ``register_parametrization`` on ``tensor_name``: the tensor becomes a plain
    parameter/buffer again, holding its current parametrized value (``leave_parametrized``) or
    the original (only possible when there is one original tensor)."""
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    parametrizations = module.parametrizations[tensor_name]
    if parametrizations.is_tensor:
        original = parametrizations.original
        if leave_parametrized:
            with no_grad():
                t = getattr(module, tensor_name)
            _set_in_place(original, t)
    else:
        if not leave_parametrized:
            raise ValueError("Cannot leave unparametrized (`leave_parametrized=False`) a tensor "
                             "that is parametrized in terms of a sequence of tensors.")
        t = getattr(module, tensor_name)
        original = Parameter(t.detach()) if t.requires_grad else t.detach()
    delattr(module.__class__, tensor_name)
    del module.parametrizations[tensor_name]
    _register_parameter_or_buffer(module, tensor_name, original)
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        module.__class__ = module.__class__.__bases__[0]
    return module


def type_before_parametrizations(module):
    """The class ``module`` had before its first parametrization."""
    return module.__class__.__bases__[0] if is_parametrized(module) else type(module)


def transfer_parametrizations_and_params(from_module, to_module, tensor_name=None):
    """Register on ``to_module`` the parametrizations of ``from_module`` (all, or those of
    ``tensor_name``) and make it share their original tensors. Returns ``to_module``."""
    if not is_parametrized(from_module):
        return to_module
    names = list(from_module.parametrizations) if tensor_name is None else [tensor_name]
    for name in names:
        if not hasattr(to_module, name):
            setattr(to_module, name, Parameter(getattr(from_module, name).detach()))
        for p in from_module.parametrizations[name]:
            register_parametrization(to_module, name, p)
        source = from_module.parametrizations[name]
        target = to_module.parametrizations[name]
        if hasattr(source, "original"):
            target.original = source.original
        else:
            i = 0
            while hasattr(source, f"original{i}"):
                setattr(target, f"original{i}", getattr(source, f"original{i}"))
                i += 1
    return to_module
