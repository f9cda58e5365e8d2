"""``ember.utils.hooks``: the handle every ``register_*hook`` method returns (torch's name)."""
from __future__ import annotations

import itertools
import weakref

_ids = itertools.count()


class RemovableHandle:
    """``handle.remove()`` takes the hook out again; also a context manager that removes it on
    exit. The handle holds its hook dicts weakly, so it never keeps a module or tensor alive.

    The caller stores the hook under ``handle.id``: ``d[handle.id] = hook``. ``extra_dict``
    names further dicts keyed by the same id (per-hook flags) that ``remove`` cleans too.
    """

    def __init__(self, hooks_dict, *, extra_dict=None):
        self.hooks_dict_ref = weakref.ref(hooks_dict)
        self.id = next(_ids)
        extra = () if extra_dict is None else (
            extra_dict if isinstance(extra_dict, (list, tuple)) else (extra_dict,))
        self.extra_dict_ref = tuple(weakref.ref(d) for d in extra)

    def remove(self) -> None:
        for ref in (self.hooks_dict_ref,) + self.extra_dict_ref:
            d = ref()
            if d is not None:
                d.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()

    def __repr__(self):
        return f"<RemovableHandle id={self.id}>"
