"""The ``ember`` command.

``ember info``  — the installed backends: devices, availability (and why not), kernel counts, and
                  the devices a backend saw but left out (with the reason).
                  ``ember info --op add``: one op's facets and kernels, with where each is.
``ember demo``  — trains a small digits classifier on every available backend and compares them.
``ember --version`` prints the version; ``ember`` alone prints the help.
"""
from __future__ import annotations

import argparse
import sys


def _backend_rows():
    import ember
    from .dispatch.dispatcher import all_ops
    from .runtime.registry import registry
    ops = all_ops().values()
    rows = []
    for name in registry.names():
        reason = registry.unavailable_reason(name)
        if reason is not None:
            rows.append((name, "-", "no", reason, "-"))
            continue
        backend = registry.get(name)
        count = backend.device_count()
        devices = ", ".join(f"{name}:{i} ({backend.device_name(i)})" for i in range(count))
        native = sum(op.name in backend.kernels for op in ops)
        composite = sum(op.name not in backend.kernels and op.composite is not None for op in ops)
        missing = sum(op.name not in backend.kernels and op.composite is None for op in ops)
        rest = f", {missing} on CPU fallback" if backend.cpu_fallback else f", {missing} missing"
        rows.append((name, devices or "none", "yes", "",
                     f"{native} native, {composite} composite{rest if missing else ''}"))
    return ember.__version__, rows


def _left_out_rows():
    """(backend, device, reason) for devices a loaded backend saw and did not use. A backend
    reports them through an optional ``skipped_devices()`` method (the OpenCL backend does)."""
    from .runtime.registry import registry
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


def op_info(name: str) -> int:
    from rich.console import Console
    from rich.table import Table
    from .dispatch.describe import describe
    from .dispatch.dispatcher import all_ops
    try:
        rows = describe(name)
    except KeyError:
        close = sorted(n for n in all_ops() if name in n)[:10]
        hint = f"; similar: {', '.join(close)}" if close else ""
        print(f"ember info: no op named '{name}'{hint}", file=sys.stderr)
        return 2
    table = Table(title=f"op {name}")
    for col in ("facet", "value", "defined at"):
        table.add_column(col, overflow="fold")
    for row in rows:
        table.add_row(*row)
    Console().print(table)
    return 0


def info(args) -> int:
    if getattr(args, "op", None):
        return op_info(args.op)
    from rich.console import Console
    from rich.table import Table
    version, rows = _backend_rows()
    table = Table(title=f"ember {version} — backends")
    for col in ("backend", "devices", "available", "reason", "coverage"):
        table.add_column(col, overflow="fold")
    for name, devices, ok, reason, coverage in rows:
        style = None if ok == "yes" else "red"
        table.add_row(name, devices, ok, reason, coverage, style=style)
    console = Console()
    console.print(table)
    left_out = _left_out_rows()
    if left_out:
        skipped = Table(title="devices left out")
        for col in ("backend", "device", "why"):
            skipped.add_column(col, overflow="fold")
        for row in left_out:
            skipped.add_row(*row)
        console.print(skipped)
    from . import _fastpath
    print(f"hot path (dispatch, tensors, autograd recording): {_fastpath.describe()}")
    return 0


def _demo(args) -> int:
    from .demo import run
    return run(args)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version("ember")
    except PackageNotFoundError:  # running from a source tree that was never installed
        import ember
        return ember.__version__


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="ember", description="ember: a PyTorch-style tensor runtime whose devices are "
        "plug-ins.", epilog="examples:\n  ember info\n  ember demo --backends cpu,opencl\n"
        "  ember-conformance --backend opencl   (the backend conformance suite)",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"ember {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    info_cmd = sub.add_parser("info", help="list backends, their devices (and those left out, "
                              "with why) and availability")
    info_cmd.add_argument("--op", metavar="NAME", help="describe one op: schema, meta, "
                          "derivative and other facets, and each backend's kernel, with the "
                          "file:line of each")
    info_cmd.set_defaults(fn=info)
    demo = sub.add_parser("demo", help="train a digits classifier on every available backend")
    demo.add_argument("--backends", help="comma-separated backend names (default: all available)")
    demo.add_argument("--epochs", type=int, default=8)
    demo.add_argument("--batch-size", type=int, default=64)
    demo.add_argument("--lr", type=float, default=0.05)
    demo.add_argument("--seed", type=int, default=0)
    demo.set_defaults(fn=_demo)
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    return args.fn(args)


if __name__ == "__main__":
    sys.exit(main())
