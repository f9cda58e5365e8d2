"""sorting ops (being written)."""
__all__ = []
