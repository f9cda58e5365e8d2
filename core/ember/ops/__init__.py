"""Op definitions: schema, dtype/shape rules and the Python API, one module per op family.

``ember.ops.<namespace>.<name>`` reaches ops defined through ``ember.library``.
"""


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    from ..library import namespace
    return namespace(name)
