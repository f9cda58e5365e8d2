"""``map_location`` for ``ember.load``: where each loaded tensor (or torch storage) goes."""
from __future__ import annotations

from .._device import as_device, device as _device_cls
from .._tensor import Tensor


class DeviceMapError(RuntimeError):
    """A tensor cannot be placed where its file or ``map_location`` says."""


def placer(map_location, label):
    """``place(cpu_tensor, saved_location, what) -> tensor``, following ``map_location``:

    * None: each tensor back on the device it was saved from;
    * a device or device string: everything there;
    * a dict ``{saved location: target}`` (keys may also be a device type such as ``"cuda"``);
      locations it does not name stay where they were saved;
    * a callable ``fn(cpu_tensor, saved_location)`` returning the tensor to use, or None for the
      default placement (PyTorch passes a storage; ember passes the data as a CPU tensor, so
      ``lambda storage, loc: storage`` and ``lambda s, loc: s.to(...)`` work the same).
    """

    if map_location is None or isinstance(map_location, (str, _device_cls)):
        fixed = None if map_location is None else str(map_location)
        table = None
    elif isinstance(map_location, dict):
        fixed = None
        table = {str(k): str(v) for k, v in map_location.items()}
    elif callable(map_location):
        fixed = table = None
    else:
        raise TypeError(f"ember.load: map_location must be None, a device or device string, a "
                        f"dict of device strings, or a callable; got "
                        f"{type(map_location).__qualname__}")

    def move(t, target, saved, what):
        try:
            dev = as_device(target)
            return t if dev.type == "cpu" and dev.index in (None, 0) else t.to(dev)
        except Exception as e:
            if target == saved:
                raise DeviceMapError(
                    f"ember.load: {label}: {what} was saved on '{saved}', which this ember "
                    f"cannot use ({e}). If this machine has no such device, pass map_location "
                    f"(e.g. map_location='cpu', a dict such as {{'{saved}': 'cpu'}}, or a "
                    f"callable) to load it elsewhere.") from None
            raise DeviceMapError(f"ember.load: {label}: {what} was saved on '{saved}' and "
                                 f"cannot be restored on '{target}' (from map_location): "
                                 f"{e}") from None

    def place(t, saved, what):
        if table is None and fixed is None and map_location is not None:
            out = map_location(t, saved)
            if out is None:
                return move(t, saved, saved, what)
            if not isinstance(out, Tensor):
                raise TypeError(f"ember.load: map_location callable returned "
                                f"{type(out).__qualname__} for {what}; expected a Tensor or "
                                f"None")
            return out
        if fixed is not None:
            return move(t, fixed, saved, what)
        if table is not None:
            target = table.get(saved, table.get(saved.split(":")[0], saved))
            return move(t, target, saved, what)
        return move(t, saved, saved, what)

    return place
