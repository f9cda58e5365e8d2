"""The ``ember`` command's entry point: ``ember --version`` answers from the installed
distribution's metadata without importing ember (whose import loads every op family); every
other command runs ``ember.cli.main``."""
from __future__ import annotations

import sys


def version() -> str:
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as dist_version
    try:
        return dist_version("ember")
    except PackageNotFoundError:  # a source tree that was never installed
        import ember
        return ember.__version__


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv == ["--version"]:
        print(f"ember {version()}")
        return 0
    from ember.cli import main as ember_main
    try:
        return ember_main(argv)
    except BrokenPipeError:   # `ember info | head`: the reader left; not an error of ours
        import os
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
