"""``ember.utils``: helpers with the names of ``torch.utils`` (``checkpoint``)."""
from . import checkpoint  # noqa: F401
