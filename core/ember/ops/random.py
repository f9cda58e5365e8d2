"""Random numbers and the in-place initializers (``uniform_``, ``normal_``, ``fill_``, ...),
each op with its meta and derivative.

Every random op takes the backend implementation of an ``ember.Generator`` (``Generator._impl``)
so its kernel draws on the tensor's own device; ``generator=None`` means the device's default
generator, which ``ember.manual_seed`` seeds. Ops that make a new tensor from sizes dispatch on
their ``device`` argument (``Op.on``); the others dispatch on their tensors.
"""
from __future__ import annotations

import math
import operator
import warnings

import numpy as np

from .. import _dtype
from .._device import as_device
from .._generator import Generator
from .._tensor import Tensor
from ..dispatch.grad_mode import no_grad
from ..dispatch.dispatcher import define
from ..dispatch.facets import NOT_DIFFERENTIABLE, Derivative
from . import _batching, _grad, _tangents
from . import _meta
from .._api.binding import NoMatchingSignature
from ._util import _dtype_title, as_shape, broadcast_shapes, tensor_method, write_out
from . import factories as _fac
from .factories import _finish, empty, empty_like, in_layout
from ..runtime.registry import registry
from .conversion import copy_op
from .shape import cat_op
from .views import view_op
from .._warn import user_stacklevel

__all__ = ["rand", "randn", "randint", "randperm", "normal", "bernoulli", "multinomial",
           "rand_like", "randn_like", "randint_like"]


# -- metas --------------------------------------------------------------------------------------
def _sized(op: str):
    """Random factories: ``op(..., int[] size, Generator generator, dtype dtype, Device device)``
    (rand, randn, randint, normal): the size argument, third from the end."""
    return lambda *args: (_meta._size(op, args[-4]), args[-2])


def _randperm_meta(n, generator, dtype, device):
    return _meta._size("randperm", (n,)), dtype


def _multinomial_meta(self, num_samples, replacement, generator):
    if self.ndim not in (1, 2):
        raise RuntimeError(f"multinomial: prob_dist must be 1 or 2 dim, got shape "
                           f"{list(self._shape)}")
    return tuple(self._shape[:-1]) + (int(num_samples),), _dtype.int64


def _bernoulli__meta(self, p, generator):
    if isinstance(p, Tensor):
        _meta.same_shape("bernoulli_", self, _meta.broadcast("bernoulli_", self, p), "self and p")
    return self


# -- derivatives: samples are not reparameterized (PyTorch's choice), so gradients through them
# are zero; in-place fills overwrite their target ----------------------------------------------
def _normal_backward(ctx, g, mean, std, size, generator, dtype, device):
    return (_grad.zeros_like(g) if ctx.needs(0) else None,
            _grad.zeros_like(g) if ctx.needs(1) else None)


def _normal_name(mean, std, *rest):
    """PyTorch's overloads: normal(Tensor, float) 1, (float, Tensor) 2, (Tensor, Tensor) 3."""
    return f"NormalBackward{int(isinstance(mean, Tensor)) + 2 * int(isinstance(std, Tensor))}"


def _overwrite_backward(ctx, g, self, *rest):
    return (_grad.zeros_like(g),)


def _draw_backward(ctx, g, self, generator):
    return (_grad.zeros_like(g),)


def _overwrites(name=None):
    """The derivative of an in-place fill: no gradient reaches the overwritten values."""
    return Derivative(_overwrite_backward, diff=("self",), name=name)


# -- ops ----------------------------------------------------------------------------------------
rand_op = define("rand(int[] size, Generator generator, dtype dtype, Device device) -> Tensor",
                 meta=_sized("rand"),
                 doc="Uniform on [0, 1); complex dtypes draw real and imaginary parts so.")
randn_op = define("randn(int[] size, Generator generator, dtype dtype, Device device) -> Tensor",
                  meta=_sized("randn"),
                  doc="Standard normal; a complex value has variance 1 (1/2 per part).")
randint_op = define("randint(int low, int high, int[] size, Generator generator, dtype dtype, "
                    "Device device) -> Tensor", doc="Integers uniform on [low, high).",
                    meta=_sized("randint"), derivative=NOT_DIFFERENTIABLE)
randperm_op = define("randperm(int n, Generator generator, dtype dtype, Device device) -> Tensor",
                     meta=_randperm_meta, derivative=NOT_DIFFERENTIABLE)
