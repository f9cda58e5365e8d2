"""ember's OpenCL backend: any OpenCL 1.2+ device (GPUs, CPUs through PoCL) as ``opencl:i``.

Registered through the ``ember.backends`` entry point like any plug-in. Importing it is cheap:
pyopencl is imported, and devices are looked for, on first use. Layout:

* ``device``  -- discovery (``EMBER_OPENCL_DEVICE``), per-device context, queues, caches
* ``memory``  -- the core caching allocator over ``pyopencl.Buffer``, stream-safe reuse
* ``streams`` -- streams = command queues, events = markers
* ``cltypes`` -- dtypes as OpenCL C types and conversions
* ``codegen`` -- the one elementwise kernel template (index math, compile cache, launch)
* ``math_unary`` / ``math_binary`` -- the C bodies of the elementwise ops
* ``ops_*``   -- one op family each: module-level kernels, their ``TABLE`` and ``register``
  (``backend.KERNEL_MODULES`` lists them); ``transfer`` -- host/device copies
"""
from ember.runtime import hookimpl


@hookimpl
def ember_register_backends(registry):
    from .backend import OpenCLBackend
    registry.add(OpenCLBackend())
