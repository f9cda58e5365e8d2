"""``ember.layout``: how a tensor's elements are stored (PyTorch's names).

``strided`` is the dense layout every op computes on; ``sparse_coo`` is a tensor holding
``indices`` (sparse_dim x nnz, int64) and ``values`` (nnz x dense dims) — see
``ember/ops/sparse/``. A layout is a property of the tensor (``t.layout``), not a class.
"""
from __future__ import annotations


class layout:
    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __repr__(self):
        return f"ember.{self.name}"

    def __reduce__(self):
        return self.name


strided = layout("strided")
sparse_coo = layout("sparse_coo")