normal_op = define("normal(Tensor|float mean, Tensor|float std, int[] size, Generator generator, "
                   "dtype dtype, Device device) -> Tensor", meta=_sized("normal"),
                   derivative=Derivative(_normal_backward, name=_normal_name),
                   doc="mean + std * N(0, 1) in the broadcast shape ``size``; the op layer has "
                       "checked float stds, the kernel checks tensor stds.")
multinomial_op = define("multinomial(Tensor self, int num_samples, bool replacement, "
                        "Generator generator) -> Tensor", meta=_multinomial_meta,
                        derivative=NOT_DIFFERENTIABLE,
                        doc="int64 category indices per row; the kernel checks probabilities.")
uniform__op = define("uniform_(Tensor(a!) self, float from, float to, Generator generator) "
                     "-> Tensor(a!)", meta=_meta.inplace("uniform_"), derivative=_overwrites())
normal__op = define("normal_(Tensor(a!) self, float mean, float std, Generator generator) "
                    "-> Tensor(a!)", meta=_meta.inplace("normal_"), derivative=_overwrites(),
                    doc="A complex self gets std/sqrt(2) per part, as PyTorch.")
random__op = define("random_(Tensor(a!) self, int from, int to, Generator generator) "
                    "-> Tensor(a!)", meta=_meta.inplace("random_"), derivative=_overwrites(),
                    doc="Integers uniform on [from, to), cast to self's dtype.")
exponential__op = define("exponential_(Tensor(a!) self, float lambd, Generator generator) "
                         "-> Tensor(a!)", meta=_meta.inplace("exponential_"),
                         derivative=_overwrites())
bernoulli__op = define("bernoulli_(Tensor(a!) self, Tensor|float p, Generator generator) "
                       "-> Tensor(a!)", meta=_bernoulli__meta, derivative=_overwrites(),
                       doc="A tensor p broadcasts to self; the kernel checks it lies in "
                           "[0, 1].")
bernoulli_op = define("bernoulli(Tensor self, Generator generator) -> Tensor",
                      meta=lambda self, generator: (self._shape, self.dtype),
                      composite=lambda self, generator: bernoulli__op(
                          _fac.empty_like(self), self, generator),
                      derivative=Derivative(_draw_backward),
                      doc="0/1 draws with the probabilities ``self`` (checked in [0, 1]); as "
                          "torch's, its gradient is zero (BernoulliBackward0).")
fill__op = define("fill_(Tensor(a!) self, Scalar value) -> Tensor(a!)", meta=_meta.inplace("fill_"),
                  derivative=_overwrites(), doc="The value is already checked to fit self's dtype.")
# its own op for torch's node name (ZeroBackward0); every backend runs it as fill_ with 0
zero__op = define("zero_(Tensor(a!) self) -> Tensor(a!)", meta=_meta.inplace("zero_"),
                  composite=lambda self: fill__op(self, 0), derivative=_overwrites())

# (mantissa digits, largest finite value): the integers a float dtype holds exactly, its range
_FLOAT_LIMITS = {"float16": (11, 65504.0), "bfloat16": (8, 3.3895313892515355e38),
                 "float32": (24, 3.4028234663852886e38), "float64": (53, 1.7976931348623157e308)}


# -- argument helpers -----------------------------------------------------------------------------
def _generator(generator, device, op):
    if generator is None:
        return registry.get(device.type).default_generator(device.index or 0)._impl
    if not isinstance(generator, Generator):
        raise TypeError(f"{op}(): argument 'generator' must be ember.Generator, not "
                        f"{type(generator).__name__}")
    if generator.device.type != device.type:
        raise RuntimeError(f"Expected a '{device.type}' device type for generator but found "
                           f"'{generator.device.type}'")
    return generator._impl


def _not_implemented(op, d):
    return NotImplementedError(f'"{op}" not implemented for \'{_dtype_title(d)}\'')


def _float_dtype(dtype, op):
    d = _dtype.get_default_dtype() if dtype is None else _dtype.as_dtype(dtype)
    if d.category < _dtype.FLOATING:
        raise _not_implemented(op, d)
    return d


def _int_arg(value, name, op):
    if isinstance(value, Tensor):
        value = value.item()
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{op}(): argument '{name}' must be int, not "
                        f"{type(value).__name__}") from None


