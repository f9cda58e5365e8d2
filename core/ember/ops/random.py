"""random ops (being written)."""
__all__ = []
