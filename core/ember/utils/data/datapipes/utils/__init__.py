"""Helpers for writing pipes (``StreamWrapper``, argument checks)."""
from . import common  # noqa: F401
from .common import StreamWrapper  # noqa: F401