def _fmt(x) -> str:
    return f"{float(x):g}"


def _result(t, out, requires_grad, op):
    return write_out(out, t, op) if out is not None else _finish(t, requires_grad)


def _dtype_bounds(d):
    """The smallest and largest value of ``d`` (inclusive)."""
    if d is _dtype.bool_:
        return 0, 1
    if d.category == _dtype.INTEGRAL:
        bits = 8 * d.itemsize
        return (-(1 << bits - 1), (1 << bits - 1) - 1) if d.is_signed else (0, (1 << bits) - 1)
    big = _FLOAT_LIMITS[d.name][1]
    return -big, big


def _default_to(d) -> int:
    """random_'s exclusive upper bound when none is given: the dtype's range, and for floats
    the integers every value of which the dtype represents exactly."""
    if d.category == _dtype.FLOATING:
        return (1 << _FLOAT_LIMITS[d.name][0]) + 1
    return _dtype_bounds(d)[1] + 1


def _check_random_range(low, high, d, op):
    if d.category == _dtype.COMPLEX:
        raise RuntimeError(f"{op}: only integral, floating-point and boolean dtypes are "
                           f"supported, got {d.name}")
    if low >= high:
        raise RuntimeError(f"{op}: random_ expects 'from' to be less than 'to', but got "
                           f"from={low} >= to={high}")
    lo, hi = _dtype_bounds(d)
    if low < lo:
        raise RuntimeError(f"from is out of bounds for {d.name}")
    if high - 1 > hi:
        raise RuntimeError(f"to - 1 is out of bounds for {d.name}")
    if d.category == _dtype.FLOATING:
        digits = _FLOAT_LIMITS[d.name][0]
        for name, v in (("from", low), ("to - 1", high - 1)):
            if abs(v) > 1 << digits:
                warnings.warn(f"{name} is out of bounds [-(2^{digits}), 2^{digits}]. Due to "
                              f"precision limitations {d.name} can support discrete uniform "
                              f"distribution only within this range.", UserWarning,
                              stacklevel=user_stacklevel())


def _from_to(op, args, kwargs, defaults):
    """PyTorch's ``(from, to)`` arguments (``from`` is a Python keyword, so they come as
    ``*args, **kwargs``)."""
    if len(args) > 2:
        raise NoMatchingSignature(op, f"at most 2 positional arguments ({len(args)} given)")
    params = dict(zip(("from", "to"), args))
    for k, v in kwargs.items():
        if k not in ("from", "to"):
            raise NoMatchingSignature(op, f"unexpected keyword argument '{k}'")
        if k in params:
            raise NoMatchingSignature(op, f"multiple values for argument '{k}'")
        params[k] = v
    return params.get("from", defaults[0]), params.get("to", defaults[1])


def _inplace(self, op, *args):
    op(self, *args)
    self._storage.version += 1
    return self


# -- new tensors ----------------------------------------------------------------------------------
def _sampler(op, name):
    def sample(*size_args, size=None, generator=None, out=None, dtype=None, layout=None,
               device=None, requires_grad=False, pin_memory=False):
        shape = _fac._size_args(size_args, size, name, required=True)
        d, dev = _float_dtype(dtype, name), as_device(device)
        t = op.on(dev, shape, _generator(generator, dev, name), d, dev)
        return _result(t, out, requires_grad, name)
    sample.__name__ = name
    return sample


rand = _sampler(rand_op, "rand")
randn = _sampler(randn_op, "randn")


def randint(*args, size=None, low=None, high=None, generator=None, out=None, dtype=None,
            layout=None, device=None, requires_grad=False, pin_memory=False):
    """``randint(high, size)`` or ``randint(low, high, size)``: integers on [low, high)."""
    args = list(args)
    if size is None:
        if not args or not isinstance(args[-1], (tuple, list)):
            raise TypeError("randint() expects randint(high, size) or randint(low, high, size) "
                            "with size a tuple of ints")
        size = args.pop()
    if high is None:
        if not args:
            raise TypeError("randint() missing required argument 'high'")
        high = args.pop()
    if low is None:
        low = args.pop() if args else 0
    if args:
        raise TypeError("randint() takes at most 3 positional arguments")
    low, high = _int_arg(low, "low", "randint"), _int_arg(high, "high", "randint")
    d = _dtype.int64 if dtype is None else _dtype.as_dtype(dtype)
    _check_random_range(low, high, d, "randint")
    dev = as_device(device)
    t = randint_op.on(dev, low, high, as_shape((size,), "randint"),
                      _generator(generator, dev, "randint"), d, dev)
    return _result(t, out, requires_grad, "randint")


