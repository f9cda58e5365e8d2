"""``ember.sparse.check_sparse_tensor_invariants``: the global switch for the invariant checks
of sparse constructors called with ``check_invariants=None``."""
from __future__ import annotations

__all__ = ["check_sparse_tensor_invariants"]

_CHECK_INVARIANTS = [False]


class check_sparse_tensor_invariants:
    """Whether sparse constructors check their invariants when not told
    (``check_invariants=None``): as a context manager (``with check_sparse_tensor_invariants():``),
    a decorator, or through ``enable()``/``disable()``/``is_enabled()``.

    ember always checks that indices are within the size (an out-of-range index would give
    wrong results rather than torch's memory errors) unless ``check_invariants=False``; the
    switch adds what torch checks on top: a tensor declared ``is_coalesced=True`` must be."""

    @staticmethod
    def is_enabled() -> bool:
        return _CHECK_INVARIANTS[0]

    @staticmethod
    def enable() -> None:
        _CHECK_INVARIANTS[0] = True

    @staticmethod
    def disable() -> None:
        _CHECK_INVARIANTS[0] = False

    def __init__(self, enable=True):
        self.state = enable
        self.saved_state = None

    def __enter__(self):
        if self.saved_state is not None:
            raise RuntimeError("This context manager instance is already activated. Use a "
                               "different context manager instance for context nesting.")
        self.saved_state = self.is_enabled()
        _CHECK_INVARIANTS[0] = bool(self.state)

    def __exit__(self, *exc):
        _CHECK_INVARIANTS[0] = self.saved_state
        self.saved_state = None

    def __call__(self, fn):
        def checked(*args, **kwargs):
            with type(self)(self.state):
                return fn(*args, **kwargs)
        checked.__wrapped__ = fn
        return checked
