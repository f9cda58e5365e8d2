"""ember's CUDA backend: NVIDIA GPUs as ``cuda:i``, on cupy.

Registered through the ``ember.backends`` entry point like any plug-in. Importing it is cheap and
never imports cupy: the backend is added at once and asks for cupy, the driver and devices the
first time it is asked whether it is available (``discovery`` gives the reason when not).
Layout:

* ``discovery``  -- cupy, driver, devices, CUDA_VISIBLE_DEVICES: available or why not
* ``cupy_api``   -- every call into cupy, behind one object (tests substitute a numpy stand-in)
* ``backend``    -- ``CUDABackend``: the core's ArrayBackend over cupy, plus what a GPU needs
* ``devices``    -- which device a kernel runs on; device properties
* ``memory``     -- ember's stream-aware pool (record_stream), statistics, OutOfMemoryError
* ``pinned``     -- stream-aware pinned host memory for non-blocking copies
* ``streams``    -- streams and events are cupy's
* ``asserts``    -- device-side asserts: value checks raised at the next synchronization
* ``transfer``   -- host/device copies (pinned, non-blocking), device-to-device, DLPack
* ``launch``     -- NVRTC programs and kernel launches
* ``gemm``       -- products on cuBLAS GemmEx: float16/bfloat16 natively, TF32 when allowed
* ``linalg``     -- decompositions and solvers on cuSOLVER (cupy.linalg / cupyx)
* ``prelude`` / ``kernels_random`` -- Philox4x32-10 random numbers (the OpenCL backend's stream)
* ``kernels_indexing`` -- deterministic accumulating writes (add and multiply), parallel
* ``sources``    -- every hand-written CUDA C program (the NVRTC compile test builds them all)
* ``nccl``       -- the "nccl" process group for ``ember.distributed``
"""
from ember.runtime import hookimpl


@hookimpl
def ember_register_backends(registry):
    from .backend import CUDABackend
    registry.add(CUDABackend())


@hookimpl
def ember_register_process_groups(registry):
    """"nccl" serves CUDA tensors, and is their default under ``init_process_group()`` only
    where CUDA is available; elsewhere ``backend="nccl"`` raises CUDA's unavailability reason."""
    from ember.distributed import Backend
    from ember.runtime import registry as devices

    from .nccl import make_group
    registry.add("nccl", make_group, devices=["cuda"])
    if devices.unavailable_reason("cuda") is not None and \
            Backend.default_device_backend_map.get("cuda") == "nccl":
        del Backend.default_device_backend_map["cuda"]
