"""ember: a PyTorch-style tensor runtime whose devices are plug-ins.

``import ember`` reads the names of installed backends (entry points in ``ember.backends``) but
imports none of them; each loads the first time its device is used.
"""
from __future__ import annotations

import importlib as _importlib
import math as _math
import os as _os
import sys as _sys

from . import _logging  # noqa: F401 - first: applies EMBER_LOGS before anything below logs
from . import _dtype
from ._defaults import get_default_device, set_default_device
from ._device import device
from ._dtype import (bfloat16, complex64, complex128, float16, float32, float64, int8, int16,
                     int32, int64, uint8, get_default_dtype, set_default_dtype, promote_types,
                     can_cast)
from ._dtype import bool_ as bool  # noqa: A001 - PyTorch's name
from ._dtype import dtype
from ._layout import layout, sparse_coo, strided
from ._memory_format import (channels_last, channels_last_3d, contiguous_format, memory_format,
                             preserve_format)
from ._tensor import Size, Tensor
from ._type_info import finfo, iinfo
from ._tensor_str import set_printoptions
from .dispatch import keys as _keys
from .ops import conversion as _conversion
from .ops import elementwise as _elementwise
from .ops import factories as _factories
from .ops import views as _views
from .ops.elementwise import (addcdiv, addcmul, lerp)
from .ops.elementwise import (angle, complex, polar, sgn)  # noqa: A004 - PyTorch's names
from .ops.elementwise.complex_numbers import is_conj, is_neg, resolve_conj, resolve_neg
from .ops.elementwise.special import igamma, igammac
from .ops.elementwise import (add, clamp, clamp_, clamp_max, clamp_min, clip, clip_, div,
                              divide, elu, float_power, frexp, gcd, gelu, hardtanh, heaviside, i0,
                              lcm, ldexp, leaky_relu, mvlgamma, nan_to_num, nextafter,
                              polygamma, round, rsub, sinc, softplus, sub, subtract, true_divide,
                              where)
from .ops.elementwise.activation import prelu
from .ops.elementwise.activation_nodes import celu, celu_, hardshrink
from .ops.elementwise.closeness import allclose, equal, isclose
from .ops.elementwise.activation import rrelu, rrelu_, selu, selu_, threshold, threshold_
from .ops.factories import (arange, as_tensor, asarray, empty, empty_like, eye, from_dlpack,
                            from_numpy, full, full_like, linspace, logspace, ones, ones_like,
                            set_default_tensor_type, tensor, zeros, zeros_like)
from .ops.factories import (BFloat16Tensor, BoolTensor, ByteTensor, CharTensor,  # noqa: F401
                            ComplexDoubleTensor, ComplexFloatTensor, DoubleTensor, FloatTensor,
                            HalfTensor, IntTensor, LongTensor, ShortTensor)
from .ops.views import (as_strided, as_strided_scatter, broadcast_tensors, broadcast_to, chunk,
                        diagonal, flatten, movedim, moveaxis, narrow, permute, reshape, select,
                        split, squeeze, swapaxes, swapdims, t, tensor_split, transpose, unbind,
                        unflatten, unsqueeze, real, imag, view_as_real, view_as_complex)
# op families owned by their own modules; each defines __all__
from .ops.reduction import *  # noqa: F401,F403
from .ops.linalg import *  # noqa: F401,F403
from .ops.shape import *  # noqa: F401,F403
from .ops.indexing import *  # noqa: F401,F403
from .ops.sorting import *  # noqa: F401,F403
from .ops.random import *  # noqa: F401,F403
from .ops.sampling import *  # noqa: F401,F403
from .ops.nn import *  # noqa: F401,F403
from .ops.foreach import *  # noqa: F401,F403
from .ops.spatial import *  # noqa: F401,F403
from .ops.grid_sampling import *  # noqa: F401,F403
from .ops.distances import *  # noqa: F401,F403
from .ops.view_copies import *  # noqa: F401,F403
from .ops.differences import *  # noqa: F401,F403
from .ops.structure import *  # noqa: F401,F403
from .ops.factory_forms import *  # noqa: F401,F403
from .ops.conversion import clone, detach  # noqa: E402
from .ops.indexing.advanced import nonzero_static, unravel_index  # noqa: E402
from .ops.sorting import unique_consecutive  # noqa: E402
from .ops.views.reshaping import adjoint  # noqa: E402
from .ops import inplace_metadata as _inplace_metadata  # noqa: F401,E402 - set_, resize_, …
from .ops.linalg.lowrank import pca_lowrank, svd_lowrank  # noqa: F401,E402
from .ops.linalg.householder_qr import geqrf, ormqr  # noqa: F401,E402
from .autograd.inference import is_inference  # noqa: F401,E402
from .ops.linalg.lobpcg import lobpcg  # noqa: F401,E402
from .ops.histograms import *  # noqa: F401,F403
from .ops.scatter_reduce import *  # noqa: F401,F403
from .ops.rnn import *  # noqa: F401,F403
from .ops.fft import *  # noqa: F401,F403
from ._threads import get_num_threads, set_num_threads
from ._warn import is_warn_always_enabled, set_warn_always
from ._file_mapping import from_file
from . import _generator  # noqa: E402 - ember.default_generator (module __getattr__)
from ._generator import (Generator, get_rng_state, initial_seed, manual_seed, seed,
                         set_rng_state)
