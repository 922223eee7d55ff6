"""A metric's declaration: its direction and unit, as a task family's catalogue states it.

Metrics are declared next to the task that reports them (the ``metrics`` section of a
family's catalogue) and collected by :mod:`harness.registry`; a run writes the table of
the metrics it reports into its results folder, so a leaderboard never needs the plugin.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

GOALS = ("max", "min")


TIMING_UNIT = "s"
# units of metrics read off a clock: seconds, their log (a paired difference is a log speed-up) and
# rates per second. They carry wall time's noise between runs and machines: regress never
# compares them unless told (a timing's leaderboard column is the plain "s" one)
WALL_CLOCK_UNITS = (TIMING_UNIT, "ln s", "1/s")


@dataclass(frozen=True)
class Metric:
    name: str
    goal: str  # "max" or "min"
    unit: str
    about: str
    spread_of: str = ""  # the metric whose spread this one measures (a per-cell interval's half-width), if any

    @property
    def arrow(self) -> str:
        return "↑" if self.goal == "max" else "↓"

    @property
    def secondary(self) -> bool:
        """A timing or the spread of another metric: a leaderboard shows it in its second, collapsed table."""
        return self.unit == TIMING_UNIT or bool(self.spread_of)

    def to_dict(self) -> dict[str, str]:
        return {k: v for k, v in asdict(self).items() if k != "name" and (v or k != "spread_of")}


METRIC_TABLE = "metrics.json"
CHANCE_TABLE = "chance.json"


def write_metric_table(folder, metrics: dict[str, Metric]) -> None:
    """``folder/metrics.json``: ``{name: {"goal", "unit", "about"}}`` of the metrics a run reports.

    Written by the run beside ``runs.jsonl``, so the folder's leaderboard can be rebuilt and
    compared in a process where the family that declares these metrics is not registered.
    """
    import json
    from pathlib import Path

    from harness.store import write_atomic

    table = {name: metrics[name].to_dict() for name in sorted(metrics)}
    write_atomic(Path(folder) / METRIC_TABLE, json.dumps(table, indent=1, ensure_ascii=False) + "\n")


def read_metric_table(folder) -> dict[str, Metric]:
    """The metric table a results folder was written with (``metrics.json``).

    A folder written before runs recorded it has none: then the metrics registered in this
    process stand in (:func:`harness.registry.metrics`).
    """
    import json
    from pathlib import Path

    path = Path(folder) / METRIC_TABLE
    if not path.exists():
        from harness.registry import metrics

        return dict(metrics())
    data = json.loads(path.read_text(encoding="utf-8"))
    table = {}
    for name, row in data.items():
        if row.get("goal") not in GOALS:
            raise ValueError(f"{path}: metric {name!r} has goal {row.get('goal')!r}; expected one of {', '.join(GOALS)}")
        table[name] = Metric(name, row["goal"], row.get("unit", ""), row.get("about", ""), row.get("spread_of", ""))
    return table


def write_chance_table(folder, chance: dict[str, dict[str, float]]) -> None:
    """``folder/chance.json``: ``{dataset id: {metric: value at chance}}``, as the task declares it.

    Written by the run beside ``metrics.json`` (see :meth:`harness.Task.chance`); a dataset
    whose task declares no chance level has no entry.
    """
    import json
    from pathlib import Path

    from harness.store import write_atomic

    table = {dataset: {name: float(value) for name, value in sorted(levels.items())}
             for dataset, levels in chance.items() if levels}
    write_atomic(Path(folder) / CHANCE_TABLE, json.dumps(table, indent=1, ensure_ascii=False) + "\n")


def read_chance_table(folder) -> dict[str, dict[str, float]]:
    """The chance levels a results folder was written with; none for a folder written before runs recorded them."""
    import json
    from pathlib import Path

    path = Path(folder) / CHANCE_TABLE
    if not path.exists():
        return {}
    data = json.loads(path.read_text(encoding="utf-8"))
    return {dataset: {name: float(value) for name, value in levels.items()} for dataset, levels in data.items()}
