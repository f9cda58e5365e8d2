"""Copies and conversions: ``copy_``, ``to``, ``clone``, ``contiguous``, dtype casts, devices.

Their derivatives pass the gradient through: the node casts and moves it back to each input's
dtype and device."""
from __future__ import annotations

import builtins
import copy
import warnings

from .. import _dtype
from .._device import as_device, device as _device_cls

from .._tensor import Tensor
from ..dispatch.grad_mode import no_grad
from ..dispatch.dispatcher import define
from ..runtime.devices import resolve_type
from ..dispatch.facets import Derivative
from .. import _memory_format as _mf
from . import _batching, _grad, _primitives, _tangents
from . import _meta
from . import views as _views
from ._lowering import CAST, foldable, operands
from ._util import require_tensor, tensor_method
from .._api.binding import NoMatchingSignature
from ..runtime.registry import registry
from .._warn import user_stacklevel


def _to_copy_meta(self, dtype):
    return _meta.shape_of(_meta.tensor_arg("_to_copy", self)), dtype


def _copy_meta(self, src):
    if tuple(src._shape) != tuple(self._shape):
        raise RuntimeError(f"copy_: the source of shape {list(src._shape)} must have the "
                           f"destination's shape {list(self._shape)} (expand it first)")
    return self


def _pass_through(ctx, g, self, *args):
    return (g,)


def _to_copy_name(self, dtype):
    return "CloneBackward0" if dtype is self.dtype else "ToCopyBackward0"


def _copy_backward(ctx, g, self, src):
    # the old value of self is overwritten: no gradient reaches it
    return (_grad.zeros_like(g) if ctx.needs(0) else None, g if ctx.needs(1) else None)


to_copy_op = define("_to_copy(Tensor self, dtype dtype) -> Tensor", meta=_to_copy_meta,
                    derivative=Derivative(_pass_through, complex_ok=True, name=_to_copy_name),
                    doc="A C-contiguous copy of ``self`` converted to ``dtype``.")
copy_op = define("copy_(Tensor(a!) self, Tensor src) -> Tensor(a!)", meta=_copy_meta,
                 derivative=Derivative(_copy_backward, complex_ok=True, name="CopyBackwards"),
                 doc="Elementwise copy of ``src`` (same shape and device) into ``self``.")


def written_back(functional_op):
    """The composite of an in-place op with a functional twin (``celu_``, ``addmv_``,
    ``masked_fill_``): the twin, then one copy into self. Autograd records the twin's node."""
    def composite(self, *args):
        copy_op(self, functional_op(self, *args))
        return self
    composite.__name__ = functional_op.name + "_"
    return composite


_primitives.provide(to_copy_op=to_copy_op, copy_op=copy_op)


@to_copy_op.def_pointwise
@operands(CAST)
def _to_copy_expr(e, x, *_):
    return e(x)


@to_copy_op.def_onnx
@foldable
def _to_copy_onnx(b, c, x, dtype, *rest):
    return b.cast(x, dtype)


def _warn_complex_to_real(src, dst_dtype):
    """PyTorch's warning when a cast drops imaginary parts (not for bool: that tests != 0)."""
    if src.category == _dtype.COMPLEX and dst_dtype.category < _dtype.COMPLEX and \
            dst_dtype is not _dtype.bool_:
        warnings.warn("Casting complex values to real discards the imaginary part",
                      UserWarning, stacklevel=user_stacklevel())


def _host_transfer(self, device, non_blocking):
    """Move data between devices through host memory (any backend pair)."""
    src_backend = registry.get(self.device.type)
    dst_backend = registry.get(device.type)
    return dst_backend.from_numpy(src_backend.to_numpy(self), device, non_blocking)


to_device_op = define("_to_device(Tensor self, Device device, bool non_blocking) -> Tensor",
                      composite=_host_transfer,
                      derivative=Derivative(_pass_through, complex_ok=True,
                                            name="ToCopyBackward0"),
                      doc="A copy of ``self`` on ``device``. Backends may register a direct "
                          "device-to-device kernel; the composite stages through host memory.")


