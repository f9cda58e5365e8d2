"""An op's schema, parsed once: what the dispatcher, autograd, library and meta all read.

The text reads like PyTorch's native_functions.yaml::

    add(Tensor self, Tensor other, Scalar alpha, dtype compute) -> Tensor
    add_(Tensor(a!) self, Tensor other, Scalar alpha, dtype compute) -> Tensor(a!)
    max_dim(Tensor self, int dim, bool keepdim) -> (Tensor values, Tensor indices)

Argument types: ``Tensor``, ``Tensor?``, ``Tensor(a!)`` (written in place), ``Tensor[]``,
``Tensor?[]``, ``Tensor|float`` (a tensor or a Python number), and plain types (``int``,
``int[]``, ``float?``, ``bool``, ``str``, ``Scalar``, ``dtype``, ``Device``, ``Generator``).
A default is written ``name=value``. Ops made from a Python signature (``ember.library.custom_op``)
have untyped schemas, ``mylib::f(x, y)``: every argument may hold tensors.
"""
from __future__ import annotations

from typing import NamedTuple
import ast


class Argument(NamedTuple):
    name: str
    type: str            # as written, e.g. "Tensor(a!)", "int[]", "" when untyped
    is_tensor: bool      # a Tensor slot (Tensor, Tensor?, Tensor(a!), Tensor|float)
    is_tensor_list: bool  # Tensor[] or Tensor?[]
    optional: bool       # "?" in the type
    mutated: bool        # "(a!)": the op writes this argument
    default: str | None  # the default's text, None when there is none
    kwarg_only: bool     # after a bare "*"


class Return(NamedTuple):
    name: str | None
    type: str
    mutated: bool        # returns an argument it wrote (Tensor(a!))


class Schema:
    """A parsed schema; ``str(schema)`` is its text."""

    __slots__ = ("text", "name", "arguments", "returns", "typed", "arg_names",
                 "tensor_positions", "list_positions", "mutated_positions", "n_outputs")

    def __init__(self, text: str):
        text = text.strip()
        open_ = text.find("(")
        name = text[:open_].strip() if open_ > 0 else ""
        if not name:
            raise ValueError(f"bad op schema {text!r}: expected 'name(args) -> returns'")
        close = _matching_paren(text, open_)
        inner = text[open_ + 1:close]
        rest = text[close + 1:].strip()
        if rest and not rest.startswith("->"):
            raise ValueError(f"bad op schema {text!r}: expected '->' after the arguments")
        ret_text = rest[2:].strip() if rest else ""

        self.text = text
        self.name = name
        self.arguments = tuple(_parse_arguments(inner, text))
        self.returns = tuple(_parse_returns(ret_text))
        self.typed = all(a.type for a in self.arguments)
        self.arg_names = tuple(a.name for a in self.arguments)
        self.tensor_positions = tuple(i for i, a in enumerate(self.arguments) if a.is_tensor)
        self.list_positions = tuple(i for i, a in enumerate(self.arguments) if a.is_tensor_list)
        self.mutated_positions = tuple(i for i, a in enumerate(self.arguments) if a.mutated)
        self.n_outputs = max(1, sum(1 for r in self.returns if r.type.startswith("Tensor")))

    def index(self, arg_name: str) -> int:
        """Position of the argument called ``arg_name``; ValueError naming the op otherwise."""
        try:
            return self.arg_names.index(arg_name)
        except ValueError:
            raise ValueError(f"{self.name}: no argument {arg_name!r} in {self.text}") from None

    def positional(self, args: tuple, kwargs: dict):
        """``(args, kwargs)`` with every keyword that names a positional argument moved to its
        place (defaults fill the gaps), so the layers below (autograd, vmap, tracing) see the
        call as the schema orders it; keyword-only arguments stay keywords."""
        moved = {}
        rest = {}
        for name, value in kwargs.items():
            try:
                i = self.arg_names.index(name)
            except ValueError:
                raise TypeError(f"{self.name}() got an unexpected keyword argument '{name}'") \
                    from None
            if self.arguments[i].kwarg_only:
                rest[name] = value
            elif i < len(args):
                raise TypeError(f"{self.name}() got multiple values for argument '{name}'")
            else:
                moved[i] = value
        if not moved:
            return args, kwargs
        out = list(args)
        for i in range(len(args), max(moved) + 1):
            if i in moved:
                out.append(moved[i])
                continue
            arg = self.arguments[i]
            if arg.default is None:
                raise TypeError(f"{self.name}() missing required argument '{arg.name}' "
                                f"(pos {i + 1})")
            out.append(_default_value(arg.default))
        return tuple(out), rest

    @property
    def multi_output(self) -> bool:
        return len(self.returns) > 1

    def __str__(self):
        return self.text

    def __repr__(self):
        return f"Schema({self.text!r})"

    def __eq__(self, other):
        if isinstance(other, Schema):
            return self.text == other.text
        if isinstance(other, str):
            return self.text == other
        return NotImplemented

    def __hash__(self):
        return hash(self.text)


def _matching_paren(text: str, open_: int) -> int:
    depth = 0
    for i in range(open_, len(text)):
        c = text[i]
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return i
    raise ValueError(f"bad op schema {text!r}: unbalanced parentheses")


def split_top_level(text: str) -> list:
    """``text`` split at commas outside parentheses and brackets."""
    depth, cur, out = 0, [], []
    for ch in text:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        if ch == "," and depth == 0:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    out.append("".join(cur))
    return [p.strip() for p in out if p.strip()]


def _parse_arguments(inner: str, text: str):
    kwarg_only = False
    for part in split_top_level(inner):
        if part == "*":
            kwarg_only = True
            continue
        decl, eq, default = part.partition("=")
        decl = decl.strip()
        typ, _, name = decl.rpartition(" ")
        typ, name = typ.strip(), name.strip()
        if not name.isidentifier():
            raise ValueError(f"bad op schema {text!r}: bad argument {part!r}")
        # the type without its alias annotation: "Tensor(a!)[]" is a list, "Tensor(a!)?" optional
        base = typ.split("(", 1)[0] + typ.split(")", 1)[1] if "(" in typ else typ
        is_list = base.endswith("[]") and base.startswith("Tensor")
        is_tensor = not is_list and base.startswith("Tensor")
        yield Argument(name=name, type=typ, is_tensor=is_tensor or (not typ),
                       is_tensor_list=is_list, optional="?" in base, mutated="!" in typ,
                       default=default.strip() if eq else None, kwarg_only=kwarg_only)


def _parse_returns(ret: str):
    if not ret:
        return
    if ret.startswith("(") and ret.endswith(")"):
        parts = split_top_level(ret[1:-1])
    else:
        parts = [ret]
    for part in parts:
        typ, _, name = part.rpartition(" ")
        if not typ:  # unnamed: "Tensor"
            typ, name = part, None
        yield Return(name=name, type=typ.strip(), mutated="!" in typ)


def _default_value(text: str):
    """A schema default's Python value: None, True/False, numbers, [] lists, strings."""
    literal = {"None": None, "True": True, "False": False, "inf": float("inf"),
               "-inf": float("-inf")}
    if text in literal:
        return literal[text]
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text