def randperm(n, *, generator=None, out=None, dtype=None, layout=None, device=None,
             requires_grad=False, pin_memory=False):
    n = _int_arg(n, "n", "randperm")
    if n < 0:
        raise RuntimeError(f"randperm(): trying to create tensor with negative dimension {n}: "
                           f"[{n}]")
    d = _dtype.int64 if dtype is None else _dtype.as_dtype(dtype)
    if d.category == _dtype.COMPLEX:
        raise _not_implemented("randperm", d)
    top = (1 << _FLOAT_LIMITS[d.name][0]) if d.category == _dtype.FLOATING else _dtype_bounds(d)[1]
    if n - 1 > top:
        raise RuntimeError(f"randperm: n is too large for result tensor type: "
                           f"'{_dtype_title(d)}'")
    dev = as_device(device)
    t = randperm_op.on(dev, n, _generator(generator, dev, "randperm"), d, dev)
    return _result(t, out, requires_grad, "randperm")


def normal(mean, std=1.0, size=None, *, generator=None, out=None, dtype=None, layout=None,
           device=None, requires_grad=False, pin_memory=False):
    """``normal(Tensor mean, Tensor std)``, ``normal(Tensor mean, float std=1)``,
    ``normal(float mean, Tensor std)`` or ``normal(float mean, float std, size)``."""
    tensors = [x for x in (mean, std) if isinstance(x, Tensor)]
    if not isinstance(std, Tensor) and float(std) < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {_fmt(std)}")
    if not tensors:
        if size is None:
            raise TypeError("normal(): with a float mean and a float std, size is required")
        d, dev = _float_dtype(dtype, "normal"), as_device(device)
        t = normal_op.on(dev, float(mean), float(std), as_shape((size,), "normal"),
                         _generator(generator, dev, "normal"), d, dev)
        return _result(t, out, requires_grad, "normal")
    if size is not None or dtype is not None or device is not None or requires_grad:
        raise TypeError("normal(): size, dtype, device and requires_grad can be given only when "
                        "mean and std are both numbers")
    for x in tensors:
        if x.dtype.category != _dtype.FLOATING:
            raise _not_implemented("normal", x.dtype)
    d = tensors[0].dtype if len(tensors) == 1 else _dtype.promote_types(mean.dtype, std.dtype)
    shape = broadcast_shapes(*(x._shape for x in tensors))
    # a 0-d CPU operand moves to the other tensor's device, where the numbers are drawn
    dev = next((x.device for x in tensors if x.device.type != "cpu"), tensors[0].device)
    args = [x if isinstance(x, Tensor) else float(x) for x in (mean, std)]
    t = normal_op(*args, shape, _generator(generator, dev, "normal"), d, dev)
    return t if out is None else write_out(out, t, "normal")


def bernoulli(input, p=None, *, generator=None, out=None):
    """Draws 0/1 with probability ``input`` elementwise, or with probability ``p`` for every
    element of a tensor shaped like ``input``."""
    if not isinstance(input, Tensor):
        raise TypeError(f"bernoulli(): argument 'input' must be Tensor, not "
                        f"{type(input).__name__}")
    if p is None:
        if input.dtype.category != _dtype.FLOATING:
            raise _not_implemented("bernoulli", input.dtype)
        t = bernoulli_op(input, _generator(generator, input.device, "bernoulli"))
    else:
        t = bernoulli_(empty_like(input), p, generator=generator)
    return t if out is None else write_out(out, t, "bernoulli")


def multinomial(input, num_samples, replacement=False, *, generator=None, out=None):
    if input.ndim not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    if input.dtype.category != _dtype.FLOATING:
        raise RuntimeError(f"multinomial only supports floating-point dtypes for input, got: "
                           f"{_dtype_title(input.dtype)}")
    n = _int_arg(num_samples, "num_samples", "multinomial")
    if n <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    if not replacement and n > input._shape[-1]:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without "
                           "replacement")
    t = multinomial_op(input, n, bool(replacement),
                       _generator(generator, input.device, "multinomial"))
    return t if out is None else write_out(out, t, "multinomial")


