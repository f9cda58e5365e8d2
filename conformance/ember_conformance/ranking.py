"""What a backend author implements next: the ops on the CPU fallback ranked by how many cells
each would turn native, and the families (op-database modules) the grid is grouped by.

A *fallback cell* is an op entry at a dtype whose checks passed with some of its registry ops on
the CPU fallback (``Result.fallback_ops``). Implementing op X natively turns native every
fallback cell whose fallback ops are X alone (``cells_alone``, the ranking key); cells that
also need other ops (``cells_with_others``) move one op closer. Ops are grouped by the family
of the module that defines them (``ops/<family>/``), each with the command that reruns exactly
its cells.
"""
from __future__ import annotations

import os
import shlex
from dataclasses import dataclass, field

from .selection import OP_SUITES
from .summary import cell_status, cells


@dataclass
class Ranked:
    op: str
    family: str
    cells_alone: int = 0           # fallback cells this op alone keeps off native
    cells_with_others: int = 0     # fallback cells that need it and other ops too
    entries: list = field(default_factory=list)   # op entries whose cells use it

    @property
    def cells(self) -> int:
        return self.cells_alone + self.cells_with_others


def op_family(name: str) -> str:
    """The family of a registry op: the ``ops/<family>`` module or package that defines it
    (``elementwise``, ``nn``, ``linalg``…), else the defining module's top package."""
    from ember.dispatch.dispatcher import all_ops
    op = all_ops().get(name)
    where = (op.defined_at or ("",))[0] if op is not None else ""
    parts = os.path.normpath(where).split(os.sep)
    if "ops" in parts and parts.index("ops") + 1 < len(parts):
        family = parts[parts.index("ops") + 1]
        return family[:-3] if family.endswith(".py") else family
    return parts[-2] if len(parts) > 1 else "other"


def entry_families() -> dict:
    """{op entry name: its op-database module} (``elementwise``, ``nn``, ``linalg``…)."""
    import importlib

    from . import opdb
    out = {}
    for family in opdb._FAMILIES:
        try:
            module = importlib.import_module(f"{opdb.__name__}.{family}")
        except ModuleNotFoundError:
            continue
        for info in module.OPS:
            out.setdefault(info.name, family)
    return out


def fallback_ranking(results) -> list:
    """``Ranked`` per op on the CPU fallback, most cells alone first."""
    ranked = {}
    for (name, _dtype), rows in cells(results).items():
        if cell_status(rows) != "fallback":
            continue
        ops = sorted({op for r in rows if r.suite in OP_SUITES for op in r.fallback_ops})
        for op in ops:
            item = ranked.get(op)
            if item is None:
                item = ranked[op] = Ranked(op, op_family(op))
            if len(ops) == 1:
                item.cells_alone += 1
            else:
                item.cells_with_others += 1
            if name not in item.entries:
                item.entries.append(name)
    return sorted(ranked.values(), key=lambda r: (-r.cells_alone, -r.cells, r.op))


def by_family(ranked) -> list:
    """[(family, [Ranked…])], the family turning the most cells native first."""
    groups = {}
    for r in ranked:
        groups.setdefault(r.family, []).append(r)
    return sorted(groups.items(), key=lambda kv: (-sum(r.cells_alone for r in kv[1]),
                                                 -sum(r.cells for r in kv[1]), kv[0]))


def rerun_command(backend: str, item: Ranked) -> str:
    """The command that reruns exactly the op entries whose cells use ``item.op``."""
    return shlex.join(["ember-conformance", "--backend", backend, "--ops",
                       ",".join(item.entries), "--suites", "forward,gradient"])
