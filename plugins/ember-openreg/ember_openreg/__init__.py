"""ember-openreg: an emulated accelerator, and the template for a third-party ember backend.

After ``pip install ember-openreg``, ``device="openreg"`` (two devices, ``openreg:0`` and
``openreg:1``), ``ember.openreg`` and ``Tensor.openreg()`` work; nothing in ember names this
package. It behaves like a real accelerator where it matters to the code above it:

* its memory is a private arena per device, so host and device never alias;
* kernels are queued on streams and run on worker threads, so the host only waits when it
  reads values, and stream/event ordering is real;
* it has a small native kernel set and lets ember's CPU fallback run the rest.

Layout (read in this order):

* ``__init__``  -- the two plugin hooks: ``ember_register_backends`` and ``ember_register_ops``.
  Importing this module is cheap; ember imports it on the first use of ``device="openreg"``.
* ``backend``   -- ``OpenRegBackend``: devices, storage, uploads/downloads, streams, sync.
* ``memory``    -- the arena ("device DRAM") under the core's ``CachingAllocator``.
* ``streams``   -- ``Stream`` = a worker thread with a FIFO of kernels; ``Event`` = a marker.
* ``kernels``   -- the native kernels: a host half (shape, dtype, allocate, launch) and a
  device half (numpy on arena memory, run by the worker).
* ``random``    -- per-launch Philox snapshots of the core's host generator; random kernels.
* ``extra_ops`` -- an op only this package ships (``ember.ops.openreg.fused_bias_gelu``).

Environment: ``EMBER_OPENREG_MEMORY`` (arena bytes per device: ``256M``, ``1G``; default 1 GiB,
reserved lazily), ``EMBER_OPENREG_DEVICES`` (default 2).
"""
from ember.runtime import hookimpl


@hookimpl
def ember_register_backends(registry):
    from .backend import OpenRegBackend
    registry.add(OpenRegBackend())


@hookimpl
def ember_register_ops(library):
    # `library` may only write the kernel tables of the backends this plugin added (openreg):
    # a plugin can add ops and override kernels for its own devices, never for the CPU
    from .extra_ops import register
    register(library)
