"""Dispatch keys, the op registry and the dispatcher (see ``dispatcher.py``)."""
