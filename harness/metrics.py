"""A metric's declaration: its direction and unit, as a task family's catalogue states it.

Metrics are declared next to the task that reports them (the ``metrics`` section of a
family's catalogue) and collected by :mod:`harness.registry`; a run writes the table of
the metrics it reports into its results folder (:mod:`harness.metric_tables`), so a
leaderboard never needs the plugin. This module imports nothing of the harness.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

GOALS = ("max", "min")
# what a metric is to the audit (``harness audit``), where the family declares it: ``budget``, the unit of work the
# task's methods spend (two arms of a claim should spend the same); ``certificate``, a value that holds by
# construction (a claim on it is a check); ``failure-share``, the share of failed or degenerate fits in a cell;
# ``training-objective``, the objective a method trains, whose curve of the same name a row keeps
# (:class:`harness.tasks.training.TrainingLog`) and whose ``tolerance`` says how much the last fifth of the budget
# may still improve it for the training to count as converged
ROLES = ("budget", "certificate", "failure-share", "training-objective")


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
    role: str = ""  # one of ROLES, or none
    tolerance: float | None = None  # a training objective's: the improvement over the last fifth still "converged"

    @property
    def arrow(self) -> str:
        return "↑" if self.goal == "max" else "↓"

    @property
    def secondary(self) -> bool:
        """A timing or the spread of another metric: a leaderboard shows it in its second, collapsed table."""
        return self.unit == TIMING_UNIT or bool(self.spread_of)

    def to_dict(self) -> dict[str, str]:
        return {k: v for k, v in asdict(self).items()
                if k != "name" and (v or k not in ("spread_of", "role")) and (v is not None or k != "tolerance")}
