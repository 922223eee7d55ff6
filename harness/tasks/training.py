"""A training's objective at fixed fractions of its budget, kept in the cell's row as a curve, so that the page shows
each method's training and ``harness audit`` can tell a training that stopped on its plateau from one cut short.

A module of its own, as :mod:`harness.tasks.evaluation` is: a cell's key includes a fingerprint of the
``harness.tasks`` modules its task imports, so only the tasks that record a training depend on this one.

Use::

    log = TrainingLog("train_loss", budget=steps)   # the catalogue declares train_loss with role training-objective
    for step in range(steps):
        loss = ...
        log.record(step, loss)                       # kept at 10 fixed fractions of the budget (and at the end)
    return Evaluation({..., "train_loss": log.final}, curves={**log.curves()})

The catalogue declares the objective as a metric with ``"role": "training-objective"`` and a ``"tolerance"`` (in the
objective's units): the audit calls a training *unconverged* when the last fifth of the budget still improves the
objective by more than the tolerance, or when it ends no better than the metric's chance level (the task's
:meth:`~harness.tasks.base.Task.chance`: the prior's likelihood, chance accuracy).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

from harness.tasks.evaluation import Curve

TRAINING_POINTS = 10  # the fractions of the budget kept: 1/10, 2/10, ..., 1
LAST_FIFTH = 0.8  # the audit's reading: the gain from 80% of the budget to its end


@dataclass
class TrainingLog:
    """The objective ``name`` of a training of ``budget`` steps (0 … budget − 1), kept at ``points`` fixed fractions.

    :meth:`record` takes every step's value and keeps those at the fractions (the step where the fraction is
    reached, so 10 points of a 1000-step budget are steps 99, 199, …, 999); a value recorded at a step that is not
    kept costs nothing."""

    name: str
    budget: int
    points: int = TRAINING_POINTS
    x_label: str = "fraction of the training budget"
    kept: dict[float, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.budget < 1 or self.points < 1:
            raise ValueError(f"training log {self.name!r}: budget {self.budget} and points {self.points}; both ≥ 1")
        # the step at which i/points of the budget is spent, kept at the share of the budget spent by then
        steps = {max(0, -(-i * self.budget // self.points) - 1) for i in range(1, self.points + 1)}
        self._due = {step: (step + 1) / self.budget for step in sorted(steps)}

    def due(self, step: int) -> bool:
        """Whether ``step``'s value is kept (a caller whose objective costs something to compute asks first)."""
        return step in self._due

    def record(self, step: int, value: float) -> None:
        if step in self._due:
            self.kept[self._due[step]] = float(value)

    @property
    def final(self) -> float:
        """The objective at the end of the budget (the last value kept)."""
        if not self.kept:
            raise ValueError(f"training log {self.name!r}: nothing recorded")
        return self.kept[max(self.kept)]

    def curves(self) -> dict[str, Curve]:
        """``{name: Curve}`` for :class:`~harness.tasks.evaluation.Evaluation`: x the fraction of the budget spent."""
        x = sorted(self.kept)
        return {self.name: Curve(x, [self.kept[f] for f in x], x_label=self.x_label, y_label=self.name)}


def train_to_plateau(step: Callable[[], object], value: Callable[[], float], *, every: int, min_steps: int,
                     max_steps: int, tolerance: float, name: str) -> TrainingLog:
    """Run ``step`` until the objective ``value`` (higher is better) stops improving; its curve, budget = steps run.

    ``min_steps`` and ``max_steps`` are rounded up to multiples of ``10 × every`` (so that a tenth and the last fifth
    of any budget the rule stops at fall on a kept value); ``max_steps`` wins where it is the smaller. A value that is
    not finite raises ``FloatingPointError``.
    """
    if every < 1 or max_steps < 1:
        raise ValueError(f"train_to_plateau: every = {every}, max_steps = {max_steps}; both ≥ 1")
    chunk = 10 * every
    low, high = -(-max(min_steps, 1) // chunk) * chunk, -(-max_steps // chunk) * chunk
    values: dict[int, float] = {}
    done = 0
    while True:
        for _ in range(every):
            step()
        done += every
        current = float(value())
        if not math.isfinite(current):
            raise FloatingPointError(f"the objective {name} is {current} after {done} steps")
        values[done] = current
        if done % chunk == 0 and (done >= high or (done >= low and still_gaining(values, done) <= tolerance)):
            break
    log = TrainingLog(name, budget=done)
    for k, v in values.items():
        log.record(k - 1, v)
    return log


def still_gaining(values: dict[int, float], done: int) -> float:
    """The larger of two readings of how much the last fifth of ``done`` steps still gained: the value at the end
    against the value at 80% (the audit's reading of the curve), and the mean of the values kept in the last fifth
    against the mean of those in the fifth before (which a minibatch objective's noise cannot make look flat by a
    lucky last value)."""
    fifth = done / 5
    last = [v for k, v in values.items() if done - fifth < k <= done]
    before = [v for k, v in values.items() if done - 2 * fifth < k <= done - fifth]
    point = values[done] - values[int(round(LAST_FIFTH * done))]
    return max(point, sum(last) / len(last) - sum(before) / len(before))
