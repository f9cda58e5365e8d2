"""What a run checks: the backend, op entries, dtypes, suites and sample chosen on the command
line, validated up front (a typo is a one-line error, never an empty green run), and the command
line that reproduces one result."""
from __future__ import annotations

import fnmatch
import shlex
from dataclasses import dataclass, field

import ember

from . import contracts
from .opdb import all_opinfos

# suites run per op entry; "gradcheck" and "gradgradcheck" check the CPU reference itself
OP_SUITES = ("forward", "gradient")
FD_SUITES = ("gradcheck", "gradgradcheck")
# ember.func suites, one row per op entry: vmap against a loop, jvp against finite differences
FUNC_SUITES = ("vmap", "jvp")
ROW_SUITES = FD_SUITES + FUNC_SUITES
COVERAGE = "coverage"

SUITE_HELP = {
    "forward": "each op's outputs on every sample against the CPU reference",
    "gradient": "each op's gradients (vector-Jacobian products) against the CPU's",
    "gradcheck": "cpu only: first derivatives against finite differences (float64)",
    "gradgradcheck": "cpu only: second derivatives (double backward) against finite "
                     "differences (float64)",
    "vmap": "each op entry under ember.func.vmap (in_dims 0, 1 and None mixes) against a loop "
            "over the batch; lists the ops that ran on the vmap fallback",
    "jvp": "forward-mode AD (ember.func.jvp): cpu against finite differences (float64), other "
           "backends against the cpu",
    COVERAGE: "every registry op has a conformance entry",
    "device": "the ember.<backend> device module and device strings",
    "copies": "host <-> device and device <-> device copies, every dtype, non-contiguous",
    "allocator": "memory statistics and the caching allocator",
    "streams": "streams, events, timing and cross-stream ordering",
    "rng": "seeding reproduces; uniform and normal distributions",
    "views": "views share storage and version counters",
    "errors": "device-mismatch and unsupported-dtype messages",
}


class SelectionError(ValueError):
    """A command-line choice that selects nothing or names something unknown (one line)."""


def all_suites() -> list:
    return list(OP_SUITES + ROW_SUITES) + [COVERAGE] + list(contracts.SUITES)


@dataclass
class Selection:
    backend: str                          # as given: "opencl" or "opencl:1"
    device: object                        # the ember.device checked
    infos: list                           # op entries
    dtypes: tuple | None = None           # None: each entry's own dtypes
    sample: int | None = None             # None: every sample
    op_suites: tuple = OP_SUITES + ROW_SUITES
    cases: list = field(default_factory=list)   # (suite, case function)
    coverage: bool = True

    def entry_dtypes(self, info) -> tuple:
        return tuple(d for d in info.dtypes if self.dtypes is None or d in self.dtypes)

    @property
    def runs_finite_differences(self) -> bool:
        """gradcheck/gradgradcheck rows: the CPU's float64 derivatives, when selected."""
        return self.device.type == "cpu" and any(s in self.op_suites for s in FD_SUITES) and \
            (self.dtypes is None or "float64" in self.dtypes)


def resolve_device(backend: str):
    """The ember.device for ``backend`` ("name" or "name:index"), or a SelectionError that says
    why not: unknown name (with the installed ones), unavailable (with the backend's reason),
    or an index past its device count."""
    from ember.runtime.registry import registry
    name, _, index = backend.partition(":")
    if not registry.is_known(name):
        raise SelectionError(f"unknown backend '{name}'; installed: {', '.join(registry.names())}"
                             f" (a backend is a package registering the 'ember.backends' entry "
                             f"point)")
    reason = registry.unavailable_reason(name)
    if reason is not None:
        raise SelectionError(f"backend '{name}' is not available: {reason}")
    try:
        device = ember.device(backend) if index else ember._device.as_device(name)
    except (RuntimeError, ValueError) as e:
        raise SelectionError(f"--backend {backend}: {e}") from None
    count = registry.get(name).device_count()
    if device.index is not None and not 0 <= device.index < count:
        raise SelectionError(f"--backend {backend}: backend '{name}' has {count} device(s)")
    return device


def _split(text):
    return [p.strip() for p in text.split(",") if p.strip()] if text else []


