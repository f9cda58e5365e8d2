"""``ember-run`` / ``python -m ember.distributed.run``: start a script on N processes.

    ember-run -n 4 train.py --epochs 3          # 4 ranks on this machine
    ember-run -n 8 --hostfile hosts train.py    # 8 ranks over the hosts listed in `hosts`
    ember-run --nproc-per-node 4 --hosts a,b -m pkg.train
    ember-run --nproc-per-node gpu train.py     # one rank per visible GPU

Underneath is ``mpiexec`` (Hydra) from the ``mpich`` wheel, found next to this Python (the venv's
``bin/``) without any PATH change. Each rank runs a small bootstrap that initialises MPI before
the script (so that a rank failing early can still end the job), sets PyTorch's launcher
variables ``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK`` and ``LOCAL_WORLD_SIZE``, runs the script as
``__main__`` and, if it raises or exits non-zero, calls ``MPI_Abort``: mpiexec then kills every
rank and exits non-zero. A rank killed by a signal ends the job the same way. With
``--nproc-per-node gpu`` there is one rank per GPU; the "nccl" group puts each rank on GPU
``LOCAL_RANK`` (unless the script chose one with set_device).

A rank that leaves early with status 0 (``os._exit(0)`` in the middle of the job, a library
calling ``exit(0)`` from C) would look like success to mpiexec. So each rank writes a marker,
``rank-<r>.done``, into a private (0700) run directory (``EMBER_RUN_DIR``) when it finishes
properly: at ``destroy_process_group`` or when its script returns. ``ember-run`` runs mpiexec as a
child (forwarding SIGINT, SIGTERM and SIGHUP to it), then names every rank without a marker and
exits non-zero. Multi-node jobs need ``--run-dir`` on a file system every host shares for this
check (otherwise it is skipped, with a note); ``--no-python`` targets write no markers.
``MASTER_ADDR`` /
``MASTER_PORT`` are not set: no engine here needs an address (MPI rendezvous through Hydra; a
plug-in such as NCCL exchanges its id over MPI).

Multi-node: the hostfile has one host per line, optionally ``host:slots``; Hydra starts the
remote ranks over ssh (passwordless ssh and the same venv path on every host are needed).
"""
from __future__ import annotations

import argparse
import logging
import os
import shlex
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
import ember

__all__ = ["main", "find_mpiexec", "build_command", "RUN_DIR_ENV", "mark_finished"]

#: the environment variable that gives each rank the launcher's run directory
RUN_DIR_ENV = "EMBER_RUN_DIR"


def mark_finished(rank=None) -> None:
    """Tell ``ember-run`` this rank finished properly (a no-op outside ember-run)."""
    folder = os.environ.get(RUN_DIR_ENV)
    if not folder:
        return
    if rank is None:
        rank = os.environ.get("RANK")
    try:
        fd = os.open(os.path.join(folder, f"rank-{int(rank)}.done"),
                     os.O_WRONLY | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600)
        os.close(fd)
    except (OSError, TypeError, ValueError):
        pass  # the launcher then reports this rank as ended early: never a false success

_BOOT = ("import sys\n"
         "sys.stdout.reconfigure(line_buffering=True, write_through=False)\n"  # one write per
         "sys.stderr.reconfigure(line_buffering=True, write_through=False)\n"  # line: no mixing
         "from mpi4py import MPI\n"
         "try:\n"
         "    from ember.distributed._worker import main\n"
         "except BaseException:\n"
         "    import traceback; traceback.print_exc(); sys.stderr.flush()\n"
         "    MPI.COMM_WORLD.Abort(1)\n"
         "main()\n")


def find_mpiexec(explicit=None) -> str:
    """The mpiexec of the MPI that mpi4py uses: ``--mpiexec``/``EMBER_MPIEXEC``, else the one
    the mpich wheel installed beside this Python, else one on PATH."""
    for cand in (explicit, os.environ.get("EMBER_MPIEXEC")):
        if cand:
            if not (os.path.isfile(cand) and os.access(cand, os.X_OK)):
                raise FileNotFoundError(f"ember-run: mpiexec {cand!r} is not an executable file")
            return cand
    dirs = [sysconfig.get_path("scripts"), os.path.dirname(sys.executable)]
    for d in dirs:
        cand = os.path.join(d, "mpiexec")
        if os.path.isfile(cand) and os.access(cand, os.X_OK):
            return cand
    found = shutil.which("mpiexec")
    if found:
        return found
    raise FileNotFoundError("ember-run: no mpiexec found (looked in " + ", ".join(dirs) +
                            " and on PATH); install the MPI extra: pip install "
                            "'ember[distributed]' (mpi4py + the mpich wheel)")


