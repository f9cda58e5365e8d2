"""``ember.utils.progress``: progress of long work, readable in a terminal and in a log.

ember's own long-running tools use it (``ember demo``, the examples, ``ember-conformance``, the
benchmarks); it is not part of torch's API. In a terminal it is a rich progress display (a bar
per task, the count, elapsed time and a note such as the current loss); when the output is not
a terminal (a pipe, CI, a log file) it prints a plain line per task every ``interval`` seconds
and when the task ends, so a piped run is never silent for long::

    with Progress("training") as progress:
        task = progress.task("cpu:0", total=184)
        for step in range(184):
            ...
            task.advance(note=f"loss {loss:.3f}")

Progress goes to stderr (results on stdout stay clean). ``EMBER_PROGRESS=plain`` or ``rich``
forces a style, ``off`` silences it; ``EMBER_PROGRESS_INTERVAL`` sets the seconds between plain
lines (default 5).
"""
from __future__ import annotations

import os
import sys
import time

__all__ = ["Progress", "Task", "style"]


def style(stream=None) -> str:
    """``rich``, ``plain`` or ``off`` for ``stream`` (default stderr): the environment's choice,
    else rich on a terminal and plain otherwise."""
    forced = os.environ.get("EMBER_PROGRESS", "").strip().lower()
    if forced in ("rich", "plain", "off"):
        return forced
    stream = sys.stderr if stream is None else stream
    isatty = getattr(stream, "isatty", None)
    return "rich" if isatty is not None and isatty() else "plain"


def _interval() -> float:
    try:
        return float(os.environ.get("EMBER_PROGRESS_INTERVAL", "5"))
    except ValueError:
        return 5.0


def _clock(seconds: float) -> str:
    m, s = divmod(int(seconds), 60)
    return f"{m}:{s:02d}"


class Task:
    """One line of work with a known (or unknown: None) total."""

    def __init__(self, progress, description, total, periodic_only=False):
        self._progress, self.description, self.total = progress, description, total
        self.periodic_only = periodic_only
        self.completed, self.note = 0, ""
        self._start = self._last = time.monotonic()
        self._id = None
        self._done = False

    def advance(self, n: int = 1, note: str | None = None) -> None:
        """Count ``n`` more units done; ``note`` replaces the task's note (a loss, a name)."""
        self.completed += n
        if note is not None:
            self.note = note
        self._progress._update(self)

    def done(self, note: str | None = None) -> None:
        """Mark the task finished (the plain style prints its final line)."""
        if note is not None:
            self.note = note
        if not self._done:
            self._done = True
            self._progress._finish(self)

    def line(self) -> str:
        elapsed = time.monotonic() - self._start
        count = f"{self.completed}/{self.total}" if self.total else f"{self.completed}"
        pct = f" ({100 * self.completed / self.total:.0f}%)" if self.total else ""
        note = f"  {self.note}" if self.note else ""
        return f"{self._progress.title}{self.description}: {count}{pct}{note}  [{_clock(elapsed)}]"


class Progress:
    """A progress display for a group of tasks; use as a context manager."""

    def __init__(self, title: str = "", *, stream=None, interval: float | None = None,
                 mode: str | None = None):
        self.stream = sys.stderr if stream is None else stream
        self.mode = mode or style(self.stream)
        self.title = f"[{title}] " if title else ""
        self.interval = _interval() if interval is None else interval
        self._rich = None
        self.tasks: list = []

    def __enter__(self):
        if self.mode == "rich":
            # start-up: rich (~100 ms), terminal displays only
            from rich.console import Console
            from rich.progress import (BarColumn, MofNCompleteColumn, TextColumn,
                                       TimeElapsedColumn)
            from rich.progress import Progress as RichProgress
            self._rich = RichProgress(TextColumn("{task.description}"), BarColumn(),
                                      MofNCompleteColumn(), TimeElapsedColumn(),
                                      TextColumn("{task.fields[note]}"),
                                      console=Console(file=self.stream), transient=False)
            self._rich.__enter__()
        return self

    def __exit__(self, *exc):
        for task in self.tasks:
            if not task._done and exc[0] is None:
                task.done()
        if self._rich is not None:
            self._rich.__exit__(*exc)
            self._rich = None
        return False

    def task(self, description: str, total: int | None = None, *,
             periodic_only: bool = False) -> Task:
        """A new task; in the plain style its first line is printed at once and its last when
        it is done, unless ``periodic_only`` (many short tasks: only work that lasts longer
        than the interval shows)."""
        task = Task(self, description, total, periodic_only)
        self.tasks.append(task)
        if self._rich is not None:
            from rich.markup import escape  # start-up: rich (~100 ms), terminal displays only
            task._id = self._rich.add_task(escape(description), total=total, note="")
        elif self.mode == "plain" and not periodic_only:
            self._print(task.line())
        return task

    def _print(self, text: str) -> None:
        print(text, file=self.stream, flush=True)

    def _update(self, task: Task) -> None:
        if self._rich is not None:
            from rich.markup import escape  # start-up: rich (~100 ms), terminal displays only
            self._rich.update(task._id, completed=task.completed, note=escape(task.note))
        elif self.mode == "plain":
            now = time.monotonic()
            if now - task._last >= self.interval:
                task._last = now
                self._print(task.line())

    def _finish(self, task: Task) -> None:
        if self._rich is not None:
            from rich.markup import escape  # start-up: rich (~100 ms), terminal displays only
            self._rich.update(task._id, completed=task.completed, note=escape(task.note))
        elif self.mode == "plain" and not task.periodic_only:
            self._print(task.line() + " done")

    def print(self, text: str) -> None:
        """A message above the display (a plain line when piped)."""
        if self._rich is not None:
            from rich.text import Text  # start-up: rich (~100 ms), terminal displays only
            self._rich.console.print(Text(text))
        elif self.mode != "off":
            self._print(text)