@tensor_method()
def copy_(self, src, non_blocking=False):
    if not isinstance(src, Tensor):
        src = _primitives.tensor(src, dtype=self.dtype, device=self.device)
    if src.device is not self.device:
        src = to_device_op(src, self.device, non_blocking)
    if src.dtype is not self.dtype and src.dtype.category == _dtype.COMPLEX:
        _warn_complex_to_real(src.dtype, self.dtype)
    if 0 in self._stride and 0 not in self._shape:
        for n, st in zip(self._shape, self._stride):
            if st == 0 and n > 1:
                raise RuntimeError("copy_: unsupported operation: more than one element of the "
                                   "written-to tensor refers to a single memory location. Please "
                                   "clone() the tensor before performing the operation.")
    if src._shape != self._shape:
        try:
            src = _views.expand_op(src, self._shape)
        except RuntimeError:
            raise RuntimeError(f"copy_: the source of shape {list(src._shape)} can't be "
                               f"broadcast to the destination's shape {list(self._shape)}") \
                from None
    copy_op(self, src)
    self._storage.version += 1
    return self


def _parse_to(args, kwargs):
    device = kwargs.pop("device", None)
    dtype = kwargs.pop("dtype", None)
    non_blocking = kwargs.pop("non_blocking", False)
    copy = kwargs.pop("copy", False)
    kwargs.pop("memory_format", None)
    if kwargs:
        raise NoMatchingSignature("to", f"unexpected keyword arguments {sorted(kwargs)}")
    bools = 0
    for a in args:
        if a is None:  # PyTorch: to(device, None, False) leaves the dtype as is
            continue
        if isinstance(a, Tensor):
            device, dtype = a.device, a.dtype
        elif isinstance(a, _dtype.dtype):
            dtype = a
        elif isinstance(a, (str, _device_cls, int)) and not isinstance(a, bool):
            device = a
        elif isinstance(a, bool) and bools < 2:
            # to(dtype, non_blocking, copy) / to(device, dtype, non_blocking, copy)
            if bools == 0:
                non_blocking = a
            else:
                copy = a
            bools += 1
        else:
            raise NoMatchingSignature("to", repr(a))
    return device, dtype, non_blocking, copy


def _in_order(t, order):
    return _mf.dense_order(t._shape, t._stride) == order or order == sorted(order)


@tensor_method()
def to(self, *args, **kwargs):
    """Device, dtype and memory-format conversion: a copy made keeps the source's dense
    layout (``preserve_format``, PyTorch's default) or takes ``memory_format``'s."""
    memory_format = kwargs.get("memory_format")
    device, dtype, non_blocking, copy = _parse_to(args, dict(kwargs))
    order = order_for(self, memory_format, "to")
    out = self
    if device is not None:
        device = as_device(device)
        if device is not self.device:
            out = to_device_op(out, device, non_blocking)
            copy = False
    if dtype is not None:
        dtype = _dtype.as_dtype(dtype)
        if dtype is not out.dtype:
            if out.dtype.category == _dtype.COMPLEX:
                _warn_complex_to_real(out.dtype, dtype)
            out = copy_in_order(out, order, dtype)
            copy = False
    if copy:
        out = copy_in_order(out, order, out.dtype)
    elif not _in_order(out, order) and (out is not self or memory_format is not None and
                                        memory_format is not _mf.preserve_format):
        out = copy_in_order(out, order, out.dtype)
    return out


@tensor_method()
def cpu(self, *, memory_format=None):
    return self.to("cpu", memory_format=memory_format)


def copy_in_order(x, order, dtype):
    """A copy of ``x`` whose memory holds the dims in ``order`` (outermost first), as a tensor
    of ``x``'s shape: the strides of a contiguous tensor of the permuted shape."""
    if order == sorted(order):
        return to_copy_op(x, dtype)
    inverse = [order.index(d) for d in range(len(order))]
    out = _views.permute_op(to_copy_op(_views.permute_op(x, tuple(order)), dtype),
                            tuple(inverse))
    # its storage is new: to the user (and autograd) it is no view (a tensor batched by
    # ember.func.vmap keeps no view base to drop)
    if getattr(out, "_view_base", None) is not None:
        del out._view_base
    return out


