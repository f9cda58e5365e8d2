"""``ember.data``: the torchdata-style import path (``ember.data.datapipes.iter`` /
``.map``), the same DataPipes as ``ember.utils.data.datapipes``."""
from . import datapipes  # noqa: F401

__all__ = ["datapipes"]
