"""The ``ember`` command.

``ember info``  — the installed backends: devices, availability (and why not), kernel counts.
``ember demo``  — trains a small digits classifier on every available backend and compares them.
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


def info(args) -> int:
    from rich.console import Console
    from rich.table import Table
    version, rows = _backend_rows()
    table = Table(title=f"ember {version} — backends")
    for col in ("backend", "devices", "available", "reason", "coverage"):
        table.add_column(col, overflow="fold")
    for name, devices, ok, reason, coverage in rows:
        style = None if ok == "yes" else "red"
        table.add_row(name, devices, ok, reason, coverage, style=style)
    Console().print(table)
    return 0


def _demo(args) -> int:
    from .demo import run
    return run(args)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="ember", description="ember tensor runtime")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("info", help="list backends, devices and availability").set_defaults(fn=info)
    demo = sub.add_parser("demo", help="train a digits classifier on every available backend")
    demo.add_argument("--backends", help="comma-separated backend names (default: all available)")
    demo.add_argument("--epochs", type=int, default=8)
    demo.add_argument("--batch-size", type=int, default=64)
    demo.add_argument("--lr", type=float, default=0.05)
    demo.add_argument("--seed", type=int, default=0)
    demo.set_defaults(fn=_demo)
    args = parser.parse_args(argv)
    return args.fn(args)


if __name__ == "__main__":
    sys.exit(main())
