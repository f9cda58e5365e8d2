"""The primitive ops the rules layer builds on, filled in by the families that define them.

The rules layer (``_grad``: derivative-formula helpers, ``_batching``: vmap rules, ``_tangents``:
jvp rules) sits under every op family, so it cannot import one: a family imports the rules
while it defines its ops. What the rules call is listed here instead, and each family hands
over its ops right after defining them (``_primitives.provide(sum_op=sum_op)``). The rules call
them at run time, by which point every family has loaded. A slot still None at that point means
the family that owns it was never imported.

The same holds for the two services of autograd (a layer above the ops) that an op's own
implementation needs: ``grad`` (a backward op computed by differentiating its composite) and
``SavedTensor`` (statistics an op's derivative reads, version-checked like saved inputs).
"""
from __future__ import annotations

#: name -> the family module that provides it (documentation, and what ``provide`` accepts)
SLOTS = {
    "sum_op": "reduction.sums",
    "view_op": "views.reshaping",
    "expand_op": "views.reshaping",
    "reshape": "views.reshaping",
    "select_op": "views.slicing",
    "to_copy_op": "conversion",
    "copy_op": "conversion",
    "arange": "factories",
    "tensor": "factories",
    "full_op": "factories",
    "where": "elementwise.selection",
    "conj_physical_op": "elementwise.unary",
    "cat_op": "shape",
    "scatter_into_zeros": "indexing.gather_scatter",
    "solve_op": "linalg.solvers",
    "solve_triangular_op": "linalg.solvers",
    "grad": "autograd.engine",
    "SavedTensor": "autograd.graph",
}

sum_op = view_op = expand_op = reshape = select_op = to_copy_op = copy_op = full_op = where = None
arange = tensor = None
conj_physical_op = cat_op = scatter_into_zeros = solve_op = solve_triangular_op = None
grad = SavedTensor = None


def provide(**ops) -> None:
    """Called by a family once its ops exist: fill the named slots."""
    unknown = set(ops) - set(SLOTS)
    if unknown:
        raise KeyError(f"not primitive slots: {sorted(unknown)}")
    globals().update(ops)
