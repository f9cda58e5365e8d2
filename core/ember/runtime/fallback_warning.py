"""The warning category of the CPU fallback, so users and tools can filter it.

``warnings.filterwarnings("ignore", category=ember.runtime.CPUFallbackWarning)`` silences the
"op 'x' has no kernel for backend 'y'; it runs on the CPU" notices; ``ember-conformance``
records them and reports the list once instead of printing each.
"""


class CPUFallbackWarning(UserWarning):
    """An op ran on the CPU because its backend has no kernel for it (shown once per op)."""
