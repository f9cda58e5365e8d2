"""Packages outside ember's scope: libraries built on PyTorch that ``ember run`` can't serve.

``ember run`` stands in for ``torch`` itself. A package that is built on torch (torchvision's
datasets and models, torchaudio, transformers, lightning, …) reaches into torch's C++ internals
and private modules; loaded against ember it would fail somewhere inside its own code. So the
import hook refuses it at the import, with a message naming the package and what to do.

A package is outside when the installed distribution that provides it requires torch
(``Requires-Dist: torch`` without an extra: torchvision), when it is one of torch's own extra
top-level modules (``functorch``, ``torchgen``), or when it is a well-known library built on torch
(``KNOWN``: ``transformers`` lists torch only as an extra but imports it whenever it finds it),
installed or not (a user would otherwise install it, and PyTorch with it, only to hit the same
wall). A package with an optional torch extra (``safetensors``, which ember itself uses) is not.
"""
from __future__ import annotations

import functools
import importlib.metadata
import re
import sys

# well-known libraries built on torch, with what ember offers instead (None: nothing)
KNOWN = {
    "torchvision": "ember has no image datasets, transforms or pretrained models: load images "
                   "with numpy/PIL (or scikit-learn's bundled datasets) and wrap them in an "
                   "ember.utils.data.Dataset",
    "torchaudio": "ember has no audio I/O or transforms: load audio with soundfile/scipy and "
                  "use ember.stft / ember.fft",
    "torchtext": "ember has no text datasets or vocabularies: tokenize in Python and use "
                 "ember.utils.data",
    "torch_geometric": "ember has sparse COO tensors (ember.sparse_coo_tensor) for writing "
                       "graph layers by hand",
    "torchmetrics": None, "lightning": None, "pytorch_lightning": None, "transformers": None,
    "timm": None, "accelerate": None, "diffusers": None, "peft": None, "functorch":
        "ember.func is torch.func (vmap, grad, jacrev, ...): import it from there",
    "torch_xla": None, "deepspeed": None, "fairscale": None, "torchrl": None,
}

# torch's own distribution ships these top-level modules besides `torch`
_TORCH_DISTRIBUTIONS = ("torch",)


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


@functools.lru_cache(maxsize=None)
def _providers() -> dict:
    """{top-level import name: [distribution names]} of everything installed (read once)."""
    return importlib.metadata.packages_distributions()


@functools.lru_cache(maxsize=None)
def _requires_torch(dist: str) -> bool:
    try:
        requirements = importlib.metadata.requires(dist) or ()
    except importlib.metadata.PackageNotFoundError:
        return False
    for line in requirements:
        requirement, _, marker = line.partition(";")
        match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
        # an optional extra (safetensors[torch]) is not "built on torch": only its torch
        # submodule is, and that one imports torch, which is ember here
        if match and _norm(match.group(1)) == "torch" and "extra" not in marker:
            return True
    return False


def torch_distribution(name: str):
    """The installed distribution providing top-level module ``name`` that is built on torch
    (or is torch's own), else None."""
    for dist in _providers().get(name, ()):
        if _norm(dist) in _TORCH_DISTRIBUTIONS or _requires_torch(dist):
            return dist
    return None


def refusal(name: str):
    """The message for importing top-level module ``name`` under ``ember run``, or None when
    the import may go ahead."""
    if name in sys.stdlib_module_names or name.startswith("ember") or name in ("torch",
                                                                                "torchdata"):
        return None
    dist = torch_distribution(name)
    if dist is None and name not in KNOWN:
        return None
    if dist is not None:
        try:
            version = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            version = "?"
        what = (f"'{name}' (installed: {dist} {version}, which is built on PyTorch)")
    else:
        what = f"'{name}' (not installed; it is a library built on PyTorch)"
    instead = KNOWN.get(name)
    lines = [f"ember run: the script imports {what}.",
             "ember run stands in for torch itself, not for libraries built on it: they reach "
             "into torch's internals and would fail inside their own code.",
             "What to do:"]
    if instead:
        lines.append(f"  * {instead};")
    lines += ["  * or run the script with PyTorch itself (python script.py);",
              f"  * or try it anyway: ember run --allow {name} script.py ..."]
    return "\n".join(lines)
