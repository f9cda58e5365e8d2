"""Op definitions: schema, dtype/shape rules and the Python API, one module per op family."""
