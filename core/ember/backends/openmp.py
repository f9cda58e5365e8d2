"""``ember.backends.openmp``: ember is not built with OpenMP (numpy's BLAS may use threads of its
own); ``is_available()`` is False."""
from __future__ import annotations


def is_available() -> bool:
    """False: ember has no OpenMP parallel loops."""
    return False
