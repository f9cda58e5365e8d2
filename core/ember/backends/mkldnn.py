"""``ember.backends.mkldnn``: PyTorch's oneDNN switch. ember does not use oneDNN:
``is_available()`` is False and ``enabled`` changes nothing."""
from __future__ import annotations

from ._flags import Flag, FlagModule, become


def is_available() -> bool:
    """False: no ember backend uses oneDNN (mkldnn)."""
    return False


class _MkldnnModule(FlagModule):
    enabled = Flag(True, "Whether oneDNN may be used. No effect: ember does not use oneDNN.",
                   setter_name="set_enabled_mkldnn")

    def flags(self, enabled=False):
        """Context manager setting ``enabled`` inside the block."""
        return self._flags_context(enabled=enabled)


become(__name__, _MkldnnModule)
