"""Real-program benchmark: public PyTorch programs, unmodified, per training step on torch and
on ember (``import ember as torch``), in one process (issue #31).

    python bench/bench_programs.py [--devices cpu,opencl] [--programs gcn,dqn,...]
                                   [--threads 1] [--quick] [--list]

The programs are vendored in ``bench/real_programs/`` (sources, commits and licences in its
README): each trimmed to the code one training step runs, otherwise as published.
``real_programs/harness.py`` builds each one's model and synthetic data and runs its step. A
program is loaded twice: once with the real torch, once with ember standing in for it — an
import shim maps ``torch`` and ``torch.*`` to ``ember`` and ``ember.*`` while the program's
module executes, so the program's text is not edited. ember runs on each device in
``--devices`` (a program written for the CPU only, making tensors without a device, runs there
under ``set_default_device``); torch on the CPU.

Timing: the contenders' steps alternate in rounds (``_timing.py``) and the minimum per step is
reported, so load on the machine hits both alike; OpenCL steps end with a synchronize. The
ratio is ember / torch CPU (below 1: ember is faster). OpenCL rows also count kernel launches
and host<->device transfers in one step. The last lines give the median and the range of the
ratios per device.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import importlib
import importlib.abc
import importlib.util
import statistics
import sys
import time
import traceback
from pathlib import Path

import gc

try:
    import torch
except ImportError:  # the ratios need torch; without it ember's times are printed alone
    torch = None
# A program that imports ember has no torch in its heap. Without this freeze every full
# collection that ember's autograd graphs trigger would also walk torch's ~140k import-time
# objects (measured: 8.8 of actor_critic's 44 ms per step); torch's own steps trigger none.
# ember is imported after it, so its import-time objects stay collectable as in its own process.
gc.freeze()

import numpy as np  # noqa: E402

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
from _timing import interleaved  # noqa: E402
from real_programs.harness import PROGRAMS  # noqa: E402

import ember  # noqa: E402


# -- the import shim: `import torch` inside a program gives ember --------------------------------
class _TorchIsEmber(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """``torch`` / ``torch.x.y`` resolve to the already-loaded (or loadable) ``ember`` /
    ``ember.x.y`` module objects, so classes keep one identity."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname == "torch" or fullname.startswith("torch."):
            return importlib.util.spec_from_loader(fullname, self)
        return None

    def create_module(self, spec):
        module = importlib.import_module("ember" + spec.name[len("torch"):])
        self._spec = getattr(module, "__spec__", None)
        return module

    def exec_module(self, module):
        module.__spec__ = self._spec  # importlib stamped the alias spec on it: put ember's back


@contextlib.contextmanager
def torch_is(lib):
    """While active, ``import torch`` (and its submodules) gives ``lib``."""
    if lib is not ember:
        yield
        return
    saved = {k: v for k, v in sys.modules.items() if k == "torch" or k.startswith("torch.")}
    for k in saved:
        del sys.modules[k]
    finder = _TorchIsEmber()
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        sys.meta_path.remove(finder)
        for k in [k for k in sys.modules if k == "torch" or k.startswith("torch.")]:
            del sys.modules[k]
        sys.modules.update(saved)


_loaded = [0]


