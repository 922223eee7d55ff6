"""Metric catalogue: every metric a task reports, with its direction and unit.

Plain data, so the CLI can validate specs and the leaderboard can draw arrows without
importing any task.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Metric:
    name: str
    goal: str  # "max" or "min"
    unit: str
    about: str

    @property
    def arrow(self) -> str:
        return "↑" if self.goal == "max" else "↓"


def _metrics(*rows: tuple[str, str, str, str]) -> dict[str, Metric]:
    return {name: Metric(name, goal, unit, about) for name, goal, unit, about in rows}


METRICS: dict[str, Metric] = _metrics(
    ("ari", "max", "", "adjusted Rand index of the returned clustering against the planted labels"),
    ("cut_ratio", "min", "", "w_G(S, S̄) / w_H(S, S̄) of the returned bipartition"),
    ("runtime_s", "min", "s", "seconds the method took per instance, mean over the cell's instances"),
    ("cost_over_opt", "min", "", "clustering cost / optimum cost, mean over the cell's instances"),
    ("worst_cost_over_opt", "min", "", "clustering cost / optimum cost, worst instance of the cell"),
    ("cost_over_lp", "min", "", "clustering cost / Constrained Cluster LP value, mean over instances"),
    ("violations", "min", "", "must-link or cannot-link pairs the clustering breaks (any is a failure)"),
)
