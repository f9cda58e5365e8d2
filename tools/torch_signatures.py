"""Write torch's public call signatures to ``core/ember/_api/torch_signatures.json`` (issue #30).

    python tools/torch_signatures.py            # needs torch (2.13) and PyYAML

ember's binding layer (``ember._api.binding``) reads the snapshot when a call fails to bind, to
accept torch's aliases and to word the error as torch does; ``tests/test_signatures.py`` checks
every ember function against it without torch.

Where each signature comes from:

* **builtins bound by torch's Python argument parser** (``torch.sum``, ``Tensor.add``,
  ``torch._C._nn.gelu`` behind ``F.gelu``, ``torch.linalg.*``, …): the signatures the parser is
  generated with — torchgen's ``gen_python_functions`` run on the ``native_functions.yaml`` and
  ``deprecated.yaml`` shipped in the wheel (``torchgen/packaged``), grouped into overloads as the
  generated bindings are. Deprecated overloads are accepted but hidden from error listings, as
  in torch. The parser also accepts numpy's names: ``axis`` for ``dim``, ``keepdims`` for
  ``keepdim``, ``x``/``a``/``x1`` for ``input``, ``x2`` for ``other``
  (``numpy_compatibility_arg_names`` in ``python_arg_parser.cpp``), recorded as ``aliases``.
  Hand-written parser bindings (``torch.tensor``, ``Tensor.to``, ``Tensor.size``, …) that torchgen
  does not produce are read back from the parser's own error listing when they have several
  overloads, else from ``torch.overrides.get_testing_overrides()``'s lambda.
* **Python functions and classes** (``torch.split``, ``Tensor.split``, ``F.relu``,
  ``nn.Linear``): ``inspect.signature``; they take no numpy aliases.
  ``source`` says which: ``torchgen`` and ``listing`` are exact; ``docstring`` and ``lambda`` do
  not say which parameters are keyword-only, so only their keyword names are checked.
* **other builtins** (pybind11 / METH_O functions such as ``torch.set_num_threads``): recorded
  as ``opaque`` with the first docstring line; only their existence is checked.

For every parser function with more than one visible overload the snapshot also keeps torch's
own listing text (provoked by a call matching no overload), so ember's message is torch's.
"""
from __future__ import annotations

import inspect
import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "core", "ember", "_api", "torch_signatures.json")
SHARED_OUT = os.path.join(ROOT, "core", "ember", "_api", "shared_names.py")

# numpy_compatibility_arg_names (torch/csrc/utils/python_arg_parser.cpp)
NUMPY_ALIASES = {"dim": ["axis"], "keepdim": ["keepdims"], "input": ["x", "a", "x1"],
                 "other": ["x2"]}

# namespace -> (how to reach it from torch, whether classes count, whether functions count)
NAMESPACES = {
    "torch": ("torch", False),
    "Tensor": ("torch.Tensor", False),
    "nn.functional": ("torch.nn.functional", False),
    "linalg": ("torch.linalg", False),
    "fft": ("torch.fft", False),
    "special": ("torch.special", False),
    "nn.init": ("torch.nn.init", False),
    "autograd": ("torch.autograd", False),
    "autograd.functional": ("torch.autograd.functional", False),
    "func": ("torch.func", False),
    "masked": ("torch.masked", False),
    "signal.windows": ("torch.signal.windows", False),
    "nn.utils": ("torch.nn.utils", False),
    "nn": ("torch.nn", True),
    "optim": ("torch.optim", True),
    "optim.lr_scheduler": ("torch.optim.lr_scheduler", True),
    "distributions": ("torch.distributions", True),
    "utils.data": ("torch.utils.data", True),
}


def resolve(path):
    import importlib
    parts = path.split(".")
    obj = importlib.import_module(parts[0])
    for p in parts[1:]:
        obj = getattr(obj, p)
    return obj


# ----------------------------------------------------------------------------- torchgen

