"""Training to the plateau, the rule every method of ``gp.regression`` and the task's own exact reference train by.

A training runs in steps (one Adam step, or one L-BFGS iteration with its line search) and keeps the
objective on the whole training set, per training point, after every ``every`` steps. At each multiple of
``10 × every`` steps (from ``min_steps`` on) it stops when the last fifth of the steps run so far improved
the objective by no more than ``tolerance`` (nats per training point), both from its value at 80% to its last
value and from the mean of the fifth before to the mean of the last fifth, or at ``max_steps``: the rule
``harness audit``'s ``unconverged`` reads back from the curve, at the tolerance the catalogue declares for
the metric ``bound`` (role training-objective). The curve is a :class:`harness.tasks.training.TrainingLog`
whose budget is the number of steps run: its 10 points are the objective after 1/10, 2/10, …, all of them.

Torch-free: the caller hands in ``step`` and ``value``.
"""
from __future__ import annotations

import math
from typing import Callable

from harness.tasks.training import TrainingLog

TOLERANCE = 1e-3
"""Nats per training point: the most the last fifth of a training may still improve its objective (the bounds here
are −1.5 to +0.5 nats per point, so 0.1% or more of the objective, and about a fortieth of the trained bounds' gap the
claims read). The catalogue declares the same number for ``bound``; a test keeps them equal."""

LAST_FIFTH = 0.8
LBFGS_EVERY = 5  # L-BFGS (full-batch objectives): the value kept every 5 iterations, the rule looked at every 50
LBFGS_MIN_STEPS = 50
ADAM_EVERY = 25  # Adam (minibatch objectives): the full bound kept every 25 steps, the rule looked at every 250
ADAM_MIN_STEPS = 1000


def train_to_plateau(step: Callable[[], object], value: Callable[[], float], *, every: int, min_steps: int,
                     max_steps: int, tolerance: float = TOLERANCE, name: str = "bound") -> TrainingLog:
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


def last_fifth_gain(log: TrainingLog) -> float:
    """How much the last fifth of the budget improved the objective (the audit's reading of the curve)."""
    curve = log.curves()[log.name]
    x, y = list(curve.x), list(curve.y)
    start = [v for f, v in zip(x, y) if f <= LAST_FIFTH * max(x) + 1e-12]
    return y[-1] - start[-1]