def match_entries(patterns, infos) -> list:
    """Entries named by any pattern: an exact name (names may hold spaces or brackets) or a
    shell-style glob; a pattern that matches nothing is an error."""
    chosen = []
    for pattern in patterns:
        hits = [i for i in infos if i.name == pattern] or \
            [i for i in infos if fnmatch.fnmatchcase(i.name, pattern)]
        if not hits:
            raise SelectionError(f"--ops: '{pattern}' matches no op entry (ember-conformance "
                                 f"--list shows them)")
        chosen.extend(i for i in hits if i not in chosen)
    return chosen


def select(backend: str, ops=None, dtypes=None, suites=None, sample=None,
           no_contracts=False) -> Selection:
    """Validate the command line's choices into a Selection (or raise SelectionError)."""
    device = resolve_device(backend)
    infos = all_opinfos()
    patterns = _split(ops)
    if ops is not None and not patterns:
        raise SelectionError("--ops is empty")
    if patterns:
        infos = match_entries(patterns, infos)

    known = all_suites()
    op_suites, coverage = OP_SUITES + ROW_SUITES, True
    cases = [(s, fn) for s, fns in contracts.SUITES.items() for fn in fns]
    if suites is not None:
        wanted = _split(suites)
        if not wanted:
            raise SelectionError("--suites is empty")
        unknown = [w for w in wanted if w.split(".")[0] not in known]
        if unknown:
            raise SelectionError(f"--suites: unknown suite {unknown[0]!r}; suites: "
                                 f"{', '.join(known)}")
        if set(wanted) <= set(FD_SUITES) and device.type != "cpu":
            raise SelectionError(f"--suites {suites}: gradcheck and gradgradcheck check the CPU "
                                 f"reference's derivatives; run them with --backend cpu")
        op_suites = tuple(s for s in OP_SUITES + ROW_SUITES if s in wanted)
        coverage = COVERAGE in wanted
        cases = _contract_cases(wanted)
    if no_contracts:
        cases = []
    if not op_suites:
        infos = []

    chosen_dtypes = None
    if dtypes is not None:
        chosen_dtypes = tuple(_split(dtypes))
        for d in chosen_dtypes:
            if not isinstance(getattr(ember, d, None), ember.dtype):
                raise SelectionError(f"--dtypes: unknown dtype '{d}'")
        if infos and not any(d in chosen_dtypes for i in infos for d in i.dtypes):
            raise SelectionError(f"--dtypes {dtypes}: none of the selected op entries runs at "
                                 f"{'that dtype' if len(chosen_dtypes) == 1 else 'those dtypes'}")
    selection = Selection(backend, device, infos, chosen_dtypes, sample, op_suites, cases,
                          coverage)
    if sample is not None:
        if sample < 0:
            raise SelectionError(f"--sample {sample}: sample indices start at 0")
        if infos and not any(sample < sum(1 for _ in i.samples(d))
                             for i in infos for d in selection.entry_dtypes(i)):
            raise SelectionError(f"--sample {sample}: no selected op entry has that many "
                                 f"samples")
    if not (infos or cases or coverage):
        raise SelectionError("nothing selected: the choices leave no op entry, contract case "
                             "or coverage check to run")
    return selection


def _contract_cases(wanted) -> list:
    """(suite, case) for each "suite" (all its cases) or "suite.case" (that one) in wanted."""
    cases = []
    for suite, fns in contracts.SUITES.items():
        named = {w.split(".", 1)[1] for w in wanted if w.startswith(suite + ".")}
        for name in named - {fn.__name__ for fn in fns}:
            raise SelectionError(f"--suites: suite '{suite}' has no case '{name}'; its cases: "
                                 f"{', '.join(fn.__name__ for fn in fns)}")
        if suite in wanted or named:
            cases += [(suite, fn) for fn in fns if suite in wanted or fn.__name__ in named]
    return cases


def repro_command(backend: str, result) -> str:
    """The one command line that runs exactly the check behind ``result`` again."""
    words = ["ember-conformance", "--backend", backend]
    if result.suite in OP_SUITES + ROW_SUITES:
        words += ["--ops", result.name]
        if result.dtype != "-" and result.suite in OP_SUITES + ("vmap",):
            words += ["--dtypes", result.dtype]
        if result.sample_index is not None:
            words += ["--sample", str(result.sample_index)]
        words += ["--suites", result.suite]
    elif result.suite == COVERAGE:
        words += ["--suites", COVERAGE]
    else:
        words += ["--suites", f"{result.suite}.{result.name}"]
    return shlex.join(words)
