"""Record torch 2.13's public import paths (issue #30, item 3).

    python tools/torch_paths.py        # needs torch

Walks the public modules under ``ROOTS`` (``pkgutil``; no path component starting with ``_``,
minus ``EXCLUDED`` subtrees, each with its reason) and writes ``tests/data/torch_paths.json``:

* ``modules``: every module path (``torch.nn.modules.activation``);
* ``objects``: ``{path: canonical path}`` for each public class and function a module exports
  (its ``__all__`` when it has one, else the names it defines) — the canonical path is where
  the object is defined (``__module__`` + ``__qualname__`` when that names the same object,
  else the first path the walk reached it by), so ``torch.nn.MultiheadAttention`` maps to
  ``torch.nn.modules.activation.MultiheadAttention``;
* ``excluded``: the subtrees left out and why.

``tests/test_paths.py`` checks ember against it without torch: the same paths exist with
``ember`` for ``torch``, and each object is the same object as at its canonical path.
"""
from __future__ import annotations

import importlib
import inspect
import json
import os
import pkgutil
import sys
import warnings

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "data", "torch_paths.json")

ROOTS = ["torch", "torch.nn", "torch.autograd", "torch.optim", "torch.utils.data",
         "torch.utils.checkpoint", "torch.utils.hooks", "torch.utils.dlpack",
         "torch.utils.deterministic", "torch.distributions", "torch.linalg", "torch.fft",
         "torch.special", "torch.func", "torch.masked", "torch.signal", "torch.random",
         "torch.amp", "torch.futures", "torch.sparse", "torch.functional", "torch.return_types",
         "torch.testing", "torch.backends", "torch.profiler", "torch.cuda", "torch.xpu",
         "torch.mps", "torch.mtia", "torch.accelerator", "torch.library", "torch.serialization",
         "torch.jit", "torch.export", "torch.onnx", "torch.distributed", "torch.multiprocessing",
         "torch.overrides", "torch.types", "torch.hub", "torch.compiler", "torch.storage"]

# module subtrees left out: (prefix, reason)
EXCLUDED = [
    ("torch.nn.intrinsic", "quantization: fused quantized modules (ember has no quantized dtypes)"),
    ("torch.nn.qat", "quantization-aware training modules"),
    ("torch.nn.quantizable", "quantization: quantizable modules"),
    ("torch.nn.quantized", "quantization: quantized modules"),
    ("torch.nn.backends", "legacy THNN backend shim"),
    ("torch.nn.cpp", "wrappers of C++ frontend modules"),
    ("torch.nn.attention.experimental", "experimental paged/flex attention internals"),
    ("torch.nn.attention.flex_attention", "FlexAttention (torch.compile-generated kernels)"),
    ("torch.nn.attention.varlen", "variable-length flash-attention kernels for CUDA"),
    ("torch.nn.utils.fusion", "conv/linear + batch-norm fusion helpers (issue #30 follow-up)"),
    ("torch.nn.utils.prune", "pruning (issue #30 follow-up)"),
    ("torch.utils.data.datapipes.dataframe", "DataFrame datapipes (pandas-backed prototype)"),
    ("torch.utils.data.datapipes.gen_pyi", "torch's stub generator script"),
    ("torch.backends.cudnn.rnn", "cuDNN RNN internals"),
    ("torch.backends.xeon", "Intel Xeon launcher script"),
    ("torch.backends.quantized", "quantized engine selection"),
    ("torch.backends.kleidiai", "Arm KleidiAI kernels"),
    ("torch.backends.cusparselt", "NVIDIA cuSPARSELt"),
    ("torch.backends.nnpack", "NNPACK kernels"),
    ("torch.backends.xnnpack", "XNNPACK kernels"),
    ("torch.backends.miopen", "AMD MIOpen"),
    ("torch.backends.python_native", "torch's Python-native op overrides (a 2.11 prototype)"),
    ("torch.cuda.", "CUDA runtime internals below torch.cuda (graphs, nccl, jiterator, tunable, "
     "green contexts, gds, nvtx…); torch.cuda itself and torch.cuda.amp are checked"),
    ("torch.xpu.", "XPU runtime internals below torch.xpu"),
    ("torch.mps.", "MPS runtime internals below torch.mps"),
    ("torch.mtia.", "MTIA runtime internals below torch.mtia"),
    ("torch.jit.", "TorchScript frontend, serialization and fusion modules"),
    ("torch.export.", "torch.export's graph signature, serialization and unflattening modules"),
    ("torch.onnx.", "torch.onnx's TorchScript and dynamo exporter internals"),
    ("torch.distributed.", "torch.distributed's subsystems (FSDP, tensor parallel, RPC, "
     "checkpointing, elastic, pipelining…); ember.distributed keeps the process-group API"),
    ("torch.multiprocessing.", "multiprocessing reductions and spawn internals"),
    ("torch.profiler.", "Kineto profiler internals below torch.profiler"),
    ("torch.testing.", "torch's own test-suite helpers"),
    ("torch.utils.data.datapipes.utils.snapshot", "torch's datapipe snapshot internals"),
    ("torch.masked.maskedtensor", "the prototype MaskedTensor subclass"),
    ("torch.sparse.semi_structured", "2:4 semi-structured sparsity for NVIDIA tensor cores"),
    ("torch.nn.common_types", "type aliases for annotations (no runtime objects)"),
    ("torch.types", "type aliases for annotations"),
    ("torch.storage", "torch's typed/untyped storage classes (ember's Storage is a backend "
     "handle)"),
    ("torch.overrides", "the __torch_function__ protocol (ember has none)"),
    ("torch.hub", "downloads models and code from the internet"),
    ("torch.multiprocessing", "torch's multiprocessing with shared-memory tensor reductions"),
    ("torch.autograd.profiler_legacy", "the legacy autograd profiler"),
    ("torch.autograd.profiler_util", "the autograd profiler's event tables (ember.profiler has "
     "its own)"),
    ("torch.compiler.config", "torch.compile's configuration flags (dynamo/inductor)"),
    ("torch.accelerator.graphs", "accelerator graph capture"),
    ("torch.backends.opt_einsum", "contraction-order search through the opt_einsum package"),
    ("torch.utils.data.datapipes.utils.decoder", "torch's image/audio/video decoders for "
     "datapipes (PIL, torchaudio, torchvision)"),
    ("torch.utils.data.datapipes.iter.routeddecoder", "see datapipes.utils.decoder"),
    ("torch.utils.data.backward_compatibility", "a deprecated worker_init_fn stub"),
]
KEEP = {"torch.cuda.amp"}  # below an excluded prefix, yet checked


