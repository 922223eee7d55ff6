"""The tables a run writes beside ``runs.jsonl``: its metrics (``metrics.json``), their chance levels
(``chance.json``) and the task's trivial answers (``trivial.json``), so that the folder's pages are built, audited
and compared without the task family that declares them.

The metric declaration itself (:class:`harness.metrics.Metric`) is a leaf module that :mod:`harness.registry`
imports; this one reads and writes the folder's files and, for a folder written before runs recorded
``metrics.json``, falls back to the registry.
"""
from __future__ import annotations

import json
from pathlib import Path

from harness.metrics import GOALS, Metric
from harness.store import write_if_changed

METRIC_TABLE = "metrics.json"
CHANCE_TABLE = "chance.json"
TRIVIAL_TABLE = "trivial.json"


def write_metric_table(folder, metrics: dict[str, Metric]) -> None:
    """``folder/metrics.json``: ``{name: {"goal", "unit", "about"}}`` of the metrics a run reports.

    Written by the run beside ``runs.jsonl``, so the folder's leaderboard can be rebuilt and
    compared in a process where the family that declares these metrics is not registered.
    """
    table = {name: metrics[name].to_dict() for name in sorted(metrics)}
    write_if_changed(Path(folder) / METRIC_TABLE, json.dumps(table, indent=1, ensure_ascii=False) + "\n")


def read_metric_table(folder) -> dict[str, Metric]:
    """The metric table a results folder was written with (``metrics.json``).

    A folder written before runs recorded it has none: then the metrics registered in this
    process stand in (:func:`harness.registry.metrics`).
    """
    path = Path(folder) / METRIC_TABLE
    if not path.exists():
        from harness.registry import metrics  # imports every task family's catalogue: only for an old folder

        return dict(metrics())
    data = json.loads(path.read_text(encoding="utf-8"))
    table = {}
    for name, row in data.items():
        if row.get("goal") not in GOALS:
            raise ValueError(f"{path}: metric {name!r} has goal {row.get('goal')!r}; expected one of {', '.join(GOALS)}")
        table[name] = Metric(name, row["goal"], row.get("unit", ""), row.get("about", ""), row.get("spread_of", ""),
                             row.get("role", ""), row.get("tolerance"))
    return table


def write_chance_table(folder, chance: dict[str, dict[str, float]]) -> None:
    """``folder/chance.json``: ``{dataset id: {metric: value at chance}}``, as the task declares it.

    Written by the run beside ``metrics.json`` (see :meth:`harness.Task.chance`); a dataset
    whose task declares no chance level has no entry.
    """
    table = {dataset: {name: float(value) for name, value in sorted(levels.items())}
             for dataset, levels in chance.items() if levels}
    write_if_changed(Path(folder) / CHANCE_TABLE, json.dumps(table, indent=1, ensure_ascii=False) + "\n")


def read_chance_table(folder) -> dict[str, dict[str, float]]:
    """The chance levels a results folder was written with; none for a folder written before runs recorded them."""
    path = Path(folder) / CHANCE_TABLE
    if not path.exists():
        return {}
    data = json.loads(path.read_text(encoding="utf-8"))
    return {dataset: {name: float(value) for name, value in levels.items()} for dataset, levels in data.items()}


def write_trivial_table(folder, task: str, trivial: list[str]) -> None:
    """``folder/trivial.json``: ``{task: [the methods its catalogue declares trivial answers]}`` (an empty list
    where it declares none), which the audit's ``missing-trivial-row`` reads instead of this process's registry."""
    write_if_changed(Path(folder) / TRIVIAL_TABLE, json.dumps({task: sorted(trivial)}, ensure_ascii=False) + "\n")


def read_trivial_table(folder, task: str) -> list[str] | None:
    """The trivial answers ``task`` declared when the folder was written; None for a folder written before runs
    recorded them (the registry then stands in)."""
    path = Path(folder) / TRIVIAL_TABLE
    if not path.exists():
        return None
    data = json.loads(path.read_text(encoding="utf-8"))
    names = data.get(task) if isinstance(data, dict) else None
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise ValueError(f"{path}: expected {{{task!r}: [method names]}}")
    return list(names)
