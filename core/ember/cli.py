"""The ``ember`` command.

``ember info``  — the installed backends: devices, availability (and why not), kernel counts, and
                  the devices a backend saw but left out (with the reason). A table in a
                  terminal, plain ``key: value`` lines when piped, ``--json`` for programs.
                  ``ember info --op NAME``: one op's facets and kernels, with where each is;
                  NAME may be a registry op (``nll_loss_forward``) or a public name
                  (``F.cross_entropy``, ``conv2d``, ``Tensor.add_``), which lists the ops it
                  dispatches; a typo gets suggestions. ``ember info --missing-lowering``: by
                  family, the pointwise-shaped ops without a ``pointwise`` facet (compiled
                  graphs run them op by op) and the ops without an ``onnx`` facet (export
                  refuses them).
``ember run``   — run an unmodified PyTorch script on ember (``ember.run``).
``ember demo``  — trains a small digits classifier on every available backend and compares them.
``ember --version`` prints the version (``ember_cli``, without importing ember); ``ember`` alone
prints the help.
"""
from __future__ import annotations

import argparse
import json
import sys
from importlib.metadata import PackageNotFoundError, version

from . import _fastpath
from ._op_names import near_misses, resolve
from .demo import run
from .dispatch.describe import describe, missing_lowering
from .dispatch.dispatcher import all_ops
from .run import main as run_main
from .runtime.registry import registry
from .version import __version__


def _backends() -> list:
    """One dict per backend: name, available, reason, devices, coverage."""
    ops = all_ops().values()
    out = []
    for name in registry.names():
        reason = registry.unavailable_reason(name)
        entry = {"name": name, "available": reason is None, "reason": reason, "devices": [],
                 "coverage": None}
        out.append(entry)
        if reason is not None:
            continue
        backend = registry.get(name)
        entry["devices"] = [{"device": f"{name}:{i}", "name": backend.device_name(i)}
                            for i in range(backend.device_count())]
        native = sum(op.name in backend.kernels for op in ops)
        composite = sum(op.name not in backend.kernels and op.composite is not None
                        for op in ops)
        rest = sum(op.name not in backend.kernels and op.composite is None for op in ops)
        entry["coverage"] = {"native": native, "composite": composite,
                             "cpu_fallback": rest if backend.cpu_fallback else 0,
                             "missing": 0 if backend.cpu_fallback else rest}
    return out


def _coverage_text(coverage) -> str:
    if coverage is None:
        return "-"
    text = f"{coverage['native']} native, {coverage['composite']} composite"
    if coverage["cpu_fallback"]:
        text += f", {coverage['cpu_fallback']} on CPU fallback"
    if coverage["missing"]:
        text += f", {coverage['missing']} missing"
    return text


def _devices_text(entry) -> str:
    if not entry["available"]:
        return "-"
    return ", ".join(f"{d['device']} ({d['name']})" for d in entry["devices"]) or "none"


def _left_out_rows():
    """(backend, device, reason) for devices a loaded backend saw and did not use. A backend
    reports them through an optional ``skipped_devices()`` method (the OpenCL backend does)."""
    rows = []
    for name in registry.names():
        backend = registry.peek(name)
        skipped = getattr(backend, "skipped_devices", None)
        if skipped is None:
            continue
        try:
            rows.extend((name, device, reason) for device, reason in skipped())
        except Exception as e:  # a listing that fails is itself worth showing
            rows.append((name, "?", f"could not list left-out devices: {type(e).__name__}: {e}"))
    return rows


def _console():
    from rich.console import Console  # start-up: rich (~50 ms), only for `ember info`'s tables
    return Console()


def _rich_table(title, columns, rows, styles=None):
    """A rich table whose cells are literal text: a reason such as ``pip install
    'ember[opencl]'`` must print as written, not as markup."""
    # start-up: rich (~50 ms), only for `ember info`'s tables
    from rich.table import Table
    from rich.text import Text
    table = Table(title=title)
    for col in columns:
        table.add_column(col, overflow="fold")
    for i, row in enumerate(rows):
        table.add_row(*(Text(str(cell)) for cell in row),
                      style=(styles[i] if styles else None))
    return table


