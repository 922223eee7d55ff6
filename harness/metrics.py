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
    # fewshot.cdfsl
    ("accuracy_1shot", "max", "%", "5-way 1-shot accuracy on the target domain, mean over the episodes"),
    ("accuracy_5shot", "max", "%", "5-way 5-shot accuracy on the target domain, mean over the episodes"),
    ("accuracy_1shot_ci95", "min", "%", "half-width of the 95% interval of accuracy_1shot over episodes, 1.96·std/√E"),
    ("accuracy_5shot_ci95", "min", "%", "half-width of the 95% interval of accuracy_5shot over episodes, 1.96·std/√E"),
    ("source_accuracy", "max", "%", "5-way 5-shot accuracy on held-out images of the source classes"),
    ("source_target_gap", "min", "%", "source_accuracy − accuracy_5shot: how much worse the target fares than the source"),
    ("cka", "max", "", "linear CKA between source and target features (domain similarity, 1 = alike)"),
    ("train_s", "min", "s", "seconds of source-domain training (the original time when a cached model is reused)"),
    # fewshot.cdfss
    ("miou_1shot", "max", "%", "1-shot foreground IoU on the target, intersections and unions summed per class, then averaged over classes"),
    ("miou_5shot", "max", "%", "5-shot foreground IoU on the target, intersections and unions summed per class, then averaged over classes"),
    ("miou", "max", "%", "mean of miou_1shot and miou_5shot"),
)
