"""torch's import paths in ember (issue #30, item 3): every public module, class and function
torch 2.13 has at an import path (``tests/data/torch_paths.json``, ``tools/torch_paths.py``) is at
the same ember path, and is the same object as at its canonical path (where torch defines it):
``ember.nn.modules.activation.MultiheadAttention is ember.nn.MultiheadAttention``.

Left out: the subtrees the snapshot excludes (each with its reason), the top-level names
``bench/api_coverage.py`` excludes, and the gaps listed in ``KNOWN_GAPS`` (names ember does not
have yet, each with the reason).
"""
from __future__ import annotations

import functools
import importlib
import json
import os
import re
import sys
import types

import pytest

import ember

with open(os.path.join(os.path.dirname(__file__), "data", "torch_paths.json")) as f:
    PATHS = json.load(f)

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "bench"))
import api_coverage  # noqa: E402

# what ember does not have yet at these paths (regex over the torch path): why
KNOWN_GAPS = {
    r"^torch\.autograd\.graph\.allow_mutation_on_saved_tensors$":
        "clone-on-write of saved tensors (needs a dispatch mode that intercepts in-place ops)",
    r"^torch\.autograd\.graph\.(region_activation_memory_budget|"
    r"set_override_stale_capture_stream|set_warn_on_accumulate_grad_stream_mismatch)$":
        "torch.compile's activation-memory budget and CUDA-graph stream settings",
    r"^torch\.autograd\.(function\.(BackwardCFunction|FunctionMeta|InplaceFunction|"
    r"NestedIOFunction)|NestedIOFunction|profiler\.\w+|variable\.VariableMeta|grad_mode\.\w+|"
    r"enforce_grad_layout_policy|gradcheck\.get_\w+)$":
        "autograd internals and legacy profiler helpers",
    r"^torch\.optim\.swap_in_optimizer_params_and_state$": "optimizer state swapping",
    r"^torch\.compiler\.": "torch.compiler's dynamo API (ember.compile is its own tracer)",
    r"^torch\.nn\.attention\.": "FlashAttention implementation registry and causal-bias "
                                "helpers",
    r"^torch\.nn\.modules\.(linear_cross_entropy\w*|module\.register_module_\w+|utils\.\w+)$|"
    r"^torch\.nn\.modules\.(linear_cross_entropy\w*|utils)$|"
    r"^torch\.nn\.(modules\.)?LinearCrossEntropyOptions$":
        "global module hooks, state-dict prefix helper, linear cross-entropy module",
    r"SyncBatchNorm$": "cross-process batch norm over NCCL process groups (CUDA only in torch)",
    r"^torch\.nn\.modules\.linear_cross_entropy\w*\.\w+$": "linear cross-entropy module",
    r"^torch\.nn\.parallel\.parallel_apply\.get_a_var$|"
    r"^torch\.nn\.utils\.spectral_norm\.SpectralNorm\w+Hook$":
        "DataParallel and spectral_norm internals",
    r"^torch\.nn\.parallel\.comm(\.|$)": "CUDA collectives of DataParallel",
    r"^torch\.backends\.(cuda\.\w+|mha(\.\w+)?|mkl(\.\w+)?)$":
        "backend flags (SDP kernels, cuBLAS/cuFFT handles, MHA fast path, MKL)",
    r"^torch\.(cuda|xpu|mps|mtia)\.[A-Z]\w*$|^torch\.(cuda|xpu|mps|mtia)\.(compile_shader|"
    r"load_metallib|attach_out_of_memory_observer|graph|device_of|get_stream_from_external|"
    r"make_graphed_callables|use_mem_pool|change_current_allocator)$|^torch\.cuda\.amp\.\w+$":
        "device-module classes (streams, events, graphs, allocators, typed tensors) and graph "
        "capture",
    r"^torch\.accelerator\.(memory(\.\w+)?|Graph|empty_host_cache|get_memory_info|"
    r"reset_accumulated_memory_stats)$": "accelerator memory functions of torch 2.9+",
    r"^torch\.amp\.autocast_mode\.autocast_decorator$": "autocast's decorator helper",
    r"^torch\.(export|onnx|jit|profiler|library|serialization|distributed)\.\w+$":
        "torch.export / onnx / jit / profiler / library / serialization / distributed names "
        "outside ember's API (see bench/api_coverage.py)",
    r"^torch\.return_types\.\w+$": "structseq types of out= variants and histogram",
    r"^torch\.func\.(debug_unwrap|functionalize|rearrange)$": "functionalize and debugging",
    r"^torch\.utils\.checkpoint\.(CheckpointFunction|CheckpointPolicy|GraphExecGroup|"
    r"SelectiveCheckpointContext|create_selective_checkpoint_contexts)$":
        "selective checkpointing and the reentrant checkpoint's Function",
    r"^torch\.utils\.(hooks\.\w+|dlpack\.DLDeviceType)$": "hook helpers and the DLPack enum",
    r"^torch\.utils\.data\.(datapipes\.\w+\.)?(DFIterDataPipe|argument_validation|"
    r"runtime_validation\w*)$|^torch\.utils\.data\.datapipes\.map\.callable\.default_fn$|"
    r"^torch\.utils\.data\.datapipes\.iter\.RoutedDecoder$":
        "DataFrame datapipes and runtime type validation",
    r"^torch\.masked\.(MaskedTensor|masked_tensor|as_masked_tensor|is_masked_tensor)$":
        "the prototype MaskedTensor subclass",
    r"^torch\.sparse\.(sampled_addmm|spsolve|as_sparse_gradcheck|\w+Tensor)$":
        "CSR-only sampled_addmm and spsolve, gradcheck's sparse wrapper, legacy typed classes",
    r"^torch\.classproperty$": "torch's internal descriptor helper",
}


