"""``ember.amp.GradScaler``: dynamic loss scaling, PyTorch's algorithm and state dict.

``scale(loss)`` multiplies by the current scale (a float32 0-d tensor on the loss's device);
``unscale_(optimizer)`` multiplies the gradients by 1/scale and records, per device, whether any
was inf/NaN; ``step`` unscales if needed and skips ``optimizer.step()`` when one was;
``update()`` halves the scale after a skipped step (``backoff_factor``) and doubles it after
``growth_interval`` clean steps (``growth_factor``). The checks and the scale update run as ember
ops on the device; only ``step``'s skip decision reads a value back, as in PyTorch.
"""
from __future__ import annotations

import warnings
from collections import defaultdict
from enum import Enum

from .. import _dtype
from .._tensor import Tensor
from ..dispatch.grad_mode import no_grad
from ..ops.elementwise import where
from ..ops.factories import full
from ..runtime.registry import registry
from ..runtime.devices import resolve_type
from .._warn import user_stacklevel

__all__ = ["GradScaler", "OptState"]


class OptState(Enum):
    READY = 0
    UNSCALED = 1
    STEPPED = 2


def _refresh_per_optimizer_state():
    return {"stage": OptState.READY, "found_inf_per_device": {}}


class _MultiDeviceReplicator:
    """A tensor copied lazily to each device that asks for it."""

    def __init__(self, master):
        self.master = master
        self._per_device = {}

    def get(self, device):
        t = self._per_device.get(device)
        if t is None:
            t = self._per_device[device] = self.master.to(device).clone()
        return t


def _non_finite_check_and_unscale_(grads, found_inf, inv_scale):
    """PyTorch's ``_amp_foreach_non_finite_check_and_unscale_``: ``found_inf`` becomes 1 if
    any gradient has an inf or NaN; every gradient is multiplied by ``inv_scale``."""
    for g in grads:
        bad = g.isfinite().logical_not().any().to(_dtype.float32)
        found_inf.copy_(found_inf.maximum(bad))
        g.mul_(inv_scale.to(g.dtype) if g.dtype is not inv_scale.dtype else inv_scale)


def _update_scale_(scale, growth_tracker, found_inf, growth_factor, backoff_factor,
                   growth_interval):
    """PyTorch's ``_amp_update_scale_``, on the device: back off after an inf, grow after
    ``growth_interval`` clean steps (keeping the old scale if the grown one is not finite)."""
    found = found_inf.gt(0)
    successful = growth_tracker + 1
    grow = found.logical_not().logical_and(successful.eq(growth_interval))
    grown = scale * growth_factor
    kept = where(grow.logical_and(grown.isfinite()), grown, scale)
    scale.copy_(where(found, scale * backoff_factor, kept))
    growth_tracker.copy_(where(found.logical_or(grow), 0, successful).to(_dtype.int32))