from .runtime.registry import registry as _registry
from .runtime import device_module as _device_module
from .runtime import device_types as _device_types
from . import library  # noqa: E402
from . import return_types  # noqa: E402 - PyTorch's torch.return_types
from . import testing  # noqa: E402
from . import autograd  # noqa: E402
from . import nn, utils  # noqa: E402
from .ops._util import TORCH_FUNCTIONS as _TORCH_FUNCTIONS  # noqa: E402
globals().update(_TORCH_FUNCTIONS)  # torch.conv2d, torch.dropout, torch.lstm…: nn's native forms
from . import func  # noqa: E402 - ember.func: vmap, grad, jvp… (registers the Batched key)
from .func import vmap  # noqa: E402 - torch.vmap is torch.func.vmap
from . import optim  # noqa: E402
from . import futures, distributed, jit, profiler  # noqa: E402
from .autograd import profiler as _autograd_profiler  # noqa: E402,F401 - torch.autograd.profiler
from . import special  # noqa: E402
from . import linalg  # noqa: E402
from .compiler import compile  # noqa: E402,A004 - torch.compile's name
from . import compiler  # noqa: E402
from . import export, onnx  # noqa: E402 - torch.export, torch.onnx
from . import sparse  # noqa: E402 - sparse COO tensors (layout=sparse_coo)
from .sparse import indices_copy, sparse_coo_tensor, values_copy  # noqa: E402
from . import distributions  # noqa: E402
from .jit._interop import get_num_interop_threads, set_num_interop_threads  # noqa: E402
from . import fft  # noqa: E402 - torch.fft
from . import signal  # noqa: E402 - torch.signal.windows
from . import masked  # noqa: E402 - torch.masked's reductions with a mask
from .signal.windows import (bartlett_window, blackman_window, hamming_window,  # noqa: E402
                             hann_window, kaiser_window)
from .fft._stft import istft, stft  # noqa: E402
from . import accelerator  # noqa: E402
from . import version  # noqa: E402
from . import amp  # noqa: E402
from .amp.autocast_mode import (autocast, autocast_decrement_nesting,  # noqa: E402
                                autocast_increment_nesting, clear_autocast_cache,
                                get_autocast_cpu_dtype, get_autocast_dtype,
                                get_autocast_gpu_dtype, is_autocast_cache_enabled,
                                is_autocast_cpu_enabled, is_autocast_enabled,
                                set_autocast_cache_enabled, set_autocast_cpu_dtype,
                                set_autocast_cpu_enabled, set_autocast_dtype,
                                set_autocast_enabled, set_autocast_gpu_dtype)
from .amp import GradScaler  # noqa: E402 - torch.GradScaler is torch.amp.GradScaler
from .autograd.anomaly import (is_anomaly_check_nan_enabled, is_anomaly_enabled,  # noqa: E402
                               set_anomaly_enabled)
from .futures import Future  # noqa: E402 - torch.Future
from .jit import fork, wait  # noqa: E402 - torch.fork / torch.wait are torch.jit's
from .runtime.allocator import OutOfMemoryError  # noqa: E402 - torch.OutOfMemoryError
from ._control_flow import cond, while_loop  # noqa: E402
from . import quasirandom  # noqa: E402 - torch.quasirandom.SobolEngine
from . import multiprocessing  # noqa: E402 - torch.multiprocessing (registers tensor sharing)
from . import random  # noqa: E402,F811 - torch.random (the module; ember.rand* are the ops)
from .random import thread_safe_generator  # noqa: E402
from .ops.removed import REMOVED as _REMOVED  # noqa: E402
globals().update(_REMOVED)  # torch.lstsq, torch.solve…: removed, saying what replaced them
from . import backends  # noqa: E402
from .backends._precision import (get_float32_matmul_precision,  # noqa: E402
                                  set_float32_matmul_precision)
from .runtime.determinism import (are_deterministic_algorithms_enabled,  # noqa: E402
                                  get_deterministic_debug_mode,
                                  is_deterministic_algorithms_warn_only_enabled,
                                  set_deterministic_debug_mode, use_deterministic_algorithms)
