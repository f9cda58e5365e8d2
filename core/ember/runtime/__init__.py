"""``ember.runtime``: everything a backend author uses, and nothing else is needed.

The runtime is the floor of ember: it imports no op, no dispatcher and no backend. The layers
above subscribe to what it announces (``events``). ``docs/writing-a-backend.md`` documents each
name below with its contract.

* the plug-in contract: ``hookimpl``/``hookspec`` (``ember_register_backends``,
  ``ember_register_ops``), ``Backend``, ``registry``, ``BackendUnavailable``
* kernels: ``KernelTable``; ops and their outputs: ``get_op``, ``all_ops``, ``output_specs``,
  ``OutputSpec``; kernel checks: ``KernelContractError``, ``set_kernel_checks``,
  ``kernel_checks_enabled``; the fallback's ``CPUFallbackWarning``
* memory and tensors: ``Storage``, ``make_tensor``, ``tensor_constructor``, ``is_tensor``,
  ``tensor_class``, ``get_native``/``set_native``, the layout accessors ``storage_of``,
  ``data_of``, ``shape_of``, ``strides_of``, ``offset_of``, ``layout_of``, ``contiguous_strides``,
  ``broadcast_shapes``, ``CachingAllocator``, ``OutOfMemoryError``, ``format_bytes``
* dtypes: ``dtypes`` (the dtype objects and categories), ``from_numpy_dtype``,
  ``to_numpy_dtype``
* streams, events, RNG: ``StreamBase``, ``EventBase``, ``HostStream``, ``HostEvent``,
  ``HostGenerator``
* ``events``: the publish/subscribe topics the layers above listen to
* on-disk caches of built artefacts: ``DiskCache`` (private, hash-verified, self-healing,
  atomic; see ``disk_cache``), ``CacheDirectoryError``
* determinism: ``alert_not_deterministic(op_name)``, which a kernel with a nondeterministic path
  calls (it raises in ``ember.use_deterministic_algorithms(True)`` mode),
  ``are_deterministic_algorithms_enabled``
"""
from . import dtypes, events
from .allocator import CachingAllocator, OutOfMemoryError, format_bytes
from .backend import Backend
from .catalog import OutputSpec, all_ops, get_op, output_specs
from .checks import KernelContractError, kernel_checks_enabled, set_kernel_checks
from .disk_cache import CacheDirectoryError, DiskCache
from .determinism import alert_not_deterministic, are_deterministic_algorithms_enabled
from .dtypes import from_numpy_dtype, to_numpy_dtype
from .fallback_warning import CPUFallbackWarning
from .hookspecs import hookimpl, hookspec
from .kernels import KernelTable
from .layout import broadcast_shapes, contiguous_strides
from .registry import BackendUnavailable, registry
from .rng import HostGenerator
from .storage import Storage
from .streams import EventBase, HostEvent, HostStream, StreamBase
from .tensors import (data_of, get_native, is_tensor, layout_of, make_tensor, offset_of,
                      set_native, shape_of, storage_of, strides_of, tensor_class,
                      tensor_constructor)

__all__ = [
    # the plug-in contract
    "hookimpl", "hookspec", "Backend", "registry", "BackendUnavailable",
    # kernels and ops
    "KernelTable", "get_op", "all_ops", "output_specs", "OutputSpec", "KernelContractError",
    "set_kernel_checks", "kernel_checks_enabled", "CPUFallbackWarning",
    # memory and tensors
    "Storage", "make_tensor", "tensor_constructor", "is_tensor", "tensor_class", "get_native",
    "set_native", "storage_of", "data_of", "shape_of", "strides_of", "offset_of", "layout_of",
    "contiguous_strides", "broadcast_shapes", "CachingAllocator",
    "OutOfMemoryError", "format_bytes",
    # dtypes
    "dtypes", "from_numpy_dtype", "to_numpy_dtype",
    # streams, events, random numbers
    "StreamBase", "EventBase", "HostStream", "HostEvent", "HostGenerator",
    # what the runtime announces
    "events",
    # on-disk caches
    "DiskCache", "CacheDirectoryError",
    # deterministic mode
    "alert_not_deterministic", "are_deterministic_algorithms_enabled",
]
