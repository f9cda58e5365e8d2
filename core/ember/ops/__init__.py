"""Op definitions: schema, dtype/shape rules and the Python API, one module per op family.

``ember.ops.<namespace>.<name>`` reaches ops defined through ``ember.library``.
"""
from ..library import namespace


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    return namespace(name)
