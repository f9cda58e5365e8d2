"""What each rank of ``ember-run`` runs (MPI is already initialised by the bootstrap line):
set the launcher variables, run the target as ``__main__``, and end the whole job with
``MPI_Abort`` if it fails — a rank that merely exits non-zero would leave the others waiting
until their timeouts. A rank whose script returns writes its finish marker for ``ember-run``
(``run.mark_finished``)."""
from __future__ import annotations

import os
import runpy
import sys
import traceback

from .run import mark_finished


def _launcher_env(comm) -> None:
    rank, size = comm.Get_rank(), comm.Get_size()
    local_rank = os.environ.get("MPI_LOCALRANKID")      # set by Hydra
    local_size = os.environ.get("MPI_LOCALNRANKS")
    if local_rank is None or local_size is None:
        from mpi4py import MPI  # optional: mpi4py (ember[distributed])
        node = comm.Split_type(MPI.COMM_TYPE_SHARED)
        local_rank, local_size = str(node.Get_rank()), str(node.Get_size())
        node.Free()
    os.environ.update(RANK=str(rank), WORLD_SIZE=str(size), LOCAL_RANK=local_rank,
                      LOCAL_WORLD_SIZE=local_size)


def _end_job(code: int) -> None:
    from mpi4py import MPI  # optional: mpi4py (ember[distributed])
    sys.stdout.flush()
    sys.stderr.flush()
    if MPI.COMM_WORLD.Get_size() > 1 and MPI.Is_initialized() and not MPI.Is_finalized():
        MPI.COMM_WORLD.Abort(code)
    os._exit(code)


def main() -> None:
    from mpi4py import MPI  # optional: mpi4py (ember[distributed])
    args = sys.argv[1:]
    module = bool(args) and args[0] == "-m"
    if module:
        args = args[1:]
    if not args:
        print("ember-run worker: no target given", file=sys.stderr)
        _end_job(2)
    _launcher_env(MPI.COMM_WORLD)
    target = args[0]
    sys.argv = list(args)
    try:
        if module:
            runpy.run_module(target, run_name="__main__", alter_sys=True)
        else:
            sys.path[0] = os.path.dirname(os.path.abspath(target))
            runpy.run_path(target, run_name="__main__")
    except SystemExit as e:
        code = e.code
        if code is None or code == 0:
            mark_finished(MPI.COMM_WORLD.Get_rank())
            return
        if not isinstance(code, int):
            print(code, file=sys.stderr)
            code = 1
        _end_job(code)
    except BaseException:  # noqa: BLE001 - report, then take the job down
        rank = os.environ.get("RANK", "?")
        sys.stderr.write(f"[ember-run] rank {rank} failed:\n" + traceback.format_exc())
        _end_job(1)
    mark_finished(MPI.COMM_WORLD.Get_rank())
