"""Record what torch's device modules do on a build without the device (issue #30, item 6).

    python tools/torch_device_modules.py      # needs a CPU-only torch (2.13)

Every public function of ``torch.cuda``, ``torch.xpu``, ``torch.mps`` and ``torch.mtia``
(their ``__all__``) is called — with no arguments, or with the plain values in ``ARGUMENTS``
for the parameters that have no default — and its outcome written to
``tests/data/torch_device_modules.json``: ``{"returns": value}`` (containers by type and
emptiness, context managers and tensors by kind) or ``{"raises": exception type, "message":
...}``; a function needing an argument not in ``ARGUMENTS`` (a callable, a pool, an allocator)
is listed under ``"skipped"``. ``tests/test_device_modules.py`` calls ember's modules the same
way, without torch.
"""
from __future__ import annotations

import collections
import inspect
import json
import os
import sys
import warnings

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "data", "torch_device_modules.json")
MODULES = ("cuda", "xpu", "mps", "mtia")

# plain values for required parameters, by name ("$rng_state": an empty uint8 tensor)
ARGUMENTS = {"seed": 0, "device": 0, "fraction": 0.5, "new_state": "$rng_state",
             "new_states": [], "debug_mode": 0, "stream": None, "size": 8, "mem_ptr": 0,
             "peer_device": 1, "peer": 1}


def describe(value):
    """A JSON-able outcome that another library's value can be compared with."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return {"returns": value}
    if hasattr(value, "__enter__") and hasattr(value, "__exit__"):
        return {"returns": "$context_manager"}
    if isinstance(value, (list, tuple, dict, collections.OrderedDict)):
        return {"returns": f"${type(value).__name__}", "empty": len(value) == 0}
    if callable(value):
        return {"returns": "$callable"}
    return {"returns": f"${type(value).__name__}"}


def arguments(fn, torch):
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return [], None
    args = []
    for p in sig.parameters.values():
        if p.default is not p.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        if p.name not in ARGUMENTS:
            return None, p.name
        value = ARGUMENTS[p.name]
        args.append(value)
    return args, None


def materialize(args, torch):
    return [torch.empty(0, dtype=torch.uint8) if a == "$rng_state" else a for a in args]


def record():
    import torch
    if torch.cuda.is_available() or torch.backends.mps.is_available():
        raise SystemExit("record the reference with a torch build (or machine) without devices")
    out = {"torch": torch.__version__.split("+")[0], "arguments": ARGUMENTS, "modules": {}}
    for name in MODULES:
        mod = getattr(torch, name)
        table, skipped = {}, {}
        for attr in sorted(getattr(mod, "__all__", dir(mod))):
            fn = getattr(mod, attr, None)
            if fn is None or inspect.isclass(fn) or inspect.ismodule(fn) or not callable(fn):
                continue
            args, missing = arguments(fn, torch)
            if args is None:
                skipped[attr] = f"needs '{missing}'"
                continue
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    outcome = describe(fn(*materialize(args, torch)))
                except BaseException as e:  # noqa: BLE001 - recording what torch raises
                    outcome = {"raises": type(e).__name__, "message": str(e)[:160]}
            outcome["args"] = args
            table[attr] = outcome
        out["modules"][name] = {"functions": table, "skipped": skipped}
    return out


def main():
    data = record()
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w") as f:
        json.dump(data, f, indent=1, sort_keys=True)
        f.write("\n")
    print(f"wrote {OUT}: " + ", ".join(f"{m}: {len(v['functions'])} functions"
                                        for m, v in data["modules"].items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
