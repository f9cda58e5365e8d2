"""``ember.layout``: how a tensor's elements are stored (PyTorch's names).

``strided`` is the dense layout every op computes on; ``sparse_coo`` is a tensor holding
``indices`` (sparse_dim x nnz, int64) and ``values`` (nnz x dense dims) — see
``ember/ops/sparse/``. A layout is a property of the tensor (``t.layout``), not a class.
"""
from __future__ import annotations


class NamedConstant:
    """A module-level constant of ``ember`` (a layout, a memory format): printed as
    ``ember.<name>`` and pickled by its name, so it unpickles as the same object."""
    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __repr__(self):
        return f"ember.{self.name}"

    def __reduce__(self):
        return self.name


class layout(NamedConstant):
    __slots__ = ()


strided = layout("strided")
sparse_coo = layout("sparse_coo")
