"""Baselines of ``spatiotemporal.crossdomain`` (torch imported where used).

* :class:`Independent`: a model of the target's own, trained on its few-shot windows only;
* :class:`Joint`: one model on every training group's windows pooled;
* :class:`Sequential`: naive sequential fine-tuning over the groups in a random order;
* :class:`FullTarget`: a model trained on all of the target's training span (the oracle sanity row);
* :class:`LastValue`: the last observed value repeated (the trivial answer).

Each arm that trains spends the plan's whole budget of steps; the task then fine-tunes every network on the
target's few shots the same way.
"""
from __future__ import annotations

from harness.tasks.base import DataUnavailable
from harness.tasks.spatiotemporal.crossdomain import Container


class Independent:
    """A fresh backbone trained on the target's few-shot windows for the whole budget (no transfer); there are
    none in the zero-shot protocol, where the cell is skipped."""

    def fit(self, session):
        if not len(session.target.train):
            raise DataUnavailable("Independent: the target has no training windows (a zero-shot dataset): a model of "
                                  "its own cannot be trained")
        network = session.new_network()
        return Container(session.train(network, session.target.train, session.plan.steps, stream="independent"))


class Joint:
    """A fresh backbone trained on the training groups' windows pooled (each batch drawn uniformly from all of
    them) for the whole budget."""

    def fit(self, session):
        network = session.new_network()
        return Container(session.train(network, [g.train for g in session.groups], session.plan.steps,
                                       stream="joint"))


def split_budget(steps: int, parts: int) -> list[int]:
    """``steps`` split into ``parts`` nearly equal whole shares (the first ones one larger), summing to ``steps``."""
    if parts < 1:
        raise ValueError(f"cannot split a budget into {parts} parts")
    base, extra = divmod(steps, parts)
    return [base + (i < extra) for i in range(parts)]


class Sequential:
    """Naive sequential fine-tuning: one backbone trained on one group after another, in an order the seed draws,
    ``cycles`` times over the groups (the budget split evenly), with no dropout, decay or gate."""

    def __init__(self, cycles: int = 2):
        self.cycles = cycles

    def fit(self, session):
        if self.cycles < 1:
            raise ValueError(f"Sequential: cycles = {self.cycles}; expected at least 1")
        order = [int(i) for i in session.rng("order").permutation(len(session.groups))]
        network = session.new_network()
        shares = split_budget(session.plan.steps, self.cycles * len(order))
        for i, (cycle, position) in enumerate((c, p) for c in range(self.cycles) for p in order):
            session.train(network, session.groups[position].train, shares[i], stream=f"sequential:{cycle}:{position}")
        return Container(network)


class FullTarget:
    """A fresh backbone trained for the whole budget on every window of the target's training span, not only its
    few shots: the oracle (a sanity row: what a model of the target's own reaches with all its data)."""

    def fit(self, session):
        network = session.new_network()
        return Container(session.train(network, session.data.target_full, session.plan.steps, stream="oracle"))


class LastValue:
    """Every sensor's last observed (scaled) value, repeated over the horizon."""

    def fit(self, session):
        return _LastValue(session.data.horizon)


class _LastValue:
    def __init__(self, horizon: int):
        self.horizon = horizon

    def predict(self, x):
        return x[:, -1:, :, 0].expand(-1, self.horizon, -1)


__all__ = ["Independent", "Joint", "Sequential", "FullTarget", "LastValue", "split_budget"]
