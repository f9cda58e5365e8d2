"""ember's ``meta`` device: tensors with a shape, dtype and strides but no data.

Every kernel here is generated from the op's meta function (``op.meta``, written once in the
core): ``ember.runtime.output_specs`` gives the outputs' shapes and dtypes from the arguments and
the kernel allocates data-less tensors. So a model too large for any memory can be built, moved
(``Module.to("meta")``), inspected and even differentiated structurally, at no cost. Views are
composites in the core and share the (empty) storage as on any device. Reading values
(``.item()``, ``.tolist()``, copying to another device) fails clearly, as in PyTorch.

Ops whose output shape depends on input values cannot have a meta function; they are listed in
``DATA_DEPENDENT`` with the reason, and running them here raises ``NotImplementedError``.
"""
from __future__ import annotations

import math

import ember
from ember.runtime import (Backend, KernelTable, Storage, all_ops, from_numpy_dtype, get_op,
                           hookimpl, is_tensor, make_tensor, output_specs)

__all__ = ["MetaBackend", "DATA_DEPENDENT", "NO_DATA"]

#: ops whose output shape depends on the input's values: no meta function can exist
DATA_DEPENDENT = {
    "nonzero": "its output has one row per nonzero element, and a meta tensor has no values "
               "to count",
    "masked_select": "its output has one element per True value of the mask, and a meta tensor "
                     "has no values to count",
    "unique": "its output has one element per distinct value, and a meta tensor has no values "
              "to compare",
}

NO_DATA = "Cannot copy out of meta tensor; no data!"


def _device_of(args):
    for a in args:
        if is_tensor(a):
            return a.device
        if isinstance(a, (list, tuple)):
            for x in a:
                if is_tensor(x):
                    return x.device
    for a in args:  # factories name their device in an argument
        if isinstance(a, ember.device):
            return a
    raise RuntimeError("meta: an op ran with neither a tensor nor a device argument")


def _empty(shape, dtype, device):
    shape = tuple(shape)
    # nbytes is what the tensor would take on a real device, so memory can be planned from it
    return make_tensor(Storage(None, math.prod(shape) * dtype.itemsize, device), shape, dtype)


def meta_kernel(op):
    """A kernel for ``op`` that allocates data-less outputs from its meta function."""
    schema = str(op.schema)
    multi = "->" in schema and schema.rsplit("->", 1)[1].strip().startswith("(")

    def kernel(*args, **kwargs):
        specs = output_specs(op, *args, **kwargs)
        if specs and specs[0] is not None and specs[0].alias is not None:
            return specs[0].alias  # an in-place op: the mutated argument is the result
        dev = _device_of(args)
        # None where the op leaves an output undefined (a backward op's masked output)
        outs = tuple(None if spec is None else _empty(spec.shape, spec.dtype, dev)
                     for spec in specs)
        return outs if multi or len(outs) > 1 else outs[0]

    kernel.__name__ = f"meta_{op.name.replace('::', '_')}"
    return kernel


def data_dependent_kernel(name, reason):
    def kernel(*args, **kwargs):
        raise NotImplementedError(f"{name}: can't run on the meta device: {reason}. (PyTorch "
                                  f"refuses it on meta tensors too; run it on a real device.)")
    kernel.__name__ = f"meta_{name}"
    return kernel


def _kernel_on_demand(name):
    """A kernel for an op that got a meta function after the backend was made
    (``ember.library.custom_op(...).register_fake``), made on its first lookup."""
    try:
        op = get_op(name)
    except KeyError:
        return None
    if op.meta is not None:
        return meta_kernel(op)
    return None


class MetaBackend(Backend):
    name = "meta"
    cpu_fallback = False  # running an op on real data would defeat the point
    has_data = False      # `ember demo` and the benchmarks skip this device

    def __init__(self):
        super().__init__()
        self.kernels = KernelTable(self.name, on_missing=_kernel_on_demand)
        for name, op in all_ops().items():
            # composites (views, std, addmm…) run their decomposition over these kernels;
            # views in particular must share their base's storage, not get a new one. An op
            # with both a meta function and a composite (the composite a fallback for backends
            # without a kernel, which may read values, as nll_loss's bounds check) gets the
            # meta kernel
            if op.meta is not None:
                self.kernels.register(name, meta_kernel(op))
        for name, reason in DATA_DEPENDENT.items():
            self.kernels.register(name, data_dependent_kernel(name, reason))

    def device_count(self) -> int:
        return 1

    def device_name(self, index) -> str:
        return "meta (shapes and dtypes only, no data)"

    # -- storage and data movement --------------------------------------------------------------
    def empty(self, shape, dtype, device):
        return _empty(shape, dtype, device)

    def from_numpy(self, array, device, non_blocking=False):
        """``ember.tensor(data, device="meta")`` / ``cpu_tensor.to("meta")``: the data's shape
        and dtype; the values are dropped, as in PyTorch."""
        return _empty(array.shape, from_numpy_dtype(array.dtype), device)

    def to_numpy(self, tensor):
        raise NotImplementedError(f"{NO_DATA} (a meta tensor of shape {list(tensor.shape)} and "
                                  f"dtype {tensor.dtype} has no values to read or copy; run on a "
                                  f"real device to get values)")

    def copy_(self, dst, src, non_blocking=False):
        if src.device.type != "meta":
            raise NotImplementedError(f"copy_: can't copy from {src.device} into a meta tensor "
                                      f"through the backend; use dst.copy_(src)")
        if tuple(dst.shape) != tuple(src.shape):
            raise RuntimeError(f"copy_: shapes {list(dst.shape)} and {list(src.shape)} differ")
        return dst

    def storage_nbytes(self, data) -> int:
        return 0  # a meta Storage holds no memory; Storage.nbytes says what it would take


@hookimpl
def ember_register_backends(registry):
    registry.add(MetaBackend())
