"""Kernel output checks: a kernel's results against its op's meta function.

A kernel must return Tensors (not numpy arrays), of the shape and dtype the op's meta function
gives, on the device the op was dispatched to. Plug-in backends (anything not shipped with
ember) are always checked: a wrong kernel then fails with an error naming the backend, the
kernel and what was expected and returned, instead of corrupting what runs after it. Built-in
backends (cpu, opencl) are checked only in debug mode: ``EMBER_CHECK_KERNELS=1`` in the
environment, or ``set_kernel_checks(True)`` (``ember-conformance`` turns it on).

The dispatcher asks ``checked_kernel`` once per (op, device) resolution; when no check applies
it gets the kernel itself back, so an unchecked kernel costs nothing per call.
"""
from __future__ import annotations

import os

from . import events
from .catalog import specs_of
from .registry import registry
from .tensors import is_tensor

ENV = "EMBER_CHECK_KERNELS"
_enabled = [os.environ.get(ENV, "").strip() not in ("", "0")]


class KernelContractError(RuntimeError):
    """A backend's kernel returned something its op's contract does not allow."""


def kernel_checks_enabled() -> bool:
    """True when built-in backends' kernels are checked too (debug mode)."""
    return _enabled[0]


def set_kernel_checks(enabled: bool) -> None:
    """Check built-in backends' kernels too (True) or only plug-ins' (False). Every op resolves
    again, so the change applies to the next call."""
    _enabled[0] = bool(enabled)
    events.publish(events.KERNEL_CHANGED, None, None)


def applies_to(backend) -> bool:
    """Whether ``backend``'s kernels are checked now."""
    return _enabled[0] or not registry.is_builtin(backend.name)


def checked_kernel(op, backend, device, kernel):
    """What the dispatcher should call for ``op`` on ``device``: ``kernel`` itself when no check
    applies, else a wrapper that checks every result."""
    if not applies_to(backend):
        return kernel
    meta = op.meta
    label = kernel_label(kernel)
    # an op with a Tensor input and a Device argument (``_to_device``) puts its output there
    schema = getattr(op, "schema", None)
    names = getattr(schema, "arg_names", ())
    target = (names.index("device") if "device" in names and getattr(schema, "tensor_positions",
                                                                      ()) else None)

    # "-> ()" on an op that writes its arguments (foreach/fused optimizer ops)
    returns_nothing = (schema is not None and not schema.returns
                       and bool(getattr(op, "mutates", ())))

    def checked(*args, **kwargs):
        if returns_nothing:
            out = kernel(*args, **kwargs)
            if out is not None:
                raise KernelContractError(
                    f"{backend.name} kernel for '{op.name}' ({label}) returned "
                    f"{_describe(out)}; expected None (the op only writes its arguments)")
            return out
        specs = specs_of(meta(*args, **kwargs)) if meta is not None else None
        out = kernel(*args, **kwargs)
        expected = device if target is None or target >= len(args) else args[target]
        check_outputs(op.name, backend.name, label, expected, out, specs)
        return out

    checked.__name__ = f"checked_{getattr(kernel, '__name__', 'kernel')}"
    checked.__wrapped__ = kernel
    return checked


def kernel_label(kernel) -> str:
    """``module.qualname`` of a kernel (bound methods, partials and a compiled kernel's
    ``__wrapped__`` Python function unwrapped)."""
    kernel = getattr(kernel, "__wrapped__", None) or kernel
    fn = getattr(kernel, "__func__", None) or getattr(kernel, "func", None) or kernel
    module = getattr(fn, "__module__", None) or "?"
    return f"{module}.{getattr(fn, '__qualname__', None) or type(fn).__name__}"


def check_outputs(op_name, backend_name, label, device, out, specs) -> None:
    """Raise ``KernelContractError`` unless ``out`` matches ``specs`` (``OutputSpec``s, or None
    when the op has no meta function: then only "Tensors on ``device``" is checked)."""
    where = f"{backend_name} kernel for '{op_name}' ({label})"
    outs = out if isinstance(out, (tuple, list)) else (out,)
    if specs is not None:
        if len(specs) == 1 and isinstance(out, (tuple, list)) or len(outs) != len(specs):
            raise KernelContractError(f"{where} returned {_describe(out)}; expected "
                                      f"{_expect(specs, device)}")
    for i, o in enumerate(outs):
        spec = specs[i] if specs is not None else None
        what = f"{where}: output {i} is" if len(outs) > 1 else f"{where} returned"
        if specs is not None and spec is None:  # the meta function says: left undefined
            if o is not None:
                raise KernelContractError(f"{what} {_describe(o)}; expected None (an output "
                                          f"these arguments leave undefined)")
            continue
        if not is_tensor(o):
            raise KernelContractError(f"{what} {_describe(o)}, not an ember Tensor; expected "
                                      f"{_expect((spec,), device) if spec else 'a Tensor'} "
                                      f"(kernels wrap their results with "
                                      f"ember.runtime.make_tensor)")
        problems = []
        if o.device is not device and o.device != device:
            problems.append(f"device {o.device} (expected {device})")
        if spec is not None:
            if tuple(o.shape) != spec.shape:
                problems.append(f"shape {list(o.shape)} (expected {list(spec.shape)})")
            if o.dtype is not spec.dtype:
                problems.append(f"dtype {o.dtype} (expected {spec.dtype})")
        if problems:
            raise KernelContractError(f"{what} a Tensor with {', '.join(problems)}")


def _describe(x) -> str:
    if is_tensor(x):
        return f"a Tensor of shape {list(x.shape)}, dtype {x.dtype} on {x.device}"
    if isinstance(x, (tuple, list)):
        return f"a {type(x).__name__} of {len(x)} ({', '.join(_describe(o) for o in x)})"
    return f"a {type(x).__module__}.{type(x).__qualname__}" if x is not None else "None"


def _expect(specs, device) -> str:
    parts = [f"a Tensor of shape {list(s.shape)}, dtype {s.dtype} on {device}" for s in specs]
    return parts[0] if len(parts) == 1 else f"{len(parts)} outputs ({'; '.join(parts)})"
