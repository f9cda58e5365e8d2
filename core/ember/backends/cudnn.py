"""``ember.backends.cudnn``: PyTorch's cuDNN switches.

No ember backend calls cuDNN (CPU: numpy; OpenCL: ember's own kernels), so every flag here is
kept and read back as in PyTorch but changes nothing; each flag's docstring says so. Scripts that
set ``cudnn.benchmark = True`` or ``cudnn.deterministic = True`` run unchanged. For determinism
use ``ember.use_deterministic_algorithms``.
"""
from __future__ import annotations

from ._flags import Flag, FlagModule, become


def is_available() -> bool:
    """False: no ember backend uses cuDNN."""
    return False


def version():
    """None: cuDNN is not used (PyTorch returns None when it is unavailable)."""
    return None


def is_acceptable(tensor) -> bool:
    """False for every tensor: no ember op hands work to cuDNN."""
    return False


class _CudnnModule(FlagModule):
    enabled = Flag(True, "Whether cuDNN may be used. No effect: no ember backend calls cuDNN.",
                   setter_name="set_enabled_cudnn")
    benchmark = Flag(False, "Time several convolution algorithms and keep the fastest. No effect: "
                            "each ember backend has one convolution algorithm.",
                     setter_name="set_benchmark_cudnn")
    benchmark_limit = Flag(10, "How many cuDNN algorithms benchmark mode tries. No effect.",
                           kind=int)
    deterministic = Flag(False, "Make cuDNN pick deterministic algorithms. No effect: ember's "
                                "convolutions are deterministic on CPU and OpenCL; "
                                "ember.use_deterministic_algorithms covers every op.",
                         setter_name="set_deterministic_cudnn")
    allow_tf32 = Flag(True, "Let cuDNN convolutions use TF32. No effect: no ember backend "
                            "computes in TF32.", setter_name="set_allow_tf32_cudnn")
    fp32_precision = Flag("none", "cuDNN's float32 precision ('none', 'ieee', 'tf32'). No effect.",
                          kind=str)

    def flags(self, enabled=False, benchmark=False, benchmark_limit=10, deterministic=False,
              allow_tf32=True):
        """Context manager: set the flags inside the block (PyTorch's defaults), restore them
        after."""
        return self._flags_context(enabled=enabled, benchmark=benchmark,
                                   benchmark_limit=benchmark_limit, deterministic=deterministic,
                                   allow_tf32=allow_tf32)


become(__name__, _CudnnModule)
