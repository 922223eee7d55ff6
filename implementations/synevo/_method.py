"""SynEVO as a method of ``spatiotemporal.crossdomain``."""
from __future__ import annotations

import numpy as np

from harness.tasks.spatiotemporal.crossdomain import Container
from implementations.synevo.parts import co_movement_distance, curriculum, elastic, train_extractor

ELASTICITY = ("schedule", "constant", "matched")


def _split(steps: int, parts: int) -> list[int]:
    base, extra = divmod(steps, parts)
    return [base + (i < extra) for i in range(parts)]


class SynEVO:
    """SynEVO with switches for its ablations.

    1. **Re-ordering** (``reorder``): a probe per group (``probe_steps`` steps from one initial network, the task's
       :meth:`~harness.tasks.spatiotemporal.crossdomain.CrossDomainSession.group_gradients`) gives its gradients;
       :func:`~implementations.synevo.parts.curriculum` orders the groups easy to hard. Without it: the order the
       seed draws (the same as the sequential baseline's).
    2. **Gate** (``gate``): the linear extractor (``extractor_dim`` features, trained ``extractor_steps`` steps on
       the groups' daily segments) gives each group's distance to the nearest group already admitted,
       :func:`~implementations.synevo.parts.co_movement_distance` (on the same days over on days shifted by one);
       a group is admitted when it is below ``kappa`` (the bench is always). An admitted group
       trains the common container (the paper's h = 1); a rejected one trains a fresh network of its own with the
       same steps, which is then dropped (h = 0: the container is not polluted). Without it: every group admitted.
    3. **Elasticity** (``elasticity``): ``schedule`` trains group c with dropout and weight decay
       :func:`~implementations.synevo.parts.elastic` (p₀, λ₀) at its distance; ``constant`` at the paper's static
       p = ``constant_p``, λ = ``constant_lambda`` (its −Ela); ``matched`` at the mean of the schedule over the
       admitted groups' visits (the control that isolates elasticity from the level of regularisation).

    The container cycles ``cycles`` times over the ordered groups within the task's budget of steps (split evenly
    over the visits). The target's fine-tuning uses its own (p, λ) from its gradient distance (or the constants),
    and starts from a fresh network when the gate rejects the target.
    """

    def __init__(self, reorder: bool = True, gate: bool = True, elasticity: str = "schedule", p0: float = 0.5,
                 lambda0: float = 0.05, constant_p: float = 0.1, constant_lambda: float = 0.001,
                 kappa: float = 0.5, cycles: int = 2, probe_steps: int = 200, extractor_dim: int = 8,
                 extractor_steps: int = 200):
        self.reorder, self.gate, self.elasticity = reorder, gate, elasticity
        self.p0, self.lambda0, self.constant_p, self.constant_lambda = p0, lambda0, constant_p, constant_lambda
        self.kappa, self.cycles, self.probe_steps = kappa, cycles, probe_steps
        self.extractor_dim, self.extractor_steps = extractor_dim, extractor_steps

    def _check(self) -> None:
        if self.elasticity not in ELASTICITY:
            raise ValueError(f"SynEVO: elasticity = {self.elasticity!r}; expected one of {ELASTICITY}")
        if not (0 <= self.p0 < 1 and 0 <= self.constant_p < 1 and self.lambda0 >= 0 and self.constant_lambda >= 0):
            raise ValueError(f"SynEVO: p0 = {self.p0}, constant_p = {self.constant_p} (dropout probabilities in "
                             f"[0, 1)), lambda0 = {self.lambda0}, constant_lambda = {self.constant_lambda} (≥ 0)")
        if self.kappa <= 0 or self.cycles < 1 or self.probe_steps < 1 or self.extractor_dim < 1:
            raise ValueError(f"SynEVO: kappa = {self.kappa} (> 0), cycles = {self.cycles}, probe_steps = "
                             f"{self.probe_steps}, extractor_dim = {self.extractor_dim} (≥ 1)")

    def fit(self, session):
        self._check()
        groups = {g.name: g for g in session.groups}
        names = [g.name for g in session.groups]
        gradients = session.group_gradients(self.probe_steps)
        ordered, distance = curriculum(gradients, names)
        if not self.reorder:
            ordered = [names[int(i)] for i in session.rng("order").permutation(len(names))]
        weight = self._extractor(session) if self.gate else None
        admitted = self._gate(session, ordered, weight)
        schedule = {n: elastic(distance[n], self.p0, self.lambda0) for n in names}
        visits = [n for _ in range(self.cycles) for n in ordered]
        if self.elasticity == "matched":
            kept = [schedule[n] for n in visits if admitted[n]] or [schedule[ordered[0]]]
            level = (float(np.mean([p for p, _ in kept])), float(np.mean([w for _, w in kept])))
        else:
            level = (self.constant_p, self.constant_lambda)
        settings = {n: schedule[n] if self.elasticity == "schedule" else level for n in names}
        container = session.new_network()
        for i, (name, steps) in enumerate(zip(visits, _split(session.plan.steps, len(visits)))):
            p, decay = settings[name]
            if admitted[name]:
                session.train(container, groups[name].train, steps, dropout=p, weight_decay=decay,
                              stream=f"synevo:{i}")
            else:  # h = 0: a network of the group's own from the initial weights; the container is left alone
                session.train(session.new_network(), groups[name].train, steps, stream=f"synevo:{i}")
        if not len(session.target.train):  # zero-shot: the container as it is
            return Container(container)
        if self.elasticity == "schedule":
            p, decay = elastic(distance[session.target.name], self.p0, self.lambda0)
        else:
            p, decay = level
        if self._target_admitted(session, admitted, weight):
            return Container(container, p, decay)
        return Container(session.new_network("synevo-target"), p, decay)

    def _extractor(self, session) -> np.ndarray:
        seed = int(session.rng("extractor").integers(2**62))
        return train_extractor([g.segments for g in session.groups], self.extractor_dim, self.extractor_steps,
                               pairs=32, seed=seed)

    def _gate(self, session, ordered: list[str], weight) -> dict[str, bool]:
        """Admit the bench, then each group in turn whose distance to the nearest admitted group is below κ."""
        if not self.gate:
            return {n: True for n in ordered}
        segments = {g.name: g.segments for g in session.groups}
        admitted = {ordered[0]: True}
        session.report_gate(ordered[0], 0.0, True)
        for name in ordered[1:]:
            nearest = min(co_movement_distance(weight, segments[name], segments[other])
                          for other, ok in admitted.items() if ok)
            admitted[name] = nearest < self.kappa
            session.report_gate(name, nearest / self.kappa, admitted[name])
        return admitted

    def _target_admitted(self, session, admitted: dict[str, bool], weight) -> bool:
        if not self.gate:
            return True
        target = session.target
        nearest = min(co_movement_distance(weight, target.segments, _on_days(g, target.days))
                      for g in session.groups if admitted[g.name])
        session.report_gate(target.name, nearest / self.kappa, nearest < self.kappa)
        return nearest < self.kappa


def _on_days(group, days) -> np.ndarray:
    """The group's segments on ``days`` (the target's few-shot days, which lie in every group's training span)."""
    index = {int(d): i for i, d in enumerate(group.days)}
    return group.segments[[index[int(d)] for d in days]]
