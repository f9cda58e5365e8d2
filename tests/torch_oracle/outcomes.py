"""One checked sample's outcome, how failures are classified, and pass rates per area."""
from __future__ import annotations

import contextlib
import signal
import threading
import warnings
from collections import Counter, defaultdict
from dataclasses import dataclass

from .compare import Mismatch
from .convert import MissingName, Unresolvable

PASS, FAIL, XFAIL, XPASS, SKIP = "pass", "fail", "xfail", "xpass", "skip"


@dataclass
class Outcome:
    subject: str        # OpInfo / ModuleInfo / OptimizerInfo key
    area: str           # forward, method, inplace, backward, modules, optimizers
    device: str
    dtype: str
    sample: str         # which sample (index and torch's name for it)
    status: str         # PASS / FAIL / XFAIL (known gap, listed) / XPASS (listed, but passed)
    category: str = ""  # for failures: mismatch, missing name, signature, error: <Type>
    message: str = ""

    @property
    def counted(self):
        return self.status != SKIP

    @property
    def passed(self):
        return self.status in (PASS, XPASS)


_SIGNATURE_WORDS = ("unexpected keyword", "positional argument", "got multiple values",
                    "required positional", "required keyword", "invalid combination of arguments",
                    "takes no keyword")


def classify(exc):
    """(category, message) of an exception raised while checking a sample."""
    msg = f"{type(exc).__name__}: {exc}".splitlines()[0][:300] if str(exc) else type(exc).__name__
    if isinstance(exc, Mismatch):
        return "mismatch", str(exc).splitlines()[0][:300]
    if isinstance(exc, MissingName):
        return "missing name", msg
    if isinstance(exc, Unresolvable):
        return "no public path", msg
    if isinstance(exc, TypeError) and any(w in str(exc) for w in _SIGNATURE_WORDS):
        return "signature", msg
    if isinstance(exc, AttributeError) and "ember" in str(exc) and "has no attribute" in str(exc):
        return "missing name", msg
    return f"error: {type(exc).__name__}", msg


class SampleTimeout(Exception):
    pass


@contextlib.contextmanager
def time_limit(seconds):
    """Raise SampleTimeout in the main thread after ``seconds`` (a hang is a failure, not a stall)."""
    if threading.current_thread() is not threading.main_thread() or not seconds:
        yield
        return

    def alarm(signum, frame):
        raise SampleTimeout(f"no result after {seconds} s")

    old = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


@contextlib.contextmanager
def quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def rates(outcomes):
    """{(area, device): (passed, counted)} over the counted outcomes."""
    acc = defaultdict(lambda: [0, 0])
    for o in outcomes:
        if not o.counted:
            continue
        acc[(o.area, o.device)][1] += 1
        acc[(o.area, o.device)][0] += o.passed
    return {k: tuple(v) for k, v in acc.items()}


def failure_table(outcomes, area=None, device=None):
    """Counter of (subject, category) over failing outcomes: which fix turns most samples green."""
    c = Counter()
    for o in outcomes:
        if o.status in (FAIL, XFAIL) and (area is None or o.area == area) \
                and (device is None or o.device == device):
            c[(o.subject, o.category)] += 1
    return c


def stale_rules(outcomes):
    """(subject, area) of known-gap (xfail) rules none of whose samples fails any more."""
    still = {(o.subject, o.area) for o in outcomes if o.status == XFAIL}
    return sorted({(o.subject, o.area) for o in outcomes if o.status == XPASS} - still)
