"""Attention functionals of ``ember.nn.functional``: ``scaled_dot_product_attention`` (an op,
``ember.ops.attention``) and ``multi_head_attention_forward``."""
from __future__ import annotations

from ..ops.attention import scaled_dot_product_attention

__all__ = ["scaled_dot_product_attention"]