def loader_for(lib):
    def load(name, **preset):
        """``real_programs/<name>.py`` executed with ``lib`` as its torch and ``preset`` as
        module globals set before it runs."""
        _loaded[0] += 1
        modname = f"_bench_program_{name}_{_loaded[0]}"
        spec = importlib.util.spec_from_file_location(modname, HERE / "real_programs" /
                                                      f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        module.__dict__.update(preset)
        sys.modules[modname] = module
        with torch_is(lib):
            spec.loader.exec_module(module)
        return module
    return load


class _Discard:
    """stdout for the steps: the programs print their losses."""

    def write(self, s):
        return len(s)

    def flush(self):
        pass


@contextlib.contextmanager
def default_device(prog, lib, device):
    """A program written for the CPU runs on another device under set_default_device (as it
    would with torch on CUDA); programs that place their tensors themselves run as written."""
    if lib is torch or device == "cpu" or not prog.default_device:
        yield
        return
    lib.set_default_device(device)
    try:
        yield
    finally:
        lib.set_default_device(None)


def contender(prog, lib, device):
    """A zero-argument callable running one step of ``prog`` with ``lib`` on ``device``."""
    sync = (lambda: None) if lib is torch or device == "cpu" else \
        getattr(ember, device.split(":")[0]).synchronize
    with default_device(prog, lib, device), contextlib.redirect_stdout(_Discard()):
        lib.manual_seed(0)
        step = prog.setup(loader_for(lib), lib, lib.device(device))

    def run():
        with default_device(prog, lib, device), contextlib.redirect_stdout(_Discard()):
            step()
        sync()
    return run


def count_launches(run):
    """(launches, transfers) in one OpenCL step."""
    from op_count import counting
    with counting() as counts:
        run()
    return counts["cl:launch"], counts["cl:transfer"]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--devices", default="cpu,opencl",
                        help="ember devices, comma-separated (default: cpu,opencl; an "
                             "unavailable one is skipped)")
    parser.add_argument("--programs", default=None, help="comma-separated subset")
    parser.add_argument("--threads", type=int, default=1,
                        help="intra-op threads for torch and ember (default 1)")
    parser.add_argument("--quick", action="store_true", help="fewer, shorter rounds")
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                        help="wall time (default) or the process's CPU time (on a loaded "
                             "machine: time descheduled does not count)")
    parser.add_argument("--list", action="store_true", help="list the programs and exit")
    args = parser.parse_args(argv)
    if args.list:
        for p in PROGRAMS.values():
            print(f"{p.name:<26}{p.kind:<10}{p.what}")
        return 0
    names = args.programs.split(",") if args.programs else list(PROGRAMS)
    devices = []
    for d in args.devices.split(","):
        d = d.strip()
        if d != "cpu" and not getattr(ember, d.split(":")[0]).is_available():
            print(f"(skipping {d}: not available)")
            continue
        devices.append(d)
    ember.set_num_threads(args.threads)
    if torch is not None:
        torch.set_num_threads(args.threads)
    rounds = args.rounds or (5 if args.quick else 9)
    round_time = 0.1 if args.quick else 0.25

    cols = "".join(f"{'ember ' + d + ' ms':>18}{'ratio':>8}" for d in devices)
    extra = f"{'launches/transfers':>20}" if any(d != "cpu" for d in devices) else ""
    header = f"{'program':<26}{'kind':<9}{'torch ms':>10}{cols}{extra}"
    print(f"threads {args.threads}, {args.clock} clock, torch "
          f"{torch.__version__ if torch else '-'}, ember {ember.__version__}, load average "
          f"{os.getloadavg()[0]:.1f}")
    print(header)
    print("-" * len(header))
    ratios = {d: [] for d in devices}
    for name in names:
        prog = PROGRAMS[name]
        fns = {}
        errors = {}
        if torch is not None:
            fns["torch"] = contender(prog, torch, "cpu")
            fns["torch"]()
        for d in devices:
            if d != "cpu" and prog.cpu_only:
                errors[d] = "cpu-only"
                continue
            try:
                fns[d] = contender(prog, ember, d)
                fns[d]()   # fail here, not inside the timing
            except Exception as e:  # noqa: BLE001 - reported in the table
                errors[d] = f"{type(e).__name__}: {e}"
                fns.pop(d, None)
                traceback.print_exc(limit=-3, file=sys.stderr)
        clock = time.process_time if args.clock == "cpu" else time.perf_counter
        times = interleaved(fns, rounds=rounds, round_time=round_time, clock=clock) \
            if fns else {}
        t = times.get("torch", (None,))[0]
        row = f"{name:<26}{prog.kind:<9}{t * 1e3 if t else float('nan'):10.2f}"
        notes = []
        for d in devices:
            if d in errors:
                row += f"{'n/a':>18}{'':>8}"
                notes.append(f"{d}: {errors[d]}")
                continue
            e = times[d][0]
            r = e / t if t else float("nan")
            ratios[d].append((r, name))
            row += f"{e * 1e3:18.2f}{r:8.2f}"
        for d in devices:
            if d != "cpu" and d in fns:
                launches, transfers = count_launches(fns[d])
                row += f"{launches:>12d}/{transfers:<7d}"
        print(row, flush=True)
        for n in notes:
            print(f"    {n[:150]}")
    print()
    for d in devices:
        rs = sorted(ratios[d])
        if not rs:
            continue
        med = statistics.median(r for r, _ in rs)
        print(f"ember {d} / torch cpu: median {med:.2f}x over {len(rs)} programs, "
              f"min {rs[0][0]:.2f}x ({rs[0][1]}), max {rs[-1][0]:.2f}x ({rs[-1][1]})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