def _print_plain(title, blocks) -> None:
    """Plain text for pipes and logs: a title, then per item its name and ``key: value`` lines,
    each value on one line however long (no column wrapping)."""
    print(title)
    for name, fields in blocks:
        if name is not None:
            print(name)
        width = max((len(k) for k, _ in fields), default=0)
        for key, value in fields:
            print(f"  {key + ':':<{width + 1}} {value}")


def info(args) -> int:
    if getattr(args, "op", None):
        return op_info(args.op, as_json=getattr(args, "json", False))
    if getattr(args, "missing_lowering", False):
        return missing_lowering_info(as_json=getattr(args, "json", False))
    backends, left_out = _backends(), _left_out_rows()
    if getattr(args, "json", False):
        print(json.dumps({"version": __version__, "backends": backends,
                          "left_out": [{"backend": b, "device": d, "reason": r}
                                       for b, d, r in left_out],
                          "hot_path": _hot_path_line().split(": ", 1)[1]}, indent=2))
        return 0
    title = f"ember {__version__} — backends"
    console = _console()
    if not console.is_terminal:
        blocks = []
        for b in backends:
            fields = [("available", "yes" if b["available"] else "no")]
            if b["available"]:
                fields += [("devices", _devices_text(b)),
                           ("coverage", _coverage_text(b["coverage"]))]
            else:
                fields.append(("reason", b["reason"]))
            blocks.append((b["name"], fields))
        _print_plain(title, blocks)
        if left_out:
            print()
            _print_plain("devices left out", [(f"{b}: {d}", [("why", r)])
                                              for b, d, r in left_out])
        print(_hot_path_line())
        return 0
    rows = [(b["name"], _devices_text(b), "yes" if b["available"] else "no", b["reason"] or "",
             _coverage_text(b["coverage"])) for b in backends]
    console.print(_rich_table(title, ("backend", "devices", "available", "reason", "coverage"),
                              rows, [None if b["available"] else "red" for b in backends]))
    if left_out:
        console.print(_rich_table("devices left out", ("backend", "device", "why"), left_out))
    print(_hot_path_line())
    return 0


def _hot_path_line() -> str:
    return f"hot path (dispatch, tensors, autograd recording): {_fastpath.describe()}"


def op_info(name: str, as_json: bool = False) -> int:
    resolution = None
    if name in all_ops():
        ops = [name]
    else:
        resolution = resolve(name)
        if resolution is None:
            close = near_misses(name)
            hint = f"; did you mean: {', '.join(close)}?" if close else ""
            print(f"ember info: no op or public function named '{name}'{hint}", file=sys.stderr)
            return 2
        ops = resolution.ops
    tables = [(op, describe(op)) for op in ops]
    if as_json:
        doc = {"name": name, "ops": {op: [dict(zip(("facet", "value", "defined_at"), row))
                                          for row in rows] for op, rows in tables}}
        if resolution is not None:
            doc["public"] = {"name": resolution.name, "defined_at": resolution.defined_at,
                             "ops": resolution.ops, "found": resolution.how}
        print(json.dumps(doc, indent=2))
        return 0
    console = _console()
    plain = not console.is_terminal
    if resolution is not None:
        found = ", ".join(resolution.ops) or "none found"
        header = [("defined at", resolution.defined_at or "?"), ("ops", found),
                  ("found", resolution.how)]
        if plain:
            _print_plain(f"{name} is {resolution.name}", [(None, header)])
            print()
        else:
            console.print(_rich_table(f"{name} is {resolution.name}", ("", ""), header))
    for op, rows in tables:
        if plain:
            _print_plain(f"op {op}", [(None, [(facet, f"{value}  ({where})" if where else value)
                                              for facet, value, where in rows])])
            print()
        else:
            console.print(_rich_table(f"op {op}", ("facet", "value", "defined at"), rows))
    return 0


