"""Progress of long work (`run`, `convert`, `data synth`): a live bar on a terminal, plain lines elsewhere.

On an interactive terminal (as rich decides: a TTY that is not TERM=dumb; TTY_COMPATIBLE and
FORCE_COLOR are honoured) a rich bar shows what is done of the total, the rate, the ETA and a
status (the best trial so far), redrawn in place; each finished unit (a trial, an input file, an
output file) is also printed above it as a line, so the terminal keeps a log. Anywhere else (CI, a
log file, a pipe) only those lines are printed, one per unit, with the same figures and no escape
code, so logs stay readable and diffable. It writes to stdout by default, beside the command's other
output: stderr keeps only the one-line error of a command that fails (`pipebench: error: ...`), even
one that fails after some units finished.
"""
from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TextIO


def eta_text(done: float, total: float | None, elapsed_sec: float) -> str:
    """Give the time left at the rate so far ("ETA 3.2 min"), or "" when it cannot be told yet."""
    if not total or done <= 0 or elapsed_sec <= 0 or done >= total:
        return ""
    left = elapsed_sec / done * (total - done)
    return f"ETA {left / 60:.1f} min" if left >= 60 else f"ETA {left:.0f} s"


class Progress:
    """One piece of long work: `advance()` as it goes, `unit_done(line)` per finished unit; a context manager.

    `total` is in `unit`s (rows, trials, bytes) and may be None when unknown; `count` formats the
    done / total figures (bytes as MiB, say). `already` counts work done before (a resumed run).
    """

    def __init__(self, what: str, total: float | None, unit: str, stream: TextIO | None = None,
                 clock: Callable[[], float] = time.monotonic, already: float = 0,
                 count: Callable[[float], str] = lambda n: f"{n:,.0f}") -> None:
        from rich.console import Console

        self.what, self.total, self.unit, self.count, self.clock = what, total, unit, count, clock
        self.done, self.already, self.started = already, already, clock()
        self.status = ""
        self.console = Console(file=stream if stream is not None else sys.stdout, highlight=False,
                               soft_wrap=True)
        self.live = self.console.is_interactive
        self._bar = None
        self._task = None

    def __enter__(self) -> Progress:
        if self.live:
            from rich.progress import BarColumn, Progress as Bar, TextColumn, TimeElapsedColumn

            self._bar = Bar(TextColumn("[bold]{task.description}"), BarColumn(), TextColumn("{task.fields[done]}"),
                            TextColumn("{task.fields[rate]}"), TimeElapsedColumn(), TextColumn("{task.fields[eta]}"),
                            TextColumn("{task.fields[status]}"), console=self.console, refresh_per_second=4)
            self._bar.start()
            self._task = self._bar.add_task(self.what, total=self.total, completed=self.done, done=self.done_text(),
                                            rate="", eta="", status="")
        return self

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.stop()  # leaves the last state on screen: the log above it ends with the whole picture

    def rate_text(self) -> str:
        """Give the rate of this process's work so far ("12,345 rows/s"; trials per minute), or ""."""
        elapsed = self.clock() - self.started
        ran = self.done - self.already
        if elapsed <= 0 or ran <= 0:
            return ""
        per_sec = ran / elapsed
        if per_sec < 1:
            return f"{per_sec * 60:,.2f} {self.unit}/min"
        return f"{self.count(per_sec)} {self.unit}/s"

    def eta(self) -> str:
        """Give the ETA of the rest at this process's rate, or ""."""
        if self.total is None:
            return ""
        return eta_text(self.done - self.already, self.total - self.already, self.clock() - self.started)

    def advance(self, amount: float, status: str | None = None) -> None:
        """Count `amount` more done; `status` (when given) replaces the status shown beside the bar."""
        self.done += amount
        if status is not None:
            self.status = status
        if self._bar is not None:
            self._bar.update(self._task, total=self.total, completed=self.done, done=self.done_text(),
                             rate=self.rate_text(), eta=self.eta(), status=self.status)

    def done_text(self) -> str:
        """Give "done/total unit" ("?" for a total not known, or passed)."""
        total = self.count(self.total) if self.total is not None and self.total >= self.done else "?"
        return f"{self.count(self.done)}/{total} {self.unit}"

    def unit_done(self, line: str) -> None:
        """Print one finished unit's line (above the bar on a terminal), followed by the rate and ETA."""
        figures = ", ".join(part for part in (self.rate_text(), self.eta()) if part)
        self.console.print(f"{line} | {figures}" if figures else line, markup=False, highlight=False)
