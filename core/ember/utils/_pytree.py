"""Nested Python containers of leaves ("pytrees"), as ``torch.utils._pytree`` handles them:
tuples, lists, dicts (keys kept in insertion order), named tuples and None are containers;
anything else (tensors, numbers, strings) is a leaf.

``tree_flatten(tree) -> (leaves, spec)`` and ``tree_unflatten(leaves, spec)`` are inverses;
``spec`` also lets ``tree_flatten_as(prefix_spec, tree)`` broadcast a prefix tree (vmap's
``in_dims``) over a full one.
"""
from __future__ import annotations

from typing import NamedTuple


class TreeSpec(NamedTuple):
    """How a tree is built: ``kind`` (None for a leaf), the container's ``context`` (dict keys,
    the named tuple's class) and one spec per child."""
    kind: object
    context: object
    children: tuple

    @property
    def num_leaves(self) -> int:
        if self.kind is None:
            return 1
        return sum(c.num_leaves for c in self.children)

    def is_leaf(self) -> bool:
        return self.kind is None


LEAF = TreeSpec(None, None, ())


def _is_namedtuple(x) -> bool:
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


def _children(tree):
    """(kind, context, children) of a container, or None for a leaf."""
    if tree is None:
        return "none", None, ()
    cls = tree.__class__
    if cls is tuple:
        return tuple, None, tree
    if cls is list:
        return list, None, tree
    if cls is dict:
        return dict, tuple(tree), tuple(tree.values())
    if _is_namedtuple(tree):
        return "namedtuple", cls, tuple(tree)
    if isinstance(tree, dict):  # OrderedDict and other dict subclasses keep their class
        return "dict_subclass", (cls, tuple(tree)), tuple(tree.values())
    return None


def tree_flatten(tree):
    leaves = []
    spec = _flatten(tree, leaves)
    return leaves, spec


def _flatten(tree, leaves):
    parts = _children(tree)
    if parts is None:
        leaves.append(tree)
        return LEAF
    kind, context, children = parts
    return TreeSpec(kind, context, tuple(_flatten(c, leaves) for c in children))


def tree_unflatten(leaves, spec: TreeSpec):
    it = iter(leaves)
    out = _build(it, spec)
    rest = sum(1 for _ in it)
    if rest:
        raise ValueError(f"tree_unflatten: {rest} leaves left over for the tree spec")
    return out


def _build(it, spec):
    kind = spec.kind
    if kind is None:
        try:
            return next(it)
        except StopIteration:
            raise ValueError("tree_unflatten: too few leaves for the tree spec") from None
    children = [_build(it, c) for c in spec.children]
    if kind == "none":
        return None
    if kind is tuple:
        return tuple(children)
    if kind is list:
        return children
    if kind is dict:
        return dict(zip(spec.context, children))
    if kind == "namedtuple":
        return spec.context(*children)
    cls, keys = spec.context
    return cls(zip(keys, children))


def tree_leaves(tree) -> list:
    return tree_flatten(tree)[0]


def leaves_of_type(tree, cls) -> list:
    """The instances of ``cls`` inside nested lists, tuples and dicts (subclasses of those
    included), in order; anything else is skipped."""
    if isinstance(tree, cls):
        return [tree]
    if isinstance(tree, (list, tuple)):
        return [x for v in tree for x in leaves_of_type(v, cls)]
    if isinstance(tree, dict):
        return [x for v in tree.values() for x in leaves_of_type(v, cls)]
    return []


def tree_map(fn, tree):
    leaves, spec = tree_flatten(tree)
    return tree_unflatten([fn(x) for x in leaves], spec)


def broadcast_prefix(prefix, tree, what="in_dims"):
    """The leaves of ``prefix`` repeated over the leaves of ``tree``: a leaf of ``prefix``
    stands for the whole subtree at its place (vmap's ``in_dims=0`` for a dict of tensors).
    ValueError naming ``what`` when the structures disagree."""
    out = []
    _broadcast(prefix, tree, out, what, "")
    return out


def _broadcast(prefix, tree, out, what, path):
    parts = _children(prefix)
    if parts is None or prefix is None:
        out.extend([prefix] * len(tree_leaves(tree)))
        return
    tparts = _children(tree)
    kind, context, children = parts
    if tparts is None or not _same_kind(kind, tparts[0]):
        raise ValueError(f"{what}{path or ''} is a {type(prefix).__name__} but the input it "
                         f"describes is a {type(tree).__name__}")
    tkind, tcontext, tchildren = tparts
    if len(children) != len(tchildren):
        raise ValueError(f"{what}{path or ''} has {len(children)} entries but the input it "
                         f"describes has {len(tchildren)}")
    if kind is dict or kind == "dict_subclass":
        keys = context if kind is dict else context[1]
        tkeys = tcontext if tkind is dict else tcontext[1]
        if set(keys) != set(tkeys):
            raise ValueError(f"{what}{path or ''} has keys {sorted(map(str, keys))} but the "
                             f"input it describes has keys {sorted(map(str, tkeys))}")
        lookup = dict(zip(keys, children))
        for k, t in zip(tkeys, tchildren):
            _broadcast(lookup[k], t, out, what, f"{path}[{k!r}]")
        return
    for i, (p, t) in enumerate(zip(children, tchildren)):
        _broadcast(p, t, out, what, f"{path}[{i}]")


def _same_kind(a, b) -> bool:
    seq = (tuple, list, "namedtuple")
    maps = (dict, "dict_subclass")
    return a == b or (a in seq and b in seq) or (a in maps and b in maps)