class GradScaler:
    """``GradScaler(device="cuda", init_scale=2.**16, growth_factor=2.0, backoff_factor=0.5,
    growth_interval=2000, enabled=True)``."""

    def __init__(self, device="cuda", init_scale=2.0 ** 16, growth_factor=2.0,
                 backoff_factor=0.5, growth_interval=2000, enabled=True):
        if not isinstance(device, str):
            device = str(device)
        device = resolve_type(device)    # GradScaler("cuda") under a cuda=opencl redirect
        self._device = device
        self._enabled = enabled
        if enabled and (not registry.is_known(device) or
                        registry.unavailable_reason(device) is not None):
            warnings.warn(f"ember.amp.GradScaler is enabled, but {device} is not available.  "
                          f"Disabling.", UserWarning, stacklevel=user_stacklevel())
            self._enabled = False
        if self._enabled:
            if growth_factor <= 1.0:
                raise AssertionError("The growth factor must be > 1.0.")
            if backoff_factor >= 1.0:
                raise AssertionError("The backoff factor must be < 1.0.")
            self._init_scale = init_scale
            self._scale = None
            self._growth_factor = growth_factor
            self._backoff_factor = backoff_factor
            self._growth_interval = growth_interval
            self._init_growth_tracker = 0
            self._growth_tracker = None
            self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)

    def _check_scale_growth_tracker(self, funcname):
        fix = ("This may indicate your script did not use scaler.scale(loss or outputs) earlier "
               "in the iteration.")
        if self._scale is None:
            raise AssertionError(f"Attempted {funcname} but _scale is None.  " + fix)
        if self._growth_tracker is None:
            raise AssertionError(f"Attempted {funcname} but _growth_tracker is None.  " + fix)
        return self._scale, self._growth_tracker

    def _lazy_init_scale_growth_tracker(self, dev):
        self._scale = full((), self._init_scale, dtype=_dtype.float32, device=dev)
        self._growth_tracker = full((), self._init_growth_tracker, dtype=_dtype.int32,
                                    device=dev)

    def scale(self, outputs):
        """``outputs`` (a tensor or an iterable of them) multiplied by the scale."""
        if not self._enabled:
            return outputs
        if isinstance(outputs, Tensor):
            if self._scale is None:
                self._lazy_init_scale_growth_tracker(outputs.device)
            return outputs * self._scale.to(outputs.device)
        stash = []

        def apply_scale(val):
            if isinstance(val, Tensor):
                if not stash:
                    if self._scale is None:
                        self._lazy_init_scale_growth_tracker(val.device)
                    stash.append(_MultiDeviceReplicator(self._scale))
                return val * stash[0].get(val.device)
            if isinstance(val, (list, tuple)):
                return type(val)(map(apply_scale, val))
            if hasattr(val, "__iter__"):
                return map(apply_scale, val)
            raise ValueError("outputs must be a Tensor or an iterable of Tensors")
        return apply_scale(outputs)

    def _unscale_grads_(self, optimizer, inv_scale, found_inf, allow_fp16):
        per_device_inv_scale = _MultiDeviceReplicator(inv_scale)
        per_device_found_inf = _MultiDeviceReplicator(found_inf)
        grouped = defaultdict(lambda: defaultdict(list))
        with no_grad():
            for group in optimizer.param_groups:
                for param in group["params"]:
                    if param.grad is None:
                        continue
                    if not allow_fp16 and param.grad.dtype is _dtype.float16:
                        raise ValueError("Attempting to unscale FP16 gradients.")
                    grouped[param.grad.device][param.grad.dtype].append(param.grad)
            for device, per_dtype in grouped.items():
                for grads in per_dtype.values():
                    _non_finite_check_and_unscale_(grads, per_device_found_inf.get(device),
                                                   per_device_inv_scale.get(device))
        return per_device_found_inf._per_device

    def unscale_(self, optimizer):
        """Divide ``optimizer``'s gradients by the scale (once per step), noting infs/NaNs."""
        if not self._enabled:
            return
        self._check_scale_growth_tracker("unscale_")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is OptState.UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since the "
                               "last update().")
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        inv_scale = self._scale.double().reciprocal().float()
        found_inf = full((), 0.0, dtype=_dtype.float32, device=self._scale.device)
        state["found_inf_per_device"] = self._unscale_grads_(optimizer, inv_scale, found_inf,
                                                             False)
        state["stage"] = OptState.UNSCALED

    def step(self, optimizer, *args, **kwargs):
        """Unscale (unless done) and run ``optimizer.step`` unless a gradient was inf/NaN;
        returns what ``optimizer.step`` returned (None when skipped)."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is "
                               "enabled.")
        self._check_scale_growth_tracker("step")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if state["stage"] is OptState.READY:
            self.unscale_(optimizer)
        if len(state["found_inf_per_device"]) == 0:
            raise AssertionError("No inf checks were recorded for this optimizer.")
        retval = None
        if not sum(v.item() for v in state["found_inf_per_device"].values()):
            retval = optimizer.step(*args, **kwargs)
        state["stage"] = OptState.STEPPED
        return retval

    def update(self, new_scale=None):
        """Adjust the scale for the next iteration (or set it to ``new_scale``)."""
        if not self._enabled:
            return
        scale, growth_tracker = self._check_scale_growth_tracker("update")
        if new_scale is not None:
            if isinstance(new_scale, float):
                scale.fill_(new_scale)
            else:
                reason = ("new_scale should be a float or a 1-element ember.FloatTensor with "
                          "requires_grad=False.")
                if not isinstance(new_scale, Tensor) or \
                        new_scale.device.type != scale.device.type or \
                        new_scale.numel() != 1 or new_scale.requires_grad:
                    raise AssertionError(reason)
                scale.copy_(new_scale.reshape(()))
        else:
            found_infs = [f.to(scale.device) for st in self._per_optimizer_states.values()
                          for f in st["found_inf_per_device"].values()]
            if not found_infs:
                raise AssertionError("No inf checks were recorded prior to update.")
            combined = found_infs[0]
            for f in found_infs[1:]:
                combined = combined + f
            _update_scale_(scale, growth_tracker, combined, self._growth_factor,
                           self._backoff_factor, self._growth_interval)
        self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)

    def _get_scale_async(self):
        return self._scale

    def get_scale(self) -> float:
        """The current scale as a Python float (reads the device)."""
        if self._enabled:
            return self._init_scale if self._scale is None else float(self._scale.item())
        return 1.0

    def get_growth_factor(self):
        return self._growth_factor

    def set_growth_factor(self, new_factor):
        self._growth_factor = new_factor

    def get_backoff_factor(self):
        return self._backoff_factor

    def set_backoff_factor(self, new_factor):
        self._backoff_factor = new_factor

    def get_growth_interval(self):
        return self._growth_interval

    def set_growth_interval(self, new_interval):
        self._growth_interval = new_interval

    def _get_growth_tracker(self):
        if self._enabled:
            return self._init_growth_tracker if self._growth_tracker is None else \
                int(self._growth_tracker.item())
        return 0

    def is_enabled(self) -> bool:
        return self._enabled

    def state_dict(self):
        """``scale``, ``growth_factor``, ``backoff_factor``, ``growth_interval``,
        ``_growth_tracker`` (PyTorch's keys); empty when disabled."""
        if self._enabled:
            return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                    "backoff_factor": self._backoff_factor,
                    "growth_interval": self._growth_interval,
                    "_growth_tracker": self._get_growth_tracker()}
        return {}

    def load_state_dict(self, state_dict):
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved "
                               "from a disabled instance of GradScaler.")
        self._init_scale = state_dict["scale"]
        if self._scale is not None:
            self._scale.fill_(state_dict["scale"])
        self._growth_factor = state_dict["growth_factor"]
        self._backoff_factor = state_dict["backoff_factor"]
        self._growth_interval = state_dict["growth_interval"]
        self._init_growth_tracker = state_dict["_growth_tracker"]
        if self._growth_tracker is not None:
            self._growth_tracker.fill_(state_dict["_growth_tracker"])

    def __getstate__(self):
        state = self.__dict__.copy()
        if self._enabled:
            if len(self._per_optimizer_states) != 0:
                raise AssertionError("A GradScaler instance may only be pickled at the "
                                     "beginning of an iteration, or at the end after "
                                     "scaler.update().")
            state["_init_scale"] = self.get_scale()
            state["_init_growth_tracker"] = self._get_growth_tracker()
            state["_scale"] = None
            state["_growth_tracker"] = None
            state["_per_optimizer_states"] = None
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        if self._enabled:
            self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)
