"""Device types ember can name without having them: PyTorch's, and what would provide each.

A script written for PyTorch says ``"cuda:0"``, ``x.cuda()``, ``torch.mps.is_available()``. When
no installed backend registers that type, ember still knows the name: ``ember.device("cuda")``
exists (as ``torch.device("cuda")`` does on a CPU-only build), ``ember.cuda.is_available()`` is
False with the reason, and *using* the device raises :class:`DeviceNotInstalled`, which says
which package or extra provides it. A backend that registers the name (a CUDA backend through
its entry point) replaces all of this.
"""
from __future__ import annotations

# torch's device types (c10/core/DeviceType.h, in the order of torch's own error message)
TORCH_DEVICE_TYPES = ("cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep",
                      "hip", "ve", "fpga", "maia", "xla", "lazy", "vulkan", "mps", "meta", "hpu",
                      "mtia", "privateuseone")

# torch's per-type device modules (torch.cuda, torch.xpu, ...): ember.<name> exists for these
# even when nothing provides the type
DEVICE_MODULE_TYPES = ("cuda", "xpu", "mps", "mtia")

# what provides a device type: (the provider, how to install it)
PROVIDERS = {
    "cuda": ("ember's CUDA backend (NVIDIA GPUs, on cupy)", 'pip install "ember[cuda]"'),
    "opencl": ("ember's OpenCL backend (on pyopencl)", 'pip install "ember[opencl]"'),
    "meta": ("the ember-meta plug-in (plugins/ember-meta in ember's repository)",
             "pip install ember-meta"),
}


class DeviceNotInstalled(RuntimeError, AssertionError):
    """A device type PyTorch knows but no installed ember backend provides.

    A RuntimeError like ember's other device errors, and an AssertionError like the error a
    CPU-only PyTorch raises for ``x.cuda()`` ("Torch not compiled with CUDA enabled"), so
    scripts that catch either keep working.
    """


def is_torch_device_type(name: str) -> bool:
    return name in TORCH_DEVICE_TYPES


def not_installed_reason(name: str) -> str:
    """Why device type ``name`` can't be used, and how to get it."""
    if name in PROVIDERS:
        what, how = PROVIDERS[name]
        return f"device type '{name}' is not installed; it is provided by {what}: {how}"
    return (f"device type '{name}' is not installed; no ember package provides '{name}' "
            f"devices yet (ember ships cpu, cuda and opencl; other devices come as backend plug-ins, "
            f"see docs/writing-a-backend.md)")


def not_installed(name: str) -> DeviceNotInstalled:
    return DeviceNotInstalled(f"ember: {not_installed_reason(name)}")
