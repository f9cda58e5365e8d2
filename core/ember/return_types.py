"""``ember.return_types``: the named tuples that ops return (PyTorch's ``torch.return_types``).

Each type is a ``collections.namedtuple`` subclass that prints like PyTorch's and pickles by
reference to this module. Op modules add their own with ``_return_type`` (``ops/sorting.py``
adds ``sort`` and ``topk`` here).
"""
from __future__ import annotations

import collections


def _return_type(name, fields):
    """A named tuple that prints like PyTorch's ``torch.return_types.<name>``; registered as
    ``ember.return_types.<name>`` by the caller's assignment."""
    base = collections.namedtuple(name, fields)

    def __repr__(self):
        body = ",\n".join(f"{f}={v!r}" for f, v in zip(fields, self))
        return f"ember.return_types.{name}(\n{body})"

    return type(name, (base,), {"__slots__": (), "__repr__": __repr__,
                                "__module__": __name__, "__qualname__": name})


max = _return_type("max", ["values", "indices"])  # noqa: A001 - PyTorch's names
min = _return_type("min", ["values", "indices"])  # noqa: A001
aminmax = _return_type("aminmax", ["min", "max"])