def _parser():
    p = argparse.ArgumentParser(
        prog="ember-run", description="Run a Python script on N processes (mpiexec underneath) "
        "with RANK, WORLD_SIZE, LOCAL_RANK and LOCAL_WORLD_SIZE set.")
    p.add_argument("-n", "--np", dest="np", type=int, help="total number of processes")
    p.add_argument("--nproc-per-node", "--nproc_per_node", dest="ppn",
                   help="processes per host (total = this x hosts unless -n is given); 'gpu': "
                        "one per visible CUDA GPU (each rank's LOCAL_RANK picks its GPU in the "
                        "nccl group), 'auto': 'gpu' with GPUs, else 1")
    p.add_argument("--hostfile", "-f", help="file listing the hosts (host or host:slots per "
                   "line) for a multi-node job")
    p.add_argument("--hosts", help="comma-separated host list (instead of --hostfile)")
    p.add_argument("--mpiexec", help="the mpiexec to use (default: the mpich wheel's)")
    p.add_argument("--mpi-arg", action="append", default=[], metavar="ARG",
                   help="extra argument for mpiexec (repeatable), e.g. --mpi-arg=-prepend-rank")
    p.add_argument("--run-dir", help="directory where ranks mark a proper finish (default: a "
                   "private temporary directory; give a shared one for multi-node jobs)")
    p.add_argument("--dry-run", action="store_true", help="print the command, run nothing")
    p.add_argument("-m", "--module", action="store_true",
                   help="run the target as a module (python -m), like torchrun -m")
    p.add_argument("--no-python", action="store_true",
                   help="run the target as an executable, not through Python")
    p.add_argument("target", help="the script (or module with -m, executable with --no-python)")
    p.add_argument("args", nargs=argparse.REMAINDER, help="the target's arguments")
    return p


def _host_count(opts) -> int:
    if opts.hosts:
        return len([h for h in opts.hosts.split(",") if h.strip()])
    if opts.hostfile:
        with open(opts.hostfile) as f:
            return len([ln for ln in f if ln.strip() and not ln.lstrip().startswith("#")])
    return 1


def _gpu_count() -> int:
    return ember.cuda.device_count() if ember.cuda.is_available() else 0


def resolve_ppn(value, gpu_count=_gpu_count):
    """``--nproc-per-node``: an integer, ``gpu`` (the visible CUDA GPUs; an error without
    any) or ``auto`` (the GPUs, else 1); None stays None."""
    if value is None or isinstance(value, int):
        return value
    if value in ("gpu", "auto"):
        n = gpu_count()
        if n == 0 and value == "gpu":
            raise SystemExit("ember-run: --nproc-per-node gpu: no CUDA GPU is visible here")
        return n or 1
    try:
        return int(value)
    except ValueError:
        raise SystemExit(f"ember-run: --nproc-per-node takes a number, 'gpu' or 'auto', got "
                         f"{value!r}") from None


