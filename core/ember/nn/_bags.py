"""``F.embedding_bag`` (the op is in ``ember/ops/embedding_bag.py``)."""
from __future__ import annotations

from ..ops.embedding_bag import embedding_bag

__all__ = ["embedding_bag"]