def excluded(name):
    if name in KEEP:
        return None
    for prefix, reason in EXCLUDED:
        if name == prefix.rstrip(".") and prefix.endswith("."):
            continue
        if name == prefix or name.startswith(prefix if prefix.endswith(".") else prefix + "."):
            return reason
    return None


def walk():
    mods = []
    seen = set()
    for root in ROOTS:
        if excluded(root) or root in seen:
            continue
        try:
            mod = importlib.import_module(root)
        except Exception:  # noqa: BLE001 - a module torch cannot import here is not reachable
            continue
        seen.add(root)
        mods.append(root)
        if not hasattr(mod, "__path__") or root == "torch":
            continue
        for info in pkgutil.walk_packages(mod.__path__, root + ".", onerror=lambda n: None):
            name = info.name
            if name in seen or any(p.startswith("_") for p in name.split(".")) or excluded(name):
                continue
            try:
                importlib.import_module(name)
            except Exception:  # noqa: BLE001
                continue
            seen.add(name)
            mods.append(name)
    return mods


def _defined_in_torch(obj):
    module = getattr(obj, "__module__", None) or ""
    return module.split(".")[0] == "torch"


def exports(modname):
    mod = sys.modules[modname]
    names = getattr(mod, "__all__", None)
    out = {}
    for name in (names if names is not None else dir(mod)):
        if not isinstance(name, str) or name.startswith("_"):
            continue
        obj = getattr(mod, name, None)
        if obj is None or inspect.ismodule(obj):
            continue
        if not (inspect.isclass(obj) or inspect.isfunction(obj) or inspect.isbuiltin(obj)):
            continue
        if not _defined_in_torch(obj):
            continue
        if names is None and getattr(obj, "__module__", None) != modname:
            continue  # without __all__, only what the module defines
        out[name] = obj
    return out


def resolve(path):
    parts = path.split(".")
    for i in range(len(parts), 0, -1):
        mod = sys.modules.get(".".join(parts[:i]))
        if mod is not None:
            obj = mod
            for p in parts[i:]:
                obj = getattr(obj, p, None)
                if obj is None:
                    return None
            return obj
    return None


def record():
    import torch
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mods = walk()
        objects, first_path = {}, {}
        for modname in mods:
            for name, obj in exports(modname).items():
                path = f"{modname}.{name}"
                first_path.setdefault(id(obj), path)
                objects[path] = obj
    canonical = {}
    for path, obj in objects.items():
        home = f"{getattr(obj, '__module__', '')}.{getattr(obj, '__qualname__', '')}"
        if home in objects and objects[home] is obj:
            canonical[path] = home
        else:
            canonical[path] = first_path[id(obj)]
    return {"torch": torch.__version__.split("+")[0], "modules": sorted(mods),
            "objects": dict(sorted(canonical.items())),
            "excluded": {p: r for p, r in EXCLUDED}}


def main():
    data = record()
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w") as f:
        json.dump(data, f, indent=0, sort_keys=True)
        f.write("\n")
    print(f"wrote {OUT}: {len(data['modules'])} modules, {len(data['objects'])} objects")
    return 0


if __name__ == "__main__":
    sys.exit(main())