def _clone_preserving(self):
    order = _mf.dense_order(self._shape, self._stride)
    return copy_in_order(self, order if order is not None else list(range(self.ndim)),
                         self.dtype)


clone_op = define("clone(Tensor self) -> Tensor", meta=_meta.same("clone"),
                  composite=_clone_preserving,
                  derivative=Derivative(_pass_through, complex_ok=True, name="CloneBackward0"),
                  doc="A copy keeping a non-overlapping, dense layout (preserve_format).")


@clone_op.def_onnx
@foldable
def _clone_onnx(b, c, x, *rest):
    return b.op("Identity", [x])


def order_for(t, memory_format, op):
    """The dim order (outermost first) of a new tensor like ``t`` in ``memory_format``."""
    if memory_format is None or memory_format is _mf.preserve_format:
        order = _mf.dense_order(t._shape, t._stride)
        return order if order is not None else list(range(t.ndim))
    if memory_format is _mf.contiguous_format:
        return list(range(t.ndim))
    if memory_format in (_mf.channels_last, _mf.channels_last_3d):
        return _mf.channels_last_order(t.ndim, memory_format)
    raise TypeError(f"{op}(): argument 'memory_format' must be ember.memory_format, not "
                    f"{type(memory_format).__name__}")


@tensor_method()
def clone(self, *, memory_format=None):
    if memory_format is None or memory_format is _mf.preserve_format:
        return clone_op(self)
    return copy_in_order(self, order_for(self, memory_format, "clone"), self.dtype)


@tensor_method()
def contiguous(self, memory_format=None):
    if memory_format is None or memory_format is _mf.contiguous_format:
        return self if self.is_contiguous() else to_copy_op(self, self.dtype)
    order = order_for(self, memory_format, "contiguous")
    if tuple(self._stride) == tuple(_layout_strides(self._shape, order)):
        return self
    return copy_in_order(self, order, self.dtype)


def _layout_strides(shape, order):
    strides = [0] * len(shape)
    acc = 1
    for d in reversed(order):
        strides[d] = acc
        acc *= max(shape[d], 1)
    return strides


def _caster(d):
    def cast(self, memory_format=None):
        if memory_format is None and self.dtype is d:
            return self   # already that dtype: itself, as PyTorch (no layout to compute)
        order = order_for(self, memory_format, d.name)
        if self.dtype is d:
            if memory_format is None or memory_format is _mf.preserve_format or \
                    _in_order(self, order):
                return self
            return copy_in_order(self, order, d)
        if self.dtype.category == _dtype.COMPLEX:
            _warn_complex_to_real(self.dtype, d)
        return copy_in_order(self, order, d)
    cast.__name__ = d.name
    return cast


for _name, _d in [("float", _dtype.float32), ("double", _dtype.float64), ("half", _dtype.float16),
                  ("bfloat16", _dtype.bfloat16), ("int", _dtype.int32), ("long", _dtype.int64),
                  ("short", _dtype.int16), ("char", _dtype.int8), ("byte", _dtype.uint8),
                  ("bool", _dtype.bool_), ("cfloat", _dtype.complex64),
                  ("cdouble", _dtype.complex128)]:
    setattr(Tensor, _name, _caster(_d))


builtins_type = builtins.type


@tensor_method()
def type(self, dtype=None, non_blocking=False, *, memory_format=None):
    """Without an argument, PyTorch's legacy type string (``"ember.FloatTensor"``); with a
    dtype, a legacy class (``ember.DoubleTensor``) or a type string, this tensor in that
    dtype."""
    from .factories import dtype_of_type, type_name  # cycle: ember.ops.factories
    if dtype is None:
        return type_name(self)
    d = dtype_of_type(dtype)
    if d is None:
        raise TypeError(f"type(): argument 'dtype' must be a dtype, a tensor type or a type "
                        f"string, not {builtins_type(dtype).__name__}")
    return self.to(d, non_blocking=non_blocking)


@tensor_method()
def type_as(self, other):
    return self.to(other.dtype)


