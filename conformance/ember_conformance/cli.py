"""The ``ember-conformance`` command: argument parsing and validation, the run, the reports."""
from __future__ import annotations

import argparse
import sys

DESCRIPTION = """\
Check that an ember backend agrees with the CPU reference: every op entry of the
conformance database at each of its dtypes, on samples of several layouts (forward values
and gradients), then the contract suites. Exits 1 when anything fails, 2 on a bad argument.

Units: a cell is one op entry at one dtype (forward and gradient together); a check is one
sample compared. Errors are stated as max abs / max rel error and as a multiple of the
allowed tolerance (atol + rtol*|expected|)."""

EXAMPLES = """\
examples:
  ember-conformance --backend opencl
  ember-conformance --backend opencl --report report.html --json run.json --junit run.xml
  ember-conformance --backend opencl --ops 'add,mul,sum*' --dtypes float32
  ember-conformance --backend opencl --ops mul --dtypes float32 --sample 3 --suites forward
  ember-conformance --backend opencl --suites streams,errors
  ember-conformance --backend opencl --suites streams.events_and_timing
  ember-conformance --list
  ember-conformance --compare old.json new.json   (exit 1 on regressions)

Each failure printed ends with a command like the fourth example that reruns exactly it."""


def _suites_text() -> str:
    from .selection import SUITE_HELP, all_suites
    return "suites (--suites; default: all):\n" + "\n".join(
        f"  {s:<14} {SUITE_HELP.get(s, '')}" for s in all_suites())


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ember-conformance", description=DESCRIPTION,
        epilog=_suites_text() + "\n\n" + EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backend", metavar="NAME[:INDEX]",
                        help="the backend (device type, or type:index) to check")
    pick = parser.add_argument_group("what to run")
    pick.add_argument("--ops", metavar="PATTERNS",
                      help="comma-separated op entry names or shell globs (default: all); "
                           "each must match something")
    pick.add_argument("--dtypes", metavar="DTYPES", help="comma-separated dtypes, e.g. float32")
    pick.add_argument("--suites", metavar="SUITES",
                      help="comma-separated suites, or suite.case for one contract case "
                           "(default: all; see below)")
    pick.add_argument("--sample", type=int, metavar="N",
                      help="only sample N (0-based, as a failure reports it) of each entry")
    pick.add_argument("--no-contracts", action="store_true",
                      help="op suites and the coverage check only")
    out = parser.add_argument_group("output")
    out.add_argument("--report", metavar="FILE.html", help="write a self-contained HTML report")
    out.add_argument("--json", metavar="FILE.json",
                     help="write every result as JSON (input of --compare)")
    out.add_argument("--junit", metavar="FILE.xml", help="write JUnit XML")
    other = parser.add_argument_group("other modes")
    other.add_argument("--list", action="store_true",
                       help="print the suites and op entries (after --ops) and exit")
    other.add_argument("--compare", nargs=2, metavar=("OLD.json", "NEW.json"),
                       help="compare two --json files; exit 1 on regressions")
    return parser


def _error(message) -> int:
    print(f"ember-conformance: error: {message}", file=sys.stderr)
    return 2


def list_everything(ops=None) -> int:
    from . import contracts
    from .opdb import all_opinfos
    from .selection import SUITE_HELP, all_suites, match_entries
    infos = all_opinfos()
    if ops:
        infos = match_entries([p.strip() for p in ops.split(",") if p.strip()], infos)
    print("suites:")
    for s in all_suites():
        print(f"  {s:<14} {SUITE_HELP.get(s, '')}")
        for fn in contracts.SUITES.get(s, ()):
            print(f"    {s}.{fn.__name__}")
    print(f"\nop entries ({len(infos)}): name — dtypes — samples at the first dtype"
          f" — differentiable")
    for info in infos:
        n = sum(1 for _ in info.samples(info.dtypes[0])) if info.dtypes else 0
        print(f"  {info.name} — {', '.join(info.dtypes)} — {n} — "
              f"{'yes' if info.differentiable else 'no'}")
    return 0


def compare_files(old, new) -> int:
    from .compare import CompareError, compare, load, print_comparison
    try:
        result = compare(load(old), load(new))
    except CompareError as e:
        return _error(e)
    print_comparison(result, old, new)
    return 1 if result.regressions else 0


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.compare:
        return compare_files(*args.compare)
    from .selection import SelectionError, select
    if args.list:
        try:
            return list_everything(args.ops)
        except SelectionError as e:
            return _error(e)
    if not args.backend:
        return _error("--backend is required (installed backends: "
                      f"{', '.join(_installed())}); see --help")
    try:
        selection = select(args.backend, args.ops, args.dtypes, args.suites, args.sample,
                           args.no_contracts)
    except SelectionError as e:
        return _error(e)
    return _run(selection, args, sys.argv[1:] if argv is None else argv)


def _installed():
    from ember.runtime.registry import registry
    return registry.names()


def _run(selection, args, argv) -> int:
    from ember.utils.progress import Progress

    from . import report
    from .environment import describe
    from .runner import execute, total_steps
    env = describe(selection.device, argv)
    # a bar in a terminal; on a pipe (CI) a line every few seconds naming the entry it is at
    with Progress("ember-conformance") as progress:
        task = progress.task(selection.backend, total=total_steps(selection))
        output = execute(selection, progress=lambda n=1, desc="": task.advance(n, note=desc))
    report.print_summary(output, env)
    if args.report:
        from .html_report import write_html
        write_html(output, env, args.report)
    if args.json:
        report.write_json(output, env, args.json)
    if args.junit:
        report.write_junit(output, env, args.junit)
    return 1 if any(r.status == "fail" for r in output.results) else 0


if __name__ == "__main__":
    sys.exit(main())