def torchgen_groups():
    """{(binding module, name): [signature dict, ...]} for every generated parser binding."""
    import torchgen
    from torchgen.api.python import argument_type_str
    from torchgen.gen import parse_native_yaml
    from torchgen.packaged.autograd import gen_python_functions as gpf

    d = os.path.join(os.path.dirname(torchgen.__file__), "packaged")
    natives = parse_native_yaml(f"{d}/ATen/native/native_functions.yaml",
                                f"{d}/ATen/native/tags.yaml").native_functions
    natives = [f for f in natives if gpf.should_generate_py_binding(f)]
    deprecated = f"{d}/autograd/deprecated.yaml"
    preds = {"_VariableFunctions": gpf.is_py_torch_function, "_nn": gpf.is_py_nn_function,
             "_linalg": gpf.is_py_linalg_function, "_fft": gpf.is_py_fft_function,
             "_special": gpf.is_py_special_function, "_sparse": gpf.is_py_sparse_function,
             "_nested": gpf.is_py_nested_function, "TensorBase": gpf.is_py_variable_method}
    out = {}
    for method in (False, True):
        pairs = gpf.load_signatures(natives, deprecated, method=method)
        for module, pred in preds.items():
            if (module == "TensorBase") != method:
                continue
            for name, overloads in gpf.group_filter_overloads(pairs, pred).items():
                sigs = []
                for group in gpf.group_overloads(overloads, symint=False):
                    s = group.signature
                    args = s.arguments()
                    params = []
                    for i, a in enumerate(args):
                        type_str = argument_type_str(a.type, symint=False).replace(
                            "const ", "").replace(" &", "")
                        pname = a.name
                        if pname == "self" and type_str in ("Tensor", "Number") and not method:
                            pname = "input"
                        default = a.default
                        if default is not None:
                            default = {"nullptr": "None", "::std::nullopt": "None",
                                       "std::nullopt": "None", "{}": "None"}.get(default,
                                                                                  default)
                        params.append({"name": pname, "type": type_str, "default": default,
                                       "kwonly": i >= len(s.input_args)})
                    sigs.append({"params": params, "hidden": bool(s.deprecated)})
                out[(module, str(name))] = sigs
    return out


def binding_module(ns, name, obj):
    """Which parser binding module a builtin comes from, or None."""
    import torch
    if ns == "Tensor":
        return "TensorBase" if getattr(obj, "__objclass__", None) is torch._C.TensorBase \
            else None
    for module in ("_VariableFunctions", "_nn", "_linalg", "_fft", "_special", "_sparse",
                   "_nested"):
        m = getattr(torch._C, module)
        for candidate in {name, getattr(obj, "__name__", name)}:
            if getattr(m, candidate, None) is obj:
                return module, candidate
    return None


# ----------------------------------------------------------------------------- provoking torch

_PROBE = object()


def provoke(ns, obj):
    """The parser's message for a call matching no overload (30 arguments of no type)."""
    import torch
    args = [_PROBE] * 30
    try:
        if ns == "Tensor":
            obj(torch.zeros(()), *args)
        else:
            obj(*args)
    except TypeError as e:
        return str(e)
    except Exception:  # noqa: BLE001 - a probe that does not reach the parser
        return ""
    return ""


def listing_of(msg):
    """torch's own listing of the visible overloads in a provoked message, or None."""
    if "expected one of:\n" in msg:
        return msg.split("expected one of:\n", 1)[1]
    if ", but expected (" in msg:  # one visible overload (others deprecated, hidden)
        return " * " + msg.split(", but expected ", 1)[1] + "\n"
    return None


def consistent(sigs, msg, listing):
    """Whether torchgen's overloads are the ones the bound function parses (a hand-written
    binding of the same name takes precedence over the generated one)."""
    visible = [s for s in sigs if not s["hidden"]]
    if listing is not None:
        names = sorted(tuple(p["name"] for p in s["params"]) for s in parse_listing(listing))
        return names == sorted(tuple(p["name"] for p in s["params"]) for s in visible)
    m = re.search(r"takes (?:from (\d+) to )?(\d+) positional argument", msg)
    if m:
        return len(visible) == 1 and int(m.group(2)) == sum(
            not p["kwonly"] for p in visible[0]["params"])
    if "takes no arguments" in msg:
        return len(visible) == 1 and not visible[0]["params"]
    return True


