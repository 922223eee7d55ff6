"""A metric's declaration: its direction and unit, as a task family's catalogue states it.

Metrics are declared next to the task that reports them (the ``metrics`` section of a
family's catalogue) and collected by :mod:`harness.registry`; a run writes the table of
the metrics it reports into its results folder, so a leaderboard never needs the plugin.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

GOALS = ("max", "min")


@dataclass(frozen=True)
class Metric:
    name: str
    goal: str  # "max" or "min"
    unit: str
    about: str

    @property
    def arrow(self) -> str:
        return "↑" if self.goal == "max" else "↓"

    def to_dict(self) -> dict[str, str]:
        return {k: v for k, v in asdict(self).items() if k != "name"}