def _like_sampler(fn):
    def like(input, *, dtype=None, layout=None, device=None, pin_memory=False,
             requires_grad=False, memory_format=None, generator=None):
        t = _fac.in_layout(lambda shape: fn(shape, dtype=input.dtype if dtype is None else dtype,
                                            device=input.device if device is None else device,
                                            generator=generator), input, memory_format,
                           like.__name__)
        return _finish(t, requires_grad)
    like.__name__ = fn.__name__ + "_like"
    return like


rand_like = _like_sampler(rand)
randn_like = _like_sampler(randn)


def randint_like(input, *args, low=None, high=None, dtype=None, layout=None, device=None,
                 pin_memory=False, requires_grad=False, memory_format=None, generator=None):
    """``randint_like(input, high)`` or ``randint_like(input, low, high)``."""
    if len(args) > 2:
        raise TypeError("randint_like() takes at most 3 positional arguments")
    if len(args) == 2:
        low, high = args
    elif args:
        if high is None:
            high = args[0]
        else:
            low = args[0]
    if high is None:
        raise TypeError("randint_like() missing required argument 'high'")
    return in_layout(lambda shape: randint(0 if low is None else low, high, shape,
                                           dtype=input.dtype if dtype is None else dtype,
                                           device=input.device if device is None else device,
                                           generator=generator, requires_grad=requires_grad),
                     input, memory_format, "randint_like")


# -- in place -------------------------------------------------------------------------------------
def _require_floating(self, op, allow_complex=True):
    c = self.dtype.category
    if c < _dtype.FLOATING or (c == _dtype.COMPLEX and not allow_complex):
        raise _not_implemented(op, self.dtype)


@tensor_method()
def uniform_(self, *args, generator=None, **kwargs):
    """``uniform_(from=0, to=1)``: values uniform on [from, to)."""
    low, high = _from_to("uniform_", args, kwargs, (0.0, 1.0))
    _require_floating(self, "uniform_")
    if low > high:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found "
                           f"from={_fmt(low)} > to={_fmt(high)}")
    return _inplace(self, uniform__op, float(low), float(high),
                    _generator(generator, self.device, "uniform_"))


@tensor_method()
def normal_(self, mean=0.0, std=1.0, *, generator=None):
    _require_floating(self, "normal_")
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {_fmt(std)}")
    return _inplace(self, normal__op, float(mean), float(std),
                    _generator(generator, self.device, "normal_"))


@tensor_method()
def random_(self, *args, generator=None, **kwargs):
    """``random_()``, ``random_(to)``, ``random_(from, to)``; ``to=None`` means the top of the
    dtype's range (for floats, of the integers it holds exactly)."""
    if len(args) == 1 and not kwargs:
        low, high = 0, args[0]
    else:
        low, high = _from_to("random_", args, kwargs, (0, None))
    d = self.dtype
    low = _int_arg(low, "from", "random_")
    if high is None:
        if d.category == _dtype.COMPLEX:
            raise _not_implemented("random_", d)
        high = _default_to(d)
    high = _int_arg(high, "to", "random_")
    _check_random_range(low, high, d, "random_")
    return _inplace(self, random__op, low, high, _generator(generator, self.device, "random_"))


@tensor_method()
def exponential_(self, lambd=1.0, *, generator=None):
    if self.dtype.category != _dtype.FLOATING:
        raise RuntimeError(f"Exponential distribution is a continuous probability distribution. "
                           f"dtype must be a floating point but you specified "
                           f"{_dtype_title(self.dtype)}")
    if not lambd > 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={_fmt(lambd)}")
    return _inplace(self, exponential__op, float(lambd),
                    _generator(generator, self.device, "exponential_"))