def split_top(text):
    depth, cur, out = 0, "", []
    for ch in text:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


def parse_listing(listing):
    """' * (Tensor input, *, torch.dtype dtype = None)\\n' lines -> signature dicts."""
    sigs = []
    for line in listing.splitlines():
        line = line.strip()
        if not line.startswith("* ("):
            continue
        body = line[3:-1]
        params, kwonly = [], False
        for part in split_top(body):
            if part == "*":
                kwonly = True
                continue
            default = None
            if " = " in part:
                part, default = part.split(" = ", 1)
            type_str, _, pname = part.rpartition(" ")
            params.append({"name": pname, "type": type_str, "default": default,
                           "kwonly": kwonly})
        sigs.append({"params": params, "hidden": False})
    return sigs


# ----------------------------------------------------------------------------- Python signatures

def default_text(v):
    if v is inspect.Parameter.empty:
        return None
    if v is None or isinstance(v, (bool, int, float, str)):
        return repr(v)
    if isinstance(v, (tuple, list)) and all(isinstance(x, (bool, int, float, str, type(None)))
                                            for x in v):
        return repr(v)
    mod = type(v).__module__
    return f"<{mod}.{type(v).__qualname__}>" if mod != "builtins" else f"<{type(v).__name__}>"


def python_signature(obj, *, method=False):
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return None
    params = []
    for i, p in enumerate(sig.parameters.values()):
        if method and i == 0 and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            continue  # self
        kind = {p.POSITIONAL_ONLY: "positional_only", p.POSITIONAL_OR_KEYWORD: None,
                p.KEYWORD_ONLY: None, p.VAR_POSITIONAL: "varargs",
                p.VAR_KEYWORD: "varkw"}[p.kind]
        entry = {"name": p.name, "type": "", "default": default_text(p.default),
                 "kwonly": p.kind == p.KEYWORD_ONLY}
        if kind:
            entry["kind"] = kind
        params.append(entry)
    return [{"params": params, "hidden": False}]


def docstring_signature(name, obj):
    """A hand-written binding's documented signature: ``size(dim=None) -> torch.Size or int``."""
    doc = (getattr(obj, "__doc__", None) or "").strip().splitlines()
    if not doc or not doc[0].startswith(name + "("):
        return None
    head = doc[0][len(name) + 1:]
    depth, end = 1, None
    for i, ch in enumerate(head):
        depth += ch in "([{"
        depth -= ch in ")]}"
        if depth == 0:
            end = i
            break
    if end is None:
        return None
    params, kwonly = [], False
    for part in split_top(head[:end]):
        if part == "*":
            kwonly = True
            continue
        if part.startswith("*"):
            return None
        default = None
        if "=" in part:
            part, default = (x.strip() for x in part.split("=", 1))
        pname = part.split(":", 1)[0].strip()
        if not pname.isidentifier():
            return None
        params.append({"name": pname, "type": "", "default": default, "kwonly": kwonly})
    return [{"params": params, "hidden": False}]


def lambda_signature(ns, obj, overrides):
    lam = overrides.get(obj)
    if lam is None:
        return None
    return python_signature(lam, method=(ns == "Tensor"))


# ----------------------------------------------------------------------------- walking torch

def from_torch(obj, exported, name):
    """Whether a module attribute is torch's own (not ``typing.Optional`` or ``functools.partial``
    imported into it); a module's ``__all__`` decides for classes when it has one."""
    module = getattr(obj, "__module__", None) or ""
    if inspect.isclass(obj) and exported is not None:
        return name in exported
    return module == "" or module.split(".")[0] == "torch"


