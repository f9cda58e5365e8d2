"""``ember run script.py [args]``: run an unmodified PyTorch script on ember.

    ember run train.py --epochs 3                      # torch is ember
    ember run --device cuda=opencl train.py            # the script's "cuda" runs on OpenCL
    ember run --device cuda=openreg -m mypkg.train     # a module, on a plug-in's device
    python -m ember.run ...                            # the same command

``torch`` and every ``torch.X.Y`` import as ``ember``/``ember.X.Y`` (``torch_alias``); the script
runs as ``__main__`` with ``sys.argv`` = [script, args...] and its directory first on
``sys.path``, as ``python script.py`` would. ``--device SOURCE=TARGET`` (repeatable) redirects a
device type the script hard-codes to an installed backend: ``ember.runtime.devices.redirect``,
which the device parser applies to every device the script names (``"cuda:0"``, ``.cuda()``,
``device=``, ``map_location``), and which makes ``torch.cuda`` the target's device module
(``is_available()`` True, ``device_count()`` the target's) and the target the current
accelerator. Packages built on torch (torchvision, ...) stop at their import with a message naming
them (``outside``); ``--allow NAME`` lets one through.
"""
from __future__ import annotations

import argparse
import os
import re
import runpy
import sys
import traceback

from ..runtime.registry import registry
from .torch_alias import _parse_devices, install

__all__ = ["main", "run"]

USAGE_EPILOG = """\
examples:
  ember run train.py --epochs 3
  ember run --device cuda=opencl train.py          (the script's CUDA device runs on OpenCL)
  ember run --device cuda=cpu -m mypkg.train       (a module; CUDA calls run on the CPU)
  python -m ember.run --device cuda=openreg train.py

device types ember can run here: see `ember info`."""


def build_parser(prog: str = "ember run") -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog, formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Run an unmodified PyTorch script on ember: `import torch` and every "
                    "`torch.*` module resolve to ember's.", epilog=USAGE_EPILOG)
    parser.add_argument("--device", action="append", default=[], metavar="SOURCE=TARGET",
                        help="run the devices of type SOURCE the script names (e.g. cuda) on "
                             "the installed backend TARGET (e.g. opencl, cpu, a plug-in); "
                             "repeatable (default: no redirect)")
    parser.add_argument("--allow", action="append", default=[], metavar="PACKAGE",
                        help="let the script import PACKAGE even though it is built on torch "
                             "(it sees ember as torch; default: such imports stop with a "
                             "message); repeatable")
    parser.add_argument("-m", dest="module", metavar="MODULE",
                        help="run library module MODULE as a script (like python -m)")
    parser.add_argument("script", nargs="?", help="the script to run (unless -m is given)")
    parser.add_argument("args", nargs=argparse.REMAINDER,
                        help="arguments passed to the script as sys.argv[1:]")
    return parser


def _devices(specs):
    return [pair for spec in specs for pair in _parse_devices(spec)]


def _script_frames(tb, path):
    """The traceback from the script's first frame on (runpy's and ours are noise)."""
    first = tb
    while first is not None and os.path.abspath(first.tb_frame.f_code.co_filename) != path:
        first = first.tb_next
    return first or tb


def run(script=None, args=(), *, module=None, devices=(), allow=()) -> int:
    """Run ``script`` (a path) or ``module`` with torch aliased to ember; the exit status."""
    try:
        install(devices, allow)
    except (RuntimeError, ValueError) as e:   # an unknown or unavailable target device
        print(f"ember run: {e}", file=sys.stderr)
        return 2
    if module is not None:
        sys.argv = [module, *args]
        sys.path.insert(0, os.getcwd())
        runner, target, path = runpy.run_module, module, None
    else:
        path = os.path.abspath(script)
        if not os.path.exists(path):
            print(f"ember run: can't open file '{script}': no such file", file=sys.stderr)
            return 2
        sys.argv = [script, *args]
        sys.path[0:1] = [os.path.dirname(path)]   # what `python script.py` puts first
        runner, target = runpy.run_path, path
    try:
        if module is not None:
            runner(target, run_name="__main__", alter_sys=True)
        else:
            runner(target, run_name="__main__")
    except SystemExit:
        raise
    except KeyboardInterrupt:
        raise
    except ImportError as e:
        if not str(e).startswith("ember run:"):
            _print_error(e, path)
            return 1
        # our refusal of a package built on torch: where the script imported it, and why
        frames = [f for f in traceback.extract_tb(e.__traceback__)
                  if not f.filename.startswith("<") and
                  os.path.dirname(os.path.abspath(f.filename)) != os.path.dirname(__file__)]
        if frames:
            print("".join(traceback.format_list(frames[-1:])), end="", file=sys.stderr)
        print(str(e), file=sys.stderr)
        return 1
    except BaseException as e:   # the script's error, shown from its own frames
        _print_error(e, path)
        hint = _hint(e)
        if hint:
            print(f"\nember run: {hint}", file=sys.stderr)
        return 1
    return 0


def _print_error(e, path) -> None:
    traceback.print_exception(type(e), e, _script_frames(e.__traceback__, path)
                              if path else e.__traceback__)


def _hint(error) -> str | None:
    """A line about what ember lacks when the error says the script used it."""
    if isinstance(error, AttributeError) and getattr(error, "obj", None) is not None:
        obj, name = error.obj, error.name
        owner = getattr(obj, "__name__", None) if isinstance(obj, type(sys)) else None
        if owner and owner.startswith("ember"):
            return (f"'{owner}.{name}' does not exist in ember (the script asked for "
                    f"'torch{owner[len('ember'):]}.{name}'): this part of PyTorch's API is not "
                    f"provided; see `python bench/api_coverage.py --missing` for the list.")
    unusable = re.search(r"backend '(\w+)' is (?:not available|unavailable)|device type '(\w+)' "
                         r"is not installed", str(error))
    if isinstance(error, RuntimeError) and unusable:
        kind = unusable.group(1) or unusable.group(2)
        usable = [n for n in registry.names() if n not in (kind, "meta") and
                  registry.unavailable_reason(n) is None]
        return (f"the script uses '{kind}' devices, which can't run here; run its '{kind}' work "
                f"on an installed backend instead: ember run --device {kind}="
                f"{next((n for n in usable if n != 'cpu'), 'cpu')} ... (available here: "
                f"{', '.join(usable)})")
    if isinstance(error, NotImplementedError):
        return ("the script reached something ember does not implement (the message above "
                "names it).")
    return None


def main(argv=None, prog: str = "ember run") -> int:
    parser = build_parser(prog)
    ns = parser.parse_args(argv)
    if ns.module is None and ns.script is None:
        parser.error("give a script to run (or -m MODULE)")
    if ns.module is not None and ns.script is not None:
        ns.args = [ns.script, *ns.args]   # with -m, everything after it is the module's
    try:
        devices = _devices(ns.device)
    except ValueError as e:
        parser.error(str(e))
    return run(ns.script, ns.args, module=ns.module, devices=devices, allow=ns.allow)