@tensor_method()
def bernoulli_(self, p=0.5, *, generator=None):
    """Each element becomes 1 with probability ``p`` (a number, or a tensor broadcast to
    self's shape) and 0 otherwise."""
    if self.dtype.category == _dtype.COMPLEX:
        raise _not_implemented("bernoulli_", self.dtype)
    if isinstance(p, Tensor):
        if p.dtype.category != _dtype.FLOATING:
            raise _not_implemented("bernoulli_", p.dtype)
        if p.ndim > self.ndim or broadcast_shapes(self._shape, p._shape) != self._shape:
            raise RuntimeError(f"bernoulli_: p of shape {list(p._shape)} can't be broadcast to "
                               f"the tensor's shape {list(self._shape)}")
    else:
        p = float(p)
        if not 0 <= p <= 1:
            raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={_fmt(p)}")
    return _inplace(self, bernoulli__op, p, _generator(generator, self.device, "bernoulli_"))


@tensor_method("bernoulli")
def _bernoulli_method(self, p=None, *, generator=None):
    return bernoulli(self, p, generator=generator)


@tensor_method("multinomial")
def _multinomial_method(self, num_samples, replacement=False, *, generator=None):
    return multinomial(self, num_samples, replacement, generator=generator)


def _fill_value(value, d):
    """``value`` as the Python number ``fill_`` writes, after PyTorch's overflow check."""
    if isinstance(value, Tensor):
        if value.ndim:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor "
                               f"with {value.ndim} dimensions.")
        value = value.item()
    if isinstance(value, np.generic):
        value = value.item()
    if not isinstance(value, (int, float, complex)):
        raise TypeError(f"fill_(): argument 'value' must be Number or Tensor, not "
                        f"{type(value).__name__}")
    overflow = RuntimeError(f"value cannot be converted to type {d.name} without overflow")
    if isinstance(value, complex) and d.category != _dtype.COMPLEX:
        if value.imag != 0:
            raise overflow
        value = value.real
    if d is _dtype.bool_ or d.category == _dtype.COMPLEX:
        return value
    if d.category == _dtype.INTEGRAL:
        if isinstance(value, float) and not math.isfinite(value):
            raise overflow
        lo, hi = _dtype_bounds(d)
        v = int(value)
        # unsigned types also take negative values of their magnitude (uint8 -1 -> 255)
        if v > hi or v < (lo if d.is_signed else -hi):
            raise overflow
        return v
    if math.isfinite(value) and abs(value) > _FLOAT_LIMITS[d.name][1]:
        raise overflow
    return float(value)


@tensor_method()
def fill_(self, value):
    return _inplace(self, fill__op, _fill_value(value, self.dtype))


@tensor_method()
def zero_(self):
    return _inplace(self, zero__op)


# -- ember.func: random ops under vmap follow its ``randomness`` ---------------------------------
_INPLACE_SAME_ERROR = ("vmap: Cannot ask for different inplace randomness on an unbatched tensor. "
                       "This will appear like same randomness. If this is necessary for your "
                       "usage, please file an issue with functorch.")


def _random_rule(fn):
    """Mark a batching rule as a random op's: inside vmap it runs (or raises) by randomness."""
    def rule(args, bdims, layer):
        if layer.randomness == "error":
            raise RuntimeError(_batching.RANDOMNESS_ERROR)
        return fn(args, bdims, layer)
    rule.is_random = True
    return rule


def _same_draws(op, args, bdims, layer, gen_pos):
    """randomness='same' with batched inputs: every example draws from the same generator
    state (the generator ends where one example's draws leave it)."""
    gen = args[gen_pos]
    if not (hasattr(gen, "state_bytes") and hasattr(gen, "load_state")):
        raise RuntimeError(f"vmap: {op.name} with randomness='same' and batched inputs needs a "
                           f"generator whose state can be saved and restored")
    state = gen.state_bytes()
    return _batching.per_example(op, args, bdims, layer.batch_size,
                                 lambda b: gen.load_state(state))


def _factory_rule(op, size_pos):
    """rand, randn, randint, normal(float, float): one draw of the batch's shape."""
    def rule(args, bdims, layer):
        new = list(args)
        new[size_pos] = (layer.batch_size,) + tuple(args[size_pos])
        return op.on(args[-1], *new), 0
    return _random_rule(rule)


def _randperm_rule(args, bdims, layer):
    n, gen, d, dev = args
    perms = [view_op(randperm_op.on(dev, *args), (1, n)) for _ in range(layer.batch_size)]
    return cat_op(perms, 0, d), 0