def public_callables(ns, path, classes):
    mod = resolve(path)
    out = {}
    for name in sorted(dir(mod)):
        if name.startswith("_"):
            continue
        try:
            obj = inspect.getattr_static(mod, name) if ns == "Tensor" else getattr(mod, name)
        except AttributeError:
            continue
        if ns == "Tensor":
            if isinstance(obj, (property, staticmethod, classmethod)) or \
                    type(obj).__name__ in ("getset_descriptor", "member_descriptor"):
                continue
            obj = getattr(mod, name)
        if inspect.ismodule(obj) or not from_torch(obj, getattr(mod, "__all__", None), name):
            continue
        if inspect.isclass(obj):
            if classes and not name.startswith("_"):
                out[name] = obj
            continue
        if callable(obj) and not classes:
            out[name] = obj
        elif callable(obj) and classes and inspect.isfunction(obj):
            out[name] = obj
    return out


def signature_entry(ns, name, obj, groups, overrides):
    if inspect.isclass(obj):
        sigs = python_signature(obj)
        return {"kind": "python", "signatures": sigs} if sigs else {"kind": "opaque"}
    if inspect.isfunction(obj) or inspect.ismethod(obj):
        return {"kind": "python", "signatures": python_signature(obj, method=(ns == "Tensor"))}
    where = binding_module(ns, name, obj)
    if where is not None:
        key = ("TensorBase", name) if where == "TensorBase" else where
        msg = provoke(ns, obj)
        listing = listing_of(msg)
        sigs, source = groups.get(key), "torchgen"
        if sigs is not None and not consistent(sigs, msg, listing):
            sigs = None
        if sigs is None and listing is not None:
            sigs, source = parse_listing(listing), "listing"
        if sigs is None:
            sigs, source = docstring_signature(name, obj), "docstring"
        if sigs is None:
            sigs, source = lambda_signature(ns, obj, overrides), "lambda"
        if sigs is not None:
            entry = {"kind": "parser", "signatures": sigs, "source": source}
            if listing is not None:
                entry["listing"] = listing
            if "takes no arguments" in msg:  # METH_NOARGS: no parser, CPython's own check
                entry["noarg"] = True
            return entry
    doc = (getattr(obj, "__doc__", None) or "").strip().splitlines()
    entry = {"kind": "opaque"}
    if doc and re.match(rf"^{re.escape(name)}\(", doc[0]):
        entry["doc"] = doc[0]
    return entry


def snapshot():
    import torch
    groups = torchgen_groups()
    overrides = torch.overrides.get_testing_overrides()
    names, first_seen, shared = {}, {}, {}
    for ns, (path, classes) in NAMESPACES.items():
        table = {}
        for name, obj in public_callables(ns, path, classes).items():
            table[name] = signature_entry(ns, name, obj, groups, overrides)
            if ns != "Tensor" and not inspect.isclass(obj):
                seen = first_seen.setdefault(id(obj), (ns, name))
                if seen != (ns, name) and seen[1] == name:
                    shared[f"{ns}.{name}"] = seen[0]
        names[ns] = table
    return {"torch": torch.__version__.split("+")[0], "numpy_aliases": NUMPY_ALIASES,
            "namespaces": names, "shared": shared}


SHARED_HEADER = '''"""The public functions torch binds as one object under two names (``torch.nn.functional.conv2d``
is ``torch.conv2d``): ``"<namespace>.<name>"`` -> the namespace whose object it is. ember's
binding layer (``binding.install``) gives them one wrapper, so they are one object in ember too.

Written by ``tools/torch_signatures.py`` from torch {version}; do not edit.
"""
SHARED = {{
'''


def write_shared(data):
    with open(SHARED_OUT, "w") as f:
        f.write(SHARED_HEADER.format(version=data["torch"]))
        for key in sorted(data["shared"]):
            f.write(f"    {key!r}: {data['shared'][key]!r},\n")
        f.write("}\n")


def main():
    data = snapshot()
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w") as f:
        json.dump(data, f, indent=None, sort_keys=True, separators=(",", ":"))
        f.write("\n")
    write_shared(data)
    counts = {ns: len(t) for ns, t in data["namespaces"].items()}
    print(f"wrote {OUT}: {counts}; {SHARED_OUT}: {len(data['shared'])} shared names")
    return 0


if __name__ == "__main__":
    sys.exit(main())