def _exclusion(path):
    for prefix in PATHS["excluded"]:
        p = prefix.rstrip(".")
        if path == p or path.startswith(p + "."):
            return PATHS["excluded"][prefix]
    module, _, name = path.rpartition(".")
    ns = "torch" if module == "torch" else module[len("torch."):]
    if ns in api_coverage.NAMESPACES:
        reason = api_coverage.excluded_reason(ns, name)
        if reason is not None:
            return reason
    for pattern, reason in KNOWN_GAPS.items():
        if re.search(pattern, path):
            return reason
    return None


def ember_object(path):
    """``from <module> import <name>`` for torch's ``path`` with ``ember`` for ``torch``: the
    attribute of the module (``ember.autograd.gradcheck`` is the function, as torch's is,
    though a module of that name exists too)."""
    module, _, name = path.rpartition(".")
    mod = ember_at(module)
    return getattr(mod, name, None) if mod is not None else None


def ember_at(path):
    """The module or object at torch's ``path`` with ``ember`` for ``torch``, as an import
    statement reaches it: the longest importable module prefix, then attributes."""
    parts = ("ember" + path[len("torch"):]).split(".")
    for i in range(len(parts), 0, -1):
        name = ".".join(parts[:i])
        try:
            obj = importlib.import_module(name)
        except ImportError:
            continue
        except Exception:  # noqa: BLE001 - a module failing to import is not there
            return None
        for part in parts[i:]:
            try:
                obj = getattr(obj, part)
            except Exception:  # noqa: BLE001 - AttributeError, or a property that raises
                return None
        return obj
    return None


def _same(a, b):
    if a is b or a == b:  # bound methods of a device module compare equal
        return True
    if isinstance(a, functools.partial) and isinstance(b, functools.partial):
        return a.func == b.func and a.args == b.args
    return False


def test_modules_exist():
    missing = [m for m in PATHS["modules"]
               if _exclusion(m) is None and not isinstance(ember_at(m), types.ModuleType)]
    assert not missing, "\n".join(missing)


def test_objects_exist_and_are_their_canonical_object():
    missing, different, checked = [], [], 0
    for path, canonical in PATHS["objects"].items():
        if _exclusion(path) is not None:
            continue
        obj = ember_object(path)
        if obj is None:
            missing.append(path)
            continue
        checked += 1
        if canonical != path and _exclusion(canonical) is None:
            home = ember_object(canonical)
            if home is not None and not _same(obj, home):
                different.append(f"{path} is not {canonical}")
    assert checked > 1500
    assert not missing, f"{len(missing)} missing:\n" + "\n".join(missing)
    assert not different, "\n".join(different)


@pytest.mark.parametrize("statement", [
    "from ember.nn.modules.activation import MultiheadAttention",
    "from ember.nn.modules.batchnorm import BatchNorm2d",
    "from ember import vmap",
    "from ember.functional import einsum",
    "from ember.signal.windows.windows import hann",
    "from ember.optim.adamw import AdamW",
    "from ember.utils.data.datapipes.iter.filelister import FileListerIterDataPipe",
])
def test_import_statements(statement):
    exec(statement, {})  # noqa: S102 - fixed statements


def test_spmm_and_vmap_are_ember_names():
    assert ember.vmap is ember.func.vmap
    assert callable(ember.spmm)


def test_snapshot_is_current():
    torch = pytest.importorskip("torch")
    from helpers_tools import load_tool
    if torch.__version__.split("+")[0] != PATHS["torch"]:
        pytest.skip("the snapshot is of another torch")
    fresh = json.loads(json.dumps(load_tool("torch_paths").record()))
    assert fresh == PATHS
