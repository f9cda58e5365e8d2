"""The messages of torch's Python argument parser, for a call that matches none of a function's
signatures (``python_arg_parser.cpp``'s ``FunctionSignature::parse`` errors and
``invalid_arguments.cpp``'s ``format_invalid_args``), worded from the signature snapshot.

Only the argument *binding* is judged here — counts and keyword names — because that is what a
Python ``TypeError`` at call time tells the binding layer; argument types are ember's functions'
own business. Type names are ember's (``ember.dtype``), where torch's text says ``torch.``.
"""
from __future__ import annotations

from .._tensor import Tensor


def message(name: str, entry: dict, args: tuple, kwargs: dict, *, method: bool) -> str:
    sigs = entry.get("signatures") or []
    visible = [s for s in sigs if not s.get("hidden")]
    if entry.get("noarg"):
        n = len(args) + len(kwargs)
        owner = "Tensor." if method else ""
        if kwargs and not args:
            return f"{owner}{name}() takes no keyword arguments"
        return f"{owner}{name}() takes no arguments ({n} given)"
    if len(sigs) == 1:
        specific = _signature_error(name, sigs[0]["params"], args, kwargs)
        if specific is not None:
            return specific
    n = len(args) + len(kwargs)
    plausible = [s for s in visible if _min_args(s) <= n <= len(s["params"])]
    if len(plausible) == 1:
        specific = _signature_error(name, plausible[0]["params"], args, kwargs)
        if specific is not None:
            return specific
    return _format_invalid_args(name, options(entry), args, kwargs)


def _min_args(sig) -> int:
    return sum(1 for p in sig["params"] if p["default"] is None)


def _signature_error(name, params, args, kwargs):
    """FunctionSignature::parse's error for one signature, or None if it binds."""
    positional = [p for p in params if not p["kwonly"]]
    max_pos, min_args = len(positional), sum(1 for p in params if p["default"] is None)
    if len(args) > max_pos and not _varargs_intlist(params):
        if min_args != max_pos:
            return (f"{name}() takes from {min_args} to {max_pos} positional arguments but "
                    f"{len(args)} were given")
        return (f"{name}() takes {max_pos} positional argument{'' if max_pos == 1 else 's'} "
                f"but {len(args)} {'was' if len(args) == 1 else 'were'} given")
    remaining = dict(kwargs)
    for i, p in enumerate(params):
        if i < len(args) and not p["kwonly"]:
            if p["name"] in remaining:
                return f"{name}() got multiple values for argument '{p['name']}'"
            if not accepts(p["type"], args[i]):
                return (f"{name}(): argument '{p['name']}' (position {i + 1}) must be "
                        f"{_render_type(p['type'])}, not {_typename(args[i])}")
            continue
        if p["name"] in remaining:
            value = remaining.pop(p["name"])
            if not accepts(p["type"], value):
                return (f"{name}(): argument '{p['name']}' must be {_render_type(p['type'])}, "
                        f"not {_typename(value)}")
            continue
        if p["default"] is None:
            missing = [f'"{q["name"]}"' for q in params[i:] if q["default"] is None]
            return (f"{name}() missing {len(missing)} required positional argument"
                    f"{'s' if len(missing) == 1 else ''}: {', '.join(missing)}")
    if remaining:
        return f"{name}() got an unexpected keyword argument '{next(iter(remaining))}'"
    return None


def accepts(type_str: str, obj) -> bool:
    """Whether torch's parser takes ``obj`` for a parameter of this schema type — the plain
    cases only; anything unsure is taken (the message then comes from a later check)."""
    if type_str.endswith("?") and obj is None:
        return True
    base = type_str.rstrip("?").split("[", 1)[0]
    number = (int, float, complex)
    if base == "TensorList" or base.startswith("c10::List"):
        return isinstance(obj, (tuple, list))
    if base == "Tensor":
        return isinstance(obj, (Tensor, *number))
    if base == "Scalar":
        return isinstance(obj, number) or (isinstance(obj, Tensor) and obj.ndim == 0)
    if base in ("int64_t", "SymInt"):
        return _integral(obj)
    if base == "double":
        return _integral(obj) or isinstance(obj, float) or (
            isinstance(obj, Tensor) and obj.ndim == 0)
    if base in ("IntArrayRef", "SymIntArrayRef"):
        return isinstance(obj, (tuple, list)) or _integral(obj)
    if base == "ScalarType":
        return _typename(obj) == "ember.dtype" or obj in (int, float, bool, complex)
    if base in ("c10::string_view", "std::string_view"):
        return isinstance(obj, str)
    return True


def _integral(obj) -> bool:
    """An int where torch's parser wants one: Python and numpy integers, 0-d integer tensors."""
    if isinstance(obj, Tensor):
        return obj.ndim == 0 and not obj.dtype.is_floating_point and not obj.dtype.is_complex
    return isinstance(obj, int) or (hasattr(obj, "__index__") and not isinstance(obj, float))


def _varargs_intlist(params) -> bool:
    positional = [p for p in params if not p["kwonly"]]
    return len(positional) == 1 and positional[0]["type"].startswith(("IntArrayRef",
                                                                     "SymIntArrayRef"))


# -- invalid_arguments.cpp ------------------------------------------------------------------------