_MISSING_TITLES = {
    "compile": "pointwise-shaped ops without a pointwise facet: compiled graphs run them op by op",
    "export": "ops without an onnx facet: ember.onnx.export refuses them",
}


def missing_lowering_info(as_json: bool = False) -> int:
    """``ember info --missing-lowering``: the lists of ``describe.missing_lowering``."""
    missing = missing_lowering()
    if as_json:
        print(json.dumps(missing, indent=2))
        return 0
    for i, (what, families) in enumerate(missing.items()):
        if i:
            print()
        total = sum(len(ops) for ops in families.values())
        print(f"{_MISSING_TITLES[what]} ({total})")
        width = max((len(f) for f in families), default=0)
        for fam, ops in families.items():
            print(f"  {fam + ':':<{width + 1}} {', '.join(ops)}")
    return 0


def _demo(args) -> int:
    return run(args)


def _version() -> str:
    try:
        return version("ember")
    except PackageNotFoundError:  # running from a source tree that was never installed
        return __version__


DEMO_HELP = """\
Train the same small CNN on scikit-learn's bundled handwritten digits (1797 8x8 images, no
download) on every available backend in turn: same initial weights, same batches. Prints per
device the final loss, test accuracy, ms/step and whether its loss curve agrees with the first
device's (exit status 1 when one does not). Needs `pip install 'ember[demo]'` (scikit-learn)."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ember", description="ember: a PyTorch-style tensor runtime whose devices are "
        "plug-ins.", epilog="examples:\n  ember info\n  ember info --op F.cross_entropy\n"
        "  ember run --device cuda=opencl train.py\n  ember demo --backends cpu,opencl\n"
        "  ember-conformance --backend opencl   (the backend conformance suite)",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"ember {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    info_cmd = sub.add_parser("info", help="list backends, their devices (and those left out, "
                              "with why) and availability")
    info_cmd.add_argument("--op", metavar="NAME", help="describe one op: schema, meta, "
                          "derivative and other facets, and each backend's kernel, with the "
                          "file:line of each; NAME may be a public name (F.cross_entropy, "
                          "conv2d, Tensor.add_), which lists the ops it dispatches")
    info_cmd.add_argument("--missing-lowering", action="store_true", help="list, by family, the "
                          "pointwise-shaped ops that compiled graphs run op by op (no pointwise "
                          "facet) and the ops ember.onnx.export refuses (no onnx facet)")
    info_cmd.add_argument("--json", action="store_true", help="print JSON instead of a table")
    info_cmd.set_defaults(fn=info)
    sub.add_parser("run", help="run an unmodified PyTorch script on ember: ember run "
                   "[--device cuda=opencl] script.py [args] (see `ember run --help`)",
                   add_help=False)
    demo = sub.add_parser("demo", help="train a digits classifier on every available backend",
                          description=DEMO_HELP,
                          formatter_class=argparse.RawDescriptionHelpFormatter)
    demo.add_argument("--backends", default=None, help="comma-separated backend names to train "
                      "on, in order (default: every available backend that holds data)")
    demo.add_argument("--epochs", type=int, default=8, help="passes over the 1438 training "
                      "images (default: %(default)s)")
    demo.add_argument("--batch-size", type=int, default=64, help="images per SGD step "
                      "(default: %(default)s)")
    demo.add_argument("--lr", type=float, default=0.05, help="SGD learning rate, momentum 0.9 "
                      "(default: %(default)s)")
    demo.add_argument("--seed", type=int, default=0, help="seed of the weights, the "
                      "train/test split and the batch order (default: %(default)s)")
    demo.set_defaults(fn=_demo)
    return parser


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] == "run":   # everything after the script is the script's
        return run_main(argv[1:], prog="ember run")
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    return args.fn(args)


if __name__ == "__main__":
    sys.exit(main())
