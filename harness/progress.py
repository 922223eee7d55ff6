"""What a run shows while it works, on stderr.

On a terminal: a rich bar (cells done / total, elapsed) followed by the cells running now
and for how long. Anywhere else (a file, a pipe, a CI log), where a bar would print nothing
until the end: one plain line per finished cell, and a line naming the running cells when
nothing finished for :data:`QUIET_S` seconds, so a log never goes silent for minutes.
"""
from __future__ import annotations

import sys
import time
from typing import TextIO

QUIET_S = 60.0  # plain output: name the running cells after this long without a line
SHOWN_RUNNING = 3  # cells named on the bar; more are counted


def _seconds(elapsed: float) -> str:
    return f"{elapsed:.0f} s" if elapsed < 120 else f"{elapsed / 60:.0f} min"


def running_text(running: list[tuple[str, float]], now: float) -> str:
    """``label (12 s), label (3 s) and 2 more``, longest-running first."""
    ordered = sorted(running, key=lambda item: item[1])
    shown = ", ".join(f"{label} ({_seconds(now - started)})" for label, started in ordered[:SHOWN_RUNNING])
    more = len(ordered) - SHOWN_RUNNING
    return shown + (f" and {more} more" if more > 0 else "")


class Progress:
    """Progress of one spec's run: ``add`` planned cells, ``finished`` each, ``running`` now and then."""

    def __init__(self, enabled: bool, label: str, stream: TextIO | None = None):
        self.enabled = enabled
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        self.total = 0
        self.done = 0
        self._bar = None
        self._task = None
        self._last_line = time.monotonic()

    @property
    def plain(self) -> bool:
        return self.enabled and self._bar is None

    def __enter__(self) -> "Progress":
        if self.enabled and self.stream.isatty():
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress as Bar, TextColumn, TimeElapsedColumn

            self._bar = Bar(
                TextColumn(f"[bold]{self.label}[/bold]"), BarColumn(), MofNCompleteColumn(),
                TimeElapsedColumn(), TextColumn("{task.description}"),
                console=Console(file=self.stream), transient=False,
            )
            self._bar.start()
            self._task = self._bar.add_task("", total=0)
        return self

    def add(self, n: int) -> None:
        self.total += n
        if self._bar:
            self._bar.update(self._task, total=self.total)

    def finished(self, label: str, status: str | None = None, wall_s: float | None = None) -> None:
        """One cell ended; ``status`` None for a cell counted without running (done earlier)."""
        self.done += 1
        if self._bar:
            self._bar.advance(self._task)
        elif self.plain and status is not None:
            took = f" in {wall_s:.1f} s" if wall_s is not None else ""
            self._line(f"[{self.done}/{self.total}] {label}: {status}{took}")

    def skip(self, n: int) -> None:
        """``n`` cells of the total ended without running (done earlier)."""
        self.done += n
        if self._bar and n:
            self._bar.advance(self._task, n)

    def running(self, cells: list[tuple[str, float]]) -> None:
        """The cells running now, as (label, start in ``time.monotonic()`` seconds)."""
        now = time.monotonic()
        if self._bar:
            self._bar.update(self._task, description=f"running {running_text(cells, now)}" if cells else "")
        elif self.plain and cells and now - self._last_line >= QUIET_S:
            self._line(f"[{self.done}/{self.total}] running {running_text(cells, now)}")

    def _line(self, text: str) -> None:
        print(f"{self.label}: {text}", file=self.stream, flush=True)
        self._last_line = time.monotonic()

    def __exit__(self, *exc) -> None:
        if self._bar:
            self._bar.update(self._task, description="")
            self._bar.stop()