_TYPE_NAMES = {"ScalarType": "ember.dtype", "Layout": "ember.layout", "Device": "ember.device",
               "MemoryFormat": "ember.memory_format", "Scalar": "Number", "Generator":
               "ember.Generator", "Dimname": "name", "DimnameList": "tuple of names",
               "TensorList": "tuple of Tensors", "IntArrayRef": "tuple of ints",
               "SymIntArrayRef": "tuple of ints", "SymInt": "int", "int64_t": "int",
               "double": "float", "c10::string_view": "str", "std::string_view": "str",
               "ArrayRef<double>": "tuple of floats", "ScalarList": "tuple of Scalars",
               "Storage": "ember.Storage", "Stream": "ember.Stream",
               "c10::List<::std::optional<Tensor>>": "tuple of Tensors"}


def _render_type(t: str) -> str:
    t = t.rstrip("?")
    base = t.split("[", 1)[0]
    return _TYPE_NAMES.get(base, base)


def render(sig) -> str:
    parts, star = [], False
    for p in sig["params"]:
        if p["kwonly"] and not star:
            parts.append("*")
            star = True
        text = f"{_render_type(p['type'])} {p['name']}"
        if p["default"] is not None:
            text += f" = {p['default']}"
        parts.append(text)
    return "(" + ", ".join(parts) + ")"


def options(entry) -> list:
    """torch's listing of the visible overloads, with ember's type names."""
    visible = [s for s in entry.get("signatures") or [] if not s.get("hidden")]
    listing = entry.get("listing")
    if listing:
        lines = [ln.strip()[2:] for ln in listing.splitlines() if ln.strip().startswith("* (")]
    else:
        lines = [render(s) for s in visible]
    return [_ember_names(line) for line in lines]


def _ember_names(text: str) -> str:
    return text.replace("torch.", "ember.")


_EMBER_TYPE_NAMES = {"dtype": "ember.dtype", "device": "ember.device", "layout": "ember.layout",
                     "memory_format": "ember.memory_format", "Size": "ember.Size",
                     "Generator": "ember.Generator"}


def _typename(obj) -> str:
    name = type(obj).__name__
    if type(obj).__module__.startswith("ember"):
        return _EMBER_TYPE_NAMES.get(name, name)
    return name


def _arg_desc(args, kwargs) -> str:
    parts = [_typename(a) + ", " for a in args]
    parts += [f"{k}={_typename(v)}, " for k, v in kwargs.items()]
    text = "".join(parts)
    if args:
        text = text[:-2]
    return f"({text})"


class _Option:
    """``_parseOption``: an option string split the way torch's formatter splits it (``*`` and
    each default's text count as arguments; a defaulted argument's 'name' is its default)."""

    def __init__(self, text: str):
        body = text[1:-1]
        self.arguments = []
        if text != "no arguments":
            for arg in body.split(", "):
                type_name, _, arg_name = arg.rpartition(" ")
                self.arguments.append((arg_name, type_name))
        self.is_variadic = "..." in body


def _argcount_match(option, args, kwargs) -> bool:
    expected, got = len(option.arguments), len(args) + len(kwargs)
    return got == expected or (option.is_variadic and got > expected)


def _unmatched_kwargs(option, kwargs) -> list:
    start = max(len(option.arguments) - len(kwargs), 0)
    names = {n for n, _ in option.arguments[start:]}
    return [k for k in kwargs if k not in names]


def _matches(type_name: str, obj) -> bool:
    tp = _typename(obj)
    if type_name == "float":
        return tp in ("float", "int")
    if type_name == "int":
        return tp == "int"
    return tp == type_name


def _formatted_arg_desc(option, args, kwargs) -> str:
    items = list(args) + list(kwargs.items())
    parts = []
    for i, item in enumerate(items):
        is_kwarg = i >= len(args)
        obj = item[1] if is_kwarg else item
        if i < len(option.arguments):
            ok = _matches(option.arguments[i][1], obj)
        else:
            ok = option.is_variadic and _matches(option.arguments[-1][1], obj)
        text = f"{item[0]}=" if is_kwarg else ""
        if isinstance(obj, (tuple, list)):
            inner = ", ".join(_typename(x) for x in obj)
            if isinstance(obj, tuple):
                text += f"tuple of ({inner}{',' if len(obj) == 1 else ''})"
            else:
                text += f"list of [{inner}]"
        else:
            text += _typename(obj)
        parts.append(text if ok else f"!{text}!")
    return "(" + ", ".join(parts) + ")"


def _format_invalid_args(name, options, args, kwargs) -> str:
    msg = f"{name}() received an invalid combination of arguments - "
    if len(options) == 1:
        option = _Option(options[0])
        unmatched = _unmatched_kwargs(option, kwargs) if kwargs else []
        if unmatched:
            return msg + "got unrecognized keyword arguments: " + ", ".join(unmatched)
        desc = (_formatted_arg_desc(option, args, kwargs)
                if _argcount_match(option, args, kwargs) else _arg_desc(args, kwargs))
        return msg + f"got {desc}, but expected {options[0]}"
    msg += f"got {_arg_desc(args, kwargs)}, but expected one of:\n"
    for text in options:
        option = _Option(text)
        msg += f" * {text}\n"
        if _argcount_match(option, args, kwargs):
            unmatched = _unmatched_kwargs(option, kwargs) if kwargs else []
            if unmatched:
                msg += ("      didn't match because some of the keywords were incorrect: "
                        + ", ".join(unmatched) + "\n")
            else:
                msg += ("      didn't match because some of the arguments have invalid types: "
                        + _formatted_arg_desc(option, args, kwargs) + "\n")
    return msg