from .accelerator import get_device_module  # noqa: E402
from ._streams import Event, Stream  # noqa: E402
from .serialization import load, save  # noqa: E402
from .dispatch.grad_mode import (enable_grad, inference_mode, is_grad_enabled,  # noqa: E402
                                 is_inference_mode_enabled, no_grad, set_grad_enabled)

# torch's plain values: math's constants, and None for numpy-style ``x[:, ember.newaxis]``
pi, e, inf, nan = _math.pi, _math.e, _math.inf, _math.nan
newaxis = None

# aliases PyTorch has
half, double, short, long, cfloat, cdouble = float16, float64, int16, int64, complex64, complex128
int = int32  # noqa: A001
float = float32  # noqa: A001

globals().update({k: v for k, v in _elementwise.unary_api.items() if not k.endswith("_")})
globals().update({k: v for k, v in _elementwise.binary_api.items() if not k.endswith("_")})
result_type = _dtype.result_type
# torch.abs_, torch.fill_, torch.zero_…: function forms of the (now all attached) Tensor methods
from .ops.function_forms import *  # noqa: F401,F403,E402


def is_tensor(obj) -> bool:
    return isinstance(obj, Tensor)


def is_floating_point(t) -> bool:
    return t.is_floating_point()


def is_complex(t) -> bool:
    return t.is_complex()


def numel(t) -> int:
    return t.numel()


def typename(obj) -> str:
    """A tensor's legacy type string (``"ember.FloatTensor"``), else the dotted name of
    ``obj``'s class or of ``obj`` itself."""
    if isinstance(obj, Tensor):
        return obj.type()
    module = getattr(obj, "__module__", "") or ""
    qualname = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
    if qualname is None:
        module, qualname = obj.__class__.__module__ or "", obj.__class__.__qualname__
    return qualname if module in ("", "builtins") else f"{module}.{qualname}"


def is_vulkan_available() -> bool:
    """False: ember has no Vulkan backend."""
    return False


def spmm(input, mat2, out_dtype=None):
    """``torch.spmm``: ``mm`` that also takes a sparse COO ``input`` (``ember.sparse.mm``)."""
    if getattr(input, "layout", None) is sparse_coo:
        result = sparse.mm(input, mat2)
        return result if out_dtype is None else result.to(out_dtype)
    return mm(input, mat2, out_dtype)


class AcceleratorError(RuntimeError):
    """torch.AcceleratorError: an error an accelerator's runtime reported."""


def _announce_backend(name: str) -> None:
    _conversion.device_tensor_methods(name)
    _device_module.device_module(name)  # ember.<name>, importable as a module too


# the backends shipped in this distribution: trusted kernels; the CPU is the reference
_BUILTIN_BACKENDS = {"cpu": "ember_cpu", "cuda": "ember_cuda", "opencl": "ember_opencl"}

_registry.on_new_name(_announce_backend)
_registry.discover(builtin=_BUILTIN_BACKENDS)
# torch.cuda, torch.xpu, torch.mps… exist on every PyTorch build: so do ember's, saying why
# they are unavailable until a backend provides the device type
for _name in _device_types.DEVICE_MODULE_TYPES:
    _device_module.missing_device_module(_name)
_conversion.torch_device_surface()


def __getattr__(name):
    if name == "fx":                    # torch.fx is reachable from torch; loaded on first use
        return _importlib.import_module("ember.fx")
    if name == "default_generator":     # the CPU's Generator: asking for it loads the CPU backend
        return _generator.device_default_generator("cpu")
    # ember.<backend>: the device module of any installed backend, loaded or not; for PyTorch's
    # device modules that no backend provides, a module whose is_available() says why
    if _registry.is_known(name):
        return _device_module.device_module(name)
    if name in _device_types.DEVICE_MODULE_TYPES:
        return _device_module.missing_device_module(name)
    raise AttributeError(f"module 'ember' has no attribute '{name}'")


__version__ = version.__version__

# every public function and Tensor method takes torch's keywords and raises torch's binding errors
from ._api import binding as _binding  # noqa: E402
_binding.install(_sys.modules[__name__])
# torch's import paths where ember's modules are laid out differently (nn.modules.batchnorm…)
from ._api import paths as _paths  # noqa: E402
_paths.install()
del _binding, _paths
del annotations  # the __future__ import's name is not part of ember's API

# A full collection walks every object the cycle collector tracks. ember's import leaves ~100k
# of them (op tables, bindings, functions) that live as long as the process, and the objects of
# a training step's graphs set off full collections of ~45 ms each (actor_critic: 40 -> 30 ms a
# step without them). gc.freeze() moves the objects alive now to the permanent generation, which
# no collection walks; EMBER_GC_FREEZE=0 leaves the collector as it is.
if _os.environ.get("EMBER_GC_FREEZE", "1") not in ("", "0"):
    import gc as _gc
    _gc.freeze()
    del _gc
