"""Load a script of ``tools/`` (the snapshot generators) as a module, for the tests that check
a checked-in snapshot is still what the generator makes from the installed torch."""
from __future__ import annotations

import importlib.util
import os


def load_tool(name):
    path = os.path.join(os.path.dirname(__file__), "..", "tools", f"{name}.py")
    spec = importlib.util.spec_from_file_location(name, path)
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    return tool