def _normal_rule(args, bdims, layer):
    mean, std, size, gen, d, dev = args
    batched = [i for i in (0, 1) if bdims[i] is not None]
    if not batched and not isinstance(mean, Tensor) and not isinstance(std, Tensor):
        if layer.randomness == "different":
            return normal_op.on(dev, mean, std, (layer.batch_size,) + tuple(size), gen, d, dev), 0
        return normal_op.on(dev, *args), None
    if layer.randomness == "same" and batched:
        return _same_draws(normal_op, args, bdims, layer, 3)
    new = list(args)
    for i in batched:
        new[i] = _batching.pad_logical(args[i], len(size))
    if layer.randomness == "same":
        return normal_op(*args), None
    new[2] = (layer.batch_size,) + tuple(size)
    return normal_op(*new), 0


def _multinomial_rule(args, bdims, layer):
    self, n, replacement, gen = args
    if layer.randomness == "same":
        if bdims[0] is not None:
            return _same_draws(multinomial_op, args, bdims, layer, 3)
        return multinomial_op(*args), None
    x = _batching.materialize(self, bdims[0], layer.batch_size)
    rows = x.reshape(-1, x._shape[-1])
    out = multinomial_op(rows, n, replacement, gen)
    return out.reshape(*x._shape[:-1], out._shape[-1]), 0


def _inplace_random_rule(op, tensor_args=()):
    """uniform_, normal_, random_, exponential_, bernoulli_: 'different' fills each example
    with its own draws; 'same' draws one example and copies it into all."""
    def rule(args, bdims, layer):
        if bdims[0] is None:
            if any(bdims[i] is not None for i in tensor_args) or layer.randomness == "different":
                raise RuntimeError(_INPLACE_SAME_ERROR if layer.randomness == "different" and
                                   not any(bdims[i] is not None for i in tensor_args) else
                                   _inplace_error(op))
            return op(*args), None
        self = args[0]
        if layer.randomness == "different":
            new = list(args)
            for i in tensor_args:
                if bdims[i] is not None:
                    new[i] = _batching.pad_logical(args[i], self.ndim - 1)
            return op(*new), 0
        if any(bdims[i] is not None for i in tensor_args):
            return _same_draws(op, args, bdims, layer, len(args) - 1)
        one = empty(self._shape[1:], dtype=self.dtype, device=self.device)
        op(one, *args[1:])
        return copy_op(self, one.expand(*self._shape)), 0
    return _random_rule(rule)


def _inplace_error(op):
    return _batching.inplace_error(op.name)


rand_op.def_batch_rule(_factory_rule(rand_op, 0))
randn_op.def_batch_rule(_factory_rule(randn_op, 0))
randint_op.def_batch_rule(_factory_rule(randint_op, 2))
randperm_op.def_batch_rule(_random_rule(_randperm_rule))
normal_op.def_batch_rule(_random_rule(_normal_rule))
multinomial_op.def_batch_rule(_random_rule(_multinomial_rule))
for _op in (uniform__op, normal__op, random__op, exponential__op):
    _op.def_batch_rule(_inplace_random_rule(_op))
bernoulli__op.def_batch_rule(_inplace_random_rule(bernoulli__op, tensor_args=(1,)))
fill__op.def_batch_rule(_batching.elementwise(fill__op))
zero__op.def_batch_rule(_batching.elementwise(zero__op))
for _op in (normal_op, uniform__op, normal__op, random__op, exponential__op, bernoulli__op,
            fill__op, zero__op):
    _op.def_jvp(_tangents.zero)   # draws are not reparameterized; fills overwrite


@tensor_method("log_normal_")
def _log_normal_(self, mean=1.0, std=2.0, *, generator=None):
    if std <= 0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={std}")
    with no_grad():
        return self.normal_(mean, std, generator=generator).exp_()


@tensor_method("cauchy_")
def _cauchy_(self, median=0.0, sigma=1.0, *, generator=None):
    if sigma <= 0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={sigma}")
    with no_grad():
        u = self.new_empty(self.shape).uniform_(generator=generator)
        return self.copy_((u - 0.5).mul_(math.pi).tan_().mul_(sigma).add_(median))


@tensor_method("geometric_")
def _geometric_(self, p, *, generator=None):
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p}")
    with no_grad():
        u = self.new_empty(self.shape, dtype=_dtype.float64).uniform_(generator=generator)
        u = u.clamp_min(1e-300)
        return self.copy_((u.log() / math.log1p(-p)).ceil_().clamp_min_(1))
