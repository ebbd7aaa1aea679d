"""The progress bar of long work (verify, list --problems --all, delete, copy, VACUUM) and
of reads that take more than a second (search, usage, list: ``after``, ``waiting``).

    with progress_bar("verifying", "messages") as bar:   # None unless stderr is a terminal
        report = work(progress=bar)                         # core calls bar(done, total)

Drawn with rich on stderr, and only when stderr is a terminal: piped, redirected or in a
cron log nothing is written (core is then given no callback at all, so it does no work for
it).  The bar shows what is done of how much (``1,234/5,678 messages``), the rate and the time
left; a ``stage`` whose size is unknown (VACUUM) shows the time spent instead.  It starts at
the first report, so a question asked before the work (delete's) is never drawn over, and it
disappears when the work ends (``transient``): what the command prints stays as it was.
Reports may come from another thread (verify's scan runs in one).
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # rich.progress is imported when a bar is drawn, not before
    from rich.progress import Progress, ProgressColumn, TaskID


def stderr_is_terminal() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def _stdout_is_terminal() -> bool:
    try:
        return sys.stdout.isatty()
    except (AttributeError, ValueError):
        return False


SHOW_AFTER = 1.0  # seconds a read runs before its bar is drawn (``progress_bar(after=…)``)


class ProgressBar:
    """``bar(done, total)`` reports the work done; ``bar.stage(label)`` starts a stage of
    unknown size.  Reports in the first ``after`` seconds draw nothing (a read that ends
    sooner leaves no trace); once stopped, the bar is never drawn again.  Use through
    ``progress_bar``."""

    def __init__(self, label: str, unit: str, after: float = 0.0) -> None:
        self.label = label
        self.unit = unit
        self._lock = threading.Lock()
        self._progress: Progress | None = None
        self._task: TaskID | None = None
        self._due = time.monotonic() + after
        self._stopped = False

    def __call__(self, done: int, total: int | None = None) -> None:
        with self._lock:
            if self._stopped:
                return
            if self._progress is None or self._task is None:
                if time.monotonic() >= self._due:
                    self._start(self.label, done, total, self.unit)
            else:
                self._progress.update(self._task, completed=done, total=total)

    def stage(self, label: str) -> None:
        """From now on a stage whose size is unknown: its label and the time spent in it."""
        with self._lock:
            if self._stopped:
                return
            if self._progress is not None and self._task is not None:
                self._progress.update(self._task, visible=False)
            self._start(label, 0, None, None)

    def _start(self, label: str, done: int, total: int | None, unit: str | None) -> None:
        if self._progress is None:
            from rich.console import Console
            from rich.progress import BarColumn, Progress

            self._progress = Progress(
                "{task.description}",
                BarColumn(),
                _figures(),
                console=Console(stderr=True),
                transient=True,
                # rich sends what is written to stdout meanwhile through the bar's console,
                # stderr: right for a terminal (it prints above the bar), wrong for data piped
                # or redirected (secrets streams its findings while the bar is drawn)
                redirect_stdout=_stdout_is_terminal(),
            )
            self._progress.start()
        self._task = self._progress.add_task(label, completed=done, total=total, unit=unit)

    def stop(self) -> None:
        with self._lock:
            self._stopped = True
            if self._progress is not None:
                self._progress.stop()


def _clock(seconds: float) -> str:
    whole = int(seconds)
    return f"{whole // 3600}:{whole // 60 % 60:02d}:{whole % 60:02d}"


def _figures() -> ProgressColumn:
    """``1,234/5,678 messages, 12,345/s, 0:00:12 left`` (rate and time left once rich has a
    rate); for a stage of unknown size the time spent in it."""
    from rich.progress import ProgressColumn, Task
    from rich.text import Text

    class Figures(ProgressColumn):
        def render(self, task: Task) -> Text:
            unit = task.fields.get("unit")
            if unit is None:
                return Text(_clock(task.elapsed or 0), style="progress.elapsed")
            total = "?" if task.total is None else f"{task.total:,.0f}"
            figures = f"{task.completed:,.0f}/{total} {unit}"
            if task.speed:
                figures += f", {task.speed:,.0f}/s"
                if task.time_remaining is not None:
                    figures += f", {_clock(task.time_remaining)} left"
            return Text(figures, style="progress.download")

    return Figures()


@contextlib.contextmanager
def progress_bar(label: str, unit: str, *, after: float = 0.0) -> Iterator[ProgressBar | None]:
    """A ``ProgressBar`` drawn on stderr when it is a terminal (from the first report after
    ``after`` seconds); otherwise ``None`` (no callback: nothing is drawn and core skips its
    reports)."""
    if not stderr_is_terminal():
        yield None
        return
    bar = ProgressBar(label, unit, after)
    try:
        yield bar
    finally:
        bar.stop()


@contextlib.contextmanager
def waiting(label: str, *, after: float | None = None) -> Iterator[None]:
    """A read of unknown size (one SQL statement: usage's sums, a listing sorted by tokens):
    on a terminal, once it has run ``after`` seconds (``SHOW_AFTER``), its label and the time
    spent, until it ends; nothing for a read that ends sooner, or off a terminal."""
    delay = SHOW_AFTER if after is None else after
    with progress_bar(label, "", after=delay) as bar:
        if bar is None:
            yield
            return
        if delay <= 0:
            bar.stage(label)
        timer = threading.Timer(delay, bar.stage, (label,))
        timer.daemon = True
        if delay > 0:
            timer.start()
        try:
            yield
        finally:
            timer.cancel()