def build_command(opts):
    """(argv, environment changes) for parsed options."""
    opts.ppn = resolve_ppn(opts.ppn)
    if opts.hostfile and opts.hosts:
        raise SystemExit("ember-run: give --hostfile or --hosts, not both")
    if opts.hostfile and not os.path.isfile(opts.hostfile):
        raise SystemExit(f"ember-run: hostfile {opts.hostfile!r} does not exist")
    if opts.module and opts.no_python:
        raise SystemExit("ember-run: -m and --no-python exclude each other")
    for name in ("np", "ppn"):
        v = getattr(opts, name)
        if v is not None and v < 1:
            raise SystemExit(f"ember-run: the number of processes must be at least 1, got {v}")
    total = opts.np
    if total is None:
        total = (opts.ppn or 1) * _host_count(opts)
    cmd = [find_mpiexec(opts.mpiexec), "-n", str(total)]
    if opts.hostfile:
        cmd += ["-f", opts.hostfile]
    if opts.hosts:
        cmd += ["-hosts", opts.hosts]
    if opts.ppn and (opts.hostfile or opts.hosts):
        cmd += ["-ppn", str(opts.ppn)]
    cmd += list(opts.mpi_arg)
    if opts.no_python:
        cmd += [opts.target]
    else:
        cmd += [sys.executable, "-c", _BOOT] + (["-m"] if opts.module else [])
        cmd += [opts.target]
    cmd += list(opts.args)
    env = {}
    if total > 1 and "OMP_NUM_THREADS" not in os.environ:
        # torchrun's rule: one BLAS/OpenMP thread per process unless the user says otherwise
        env["OMP_NUM_THREADS"] = "1"
    return cmd, env


def _run_dir(opts, total):
    """(directory for the finish markers or None, whether ember-run made it)."""
    if opts.no_python:
        return None, False
    if opts.run_dir:
        os.makedirs(opts.run_dir, mode=0o700, exist_ok=True)
        for r in range(total):
            try:
                os.unlink(os.path.join(opts.run_dir, f"rank-{r}.done"))
            except FileNotFoundError:
                pass
        return os.path.abspath(opts.run_dir), False
    if opts.hostfile or opts.hosts:
        print("ember-run: multi-node job without --run-dir: ranks that exit early with "
              "status 0 can't be detected", file=sys.stderr, flush=True)
        return None, False
    return tempfile.mkdtemp(prefix="ember-run-"), True


def _unfinished(folder, total):
    return [r for r in range(total) if not os.path.exists(os.path.join(folder, f"rank-{r}.done"))]


def _early_message(early, code):
    who = f"rank{'s' if len(early) > 1 else ''} {', '.join(map(str, early))}"
    why = "exited before destroy_process_group or the end of the script"
    if code:  # mpiexec ends every rank once one fails: some of these may have been ended
        why += f", or were ended by mpiexec after another rank failed (exit status {code})"
    return f"ember-run: the job failed: {who} did not finish ({why})"


def _run(cmd, env):
    """mpiexec as a child: signals meant for the job go to it; its exit status."""
    child = subprocess.Popen(cmd, env=env)
    forwarded = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    previous = {}

    def forward(signum, frame):
        try:
            child.send_signal(signum)
        except OSError:
            pass
    for sig in forwarded:
        try:
            previous[sig] = signal.signal(sig, forward)
        except (ValueError, OSError):  # not the main thread, or not on this platform
            pass
    try:
        code = child.wait()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 128 - code if code < 0 else code  # killed by a signal: the shell's convention


def main(argv=None) -> int:
    opts = _parser().parse_args(argv)
    try:
        cmd, env = build_command(opts)
    except FileNotFoundError as e:
        print(e, file=sys.stderr)
        return 2
    if opts.dry_run:
        print(" ".join(f"{k}={v}" for k, v in env.items()) + (" " if env else "") +
              " ".join(shlex.quote(c) for c in cmd))
        return 0
    if "OMP_NUM_THREADS" in env:
        print("*****************************************\n"
              "Setting OMP_NUM_THREADS environment variable for each process to be 1 in "
              "default, to avoid your system being overloaded, please further tune the "
              "variable for optimal performance in your application as needed. \n"
              "*****************************************", file=sys.stderr, flush=True)
    total = int(cmd[cmd.index("-n") + 1])
    folder, made = _run_dir(opts, total)
    full_env = dict(os.environ, **env)
    logging.getLogger("ember.distributed").info("ember-run: %s", " ".join(cmd))
    if folder is not None:
        full_env[RUN_DIR_ENV] = folder
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        code = _run(cmd, full_env)
        if folder is not None:
            early = _unfinished(folder, total)
            if early:
                print(_early_message(early, code), file=sys.stderr, flush=True)
                if code == 0:
                    code = 1
    finally:
        if made:
            shutil.rmtree(folder, ignore_errors=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
