"""``ember-conformance --backend B [--ops PATTERN] [--report r.html] [--json o.json]
[--junit o.xml]``: run the suite, print a summary, exit non-zero on any failure."""
from __future__ import annotations

import argparse
import sys


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="ember-conformance", description=__doc__)
    parser.add_argument("--backend", required=True, help="device type (or type:index) to check")
    parser.add_argument("--ops", default=None,
                        help="comma-separated glob patterns of op entries (default: all)")
    parser.add_argument("--suites", default=None,
                        help="comma-separated contract suites (default: all)")
    parser.add_argument("--no-contracts", action="store_true", help="op checks only")
    parser.add_argument("--report", help="write an HTML report here")
    parser.add_argument("--json", help="write JSON results here")
    parser.add_argument("--junit", help="write JUnit XML here")
    args = parser.parse_args(argv)

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    from . import report
    from .runner import plan, run
    suites = None if args.suites is None else [s.strip() for s in args.suites.split(",")]
    infos, cases = plan(args.ops, suites)
    total = sum(len(i.dtypes) for i in infos) + (0 if args.no_contracts else len(cases)) + 1
    with Progress(TextColumn("[bold]{task.description:<28}"), BarColumn(), MofNCompleteColumn(),
                  transient=True) as bar:
        task = bar.add_task(args.backend, total=total)
        results = run(args.backend, args.ops, suites=suites,
                      include_contracts=not args.no_contracts,
                      progress=lambda n=1, desc="": bar.update(task, advance=n,
                                                               description=desc[:28]))
    report.print_summary(results, args.backend)
    if args.report:
        report.write_html(results, args.report, args.backend)
    if args.json:
        report.write_json(results, args.json, args.backend)
    if args.junit:
        report.write_junit(results, args.junit, args.backend)
    return 1 if any(r.status == "fail" for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