def device_tensor_methods(name: str) -> None:
    """``Tensor.<name>()`` and ``Tensor.is_<name>`` for a backend name (called by the registry)."""
    if not hasattr(Tensor, name):
        def move(self, device=None, non_blocking=False, *, memory_format=None):
            target = name if device is None else (
                f"{name}:{device}" if isinstance(device, int) else device)
            return self.to(target, non_blocking=non_blocking, memory_format=memory_format)
        move.__name__ = name
        move.__doc__ = f"A copy of this tensor on the {name} device (or self if already there)."
        setattr(Tensor, name, move)
    prop = f"is_{name}"
    if not hasattr(Tensor, prop):
        setattr(Tensor, prop, _device_flag(name))


def _device_flag(name: str) -> property:
    """``Tensor.is_<name>``: on a device of that type (or of the type it is redirected to, so
    ``is_cuda`` holds for tensors a ``cuda=opencl`` redirect put on OpenCL)."""
    return property(lambda self: self.device.type == resolve_type(name),
                    doc=f"True if the tensor is on a {name} device.")


# PyTorch's Tensor has these whatever it was built with: moving to a device type no backend
# provides raises DeviceNotInstalled (naming the package), and the flags read False
_TORCH_DEVICE_METHODS = ("cpu", "cuda", "xpu", "ipu", "mtia")
_TORCH_DEVICE_FLAGS = ("cpu", "cuda", "xpu", "ipu", "mtia", "mps", "maia", "meta", "vulkan", "xla")


def torch_device_surface() -> None:
    for name in _TORCH_DEVICE_METHODS:
        device_tensor_methods(name)
    for name in _TORCH_DEVICE_FLAGS:
        prop = f"is_{name}"
        if not hasattr(Tensor, prop):
            setattr(Tensor, prop, _device_flag(name))
    if not hasattr(Tensor, "is_mkldnn"):
        Tensor.is_mkldnn = property(lambda self: False, doc="False: ember has no mkldnn layout.")


# -- ember.func ---------------------------------------------------------------------------------
def _copy_batch_rule(args, bdims, layer):
    self, src = args
    _batching.inplace_check(copy_op, args, bdims)
    if bdims[0] is None:
        return copy_op(self, src), None
    if bdims[1] is not None:
        src = _batching.pad_logical(src, self.ndim - 1)
    if src._shape != self._shape:
        src = _views.expand_op(src, self._shape)
    return copy_op(self, src), 0


def _copy_jvp(ctx, tangents, self, src):
    return tangents[1]   # the target now holds src's values (None: a zero tangent)


to_copy_op.def_batch_rule(_batching.elementwise(to_copy_op))
to_device_op.def_batch_rule(_batching.elementwise(to_device_op))
copy_op.def_batch_rule(_copy_batch_rule)
to_copy_op.def_jvp(_tangents.linear(to_copy_op))
to_device_op.def_jvp(_tangents.linear(to_device_op))
copy_op.def_jvp(_copy_jvp)


def clone(input, *, memory_format=None):
    require_tensor(input, "clone")
    return input.clone(memory_format=memory_format)


def detach(input):
    require_tensor(input, "detach")
    return input.detach()


@tensor_method("__deepcopy__")
def _deepcopy(self, memo):
    """PyTorch's rule: only leaves deep-copy; the copy keeps requires_grad and a copy of
    ``.grad``. Subclasses (Parameter...) keep their own reduce protocol."""
    if self.__class__ is not Tensor:   # (``type`` is Tensor.type's name in this module)
        rv = self.__reduce_ex__(4)
        return copy._reconstruct(self, memo, *rv)
    if not self.is_leaf:
        raise RuntimeError("Only Tensors created explicitly by the user (graph leaves) support "
                           "the deepcopy protocol at the moment.")
    if id(self) in memo:
        return memo[id(self)]
    with no_grad():
        new = self.clone()
    if self.requires_grad:
        new.requires_grad_(True)
    if self.grad is not None:
        new.grad = _deepcopy(self.grad, memo)
    memo[id(self)] = new
    return new
