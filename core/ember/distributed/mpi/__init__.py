"""ember's built-in process-group backend ``"mpi"`` (mpi4py + the mpich wheel), registered
through the same pluggy hook a third-party package uses. Importing this module does not import
mpi4py; the factory does."""
from __future__ import annotations

from ...runtime.hookspecs import hookimpl
from .engine import available
from .group import create


def make_group(context):
    return create(context)


@hookimpl
def ember_register_process_groups(registry):
    registry.add("mpi", make_group, devices=None)


def is_available() -> bool:
    return available()
