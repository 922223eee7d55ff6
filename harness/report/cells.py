"""A leaderboard's row and its cells as objects: :class:`Row` (a dataset × method, and device class where a folder
spans several) and :class:`Cell` (one metric's mean and 95% interval over its seeds), for the pages that show a
table per dataset and for callers that read ``Board.tables``; the board itself holds them as arrays
(:mod:`harness.report.board_columns`).
"""
from __future__ import annotations

from dataclasses import dataclass

from harness.stats import FLOAT_NOISE

NO_DEVICE = "device not recorded"  # the class of a row without a device, where a folder spans several classes


@dataclass(slots=True)
class Cell:
    mean: float
    half_width: float | None  # of the 95% t-interval; None with one seed, 0.0 when every seed gave the same value
    n: int

    @property
    def no_spread(self) -> bool:
        """Two or more seeds, all with the same value: a mean, but no interval."""
        return self.n >= 2 and self.half_width == 0.0

    def contains(self, value: float) -> bool:
        """Whether the 95% interval holds ``value``; without one (one seed, no spread), whether the mean is ``value``."""
        slack = FLOAT_NOISE * max(1.0, abs(self.mean), abs(value))
        return abs(self.mean - value) <= (self.half_width or 0.0) + slack

    def overlaps(self, other: "Cell") -> bool:
        """Whether the two 95% intervals (a lone mean without one) share a point."""
        slack = FLOAT_NOISE * max(1.0, abs(self.mean), abs(other.mean))
        return abs(self.mean - other.mean) <= (self.half_width or 0.0) + (other.half_width or 0.0) + slack


@dataclass
class Row:
    dataset: str
    method: str
    kind: str
    metrics: dict[str, Cell]
    seeds_ok: int
    seeds_failed: int
    rank: int = 0  # 0: not ranked (no primary value, or a dataset at chance)
    devices: tuple[str, ...] = ()
    errors: tuple[str, ...] = ()
    seeds_skipped: int = 0
    skips: tuple[str, ...] = ()  # the distinct reasons its skipped seeds give
    tied: bool = False  # ranked below the best, with a 95% interval of the primary metric that overlaps the best's
    device_class: str | None = None  # set only where the folder's rows span several device classes

    @property
    def label(self) -> str:
        """The method, and its device class where the folder has several: what names the row on the page."""
        return row_label(self.method, self.device_class)


def row_label(method: str, device: str | None) -> str:
    return method if device is None else f"{method} on {device}"
