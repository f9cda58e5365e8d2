"""Running real multi-process jobs through the launcher (for tests/test_distributed_*.py)."""
import importlib.util
import os
import subprocess
import sys
import time

import pytest

WORKERS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "dist_workers")


def mpi_missing_reason():
    if importlib.util.find_spec("mpi4py") is None:
        return "MPI is not available: mpi4py is not installed (pip install 'ember[distributed]')"
    from ember.distributed.run import find_mpiexec
    try:
        find_mpiexec()
    except FileNotFoundError as e:
        return f"MPI is not available: {e}"
    return None


requires_mpi = pytest.mark.skipif(mpi_missing_reason() is not None,
                                  reason=mpi_missing_reason() or "")


def run_job(n, script, *args, timeout=120, launcher_args=()):
    """Run ``script`` (a file in tests/dist_workers, or a path) on ``n`` ranks with
    ``python -m ember.distributed.run``; returns (returncode, stdout, stderr, seconds)."""
    path = script if os.path.isabs(script) else os.path.join(WORKERS, script)
    cmd = [sys.executable, "-m", "ember.distributed.run", "-n", str(n), *launcher_args, path,
           *map(str, args)]
    start = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    return proc.returncode, proc.stdout, proc.stderr, time.monotonic() - start
