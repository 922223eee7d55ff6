"""Hot loops of the factorial-design spec: the active rule's objective with its analytic gradient (one evaluation
per SLSQP step), one whole SLSQP solve of Eq. (7), and the task's pooled least-squares fit (once per round)."""
from __future__ import annotations

from benchmarks._common import CpuKernel


def _past(p: int, k: int, units: int):
    import numpy as np

    from harness.tasks.design.factorial import features, interaction_sets

    rng = np.random.default_rng(0)
    sets = interaction_sets(p, k)
    phi = features(np.where(rng.random((units, p)) < 0.5, 1.0, -1.0), sets)
    return sets, phi


class ActiveObjective(CpuKernel):
    """tr M⁻¹ (or 1/λ_min M) and its gradient, M = Σ(d) + G_past/n: p = 5, k = 1 (K = 6, the small-n run) and
    p = 15, k = 2 (K = 121, the large-n run)."""

    params = (["trace", "lambda_min"], ["p5k1", "p15k2"])
    param_names = ["objective", "size"]
    version = "1"

    def setup(self, objective, size):
        import numpy as np

        from implementations.factorial_design import lambda_min_objective, trace_objective

        p, k, units = {"p5k1": (5, 1, 16), "p15k2": (15, 2, 75)}[size]
        self.sets, phi = _past(p, k, 2 * units)
        self.information = phi.T @ phi / units
        self.d = np.random.default_rng(1).uniform(0.2, 0.8, p)
        self.objective = {"trace": trace_objective, "lambda_min": lambda_min_objective}[objective]

    def time_objective_and_gradient(self, objective, size):
        self.objective(self.d, self.sets, self.information)


class ActiveRound(CpuKernel):
    """One round of the active rule: SLSQP from ½ on Eq. (7), p = 5, k = 1, after two rounds of 16 units."""

    version = "1"

    def setup(self):
        from implementations.factorial_design import trace_objective

        self.sets, phi = _past(5, 1, 32)
        self.information = phi.T @ phi / 16
        self.objective = trace_objective

    def time_solve(self):
        from implementations.factorial_design import optimise_dosage

        optimise_dosage(self.objective, self.sets, self.information, 5)


class PooledFit(CpuKernel):
    """The task's fit after a round: eigendecomposition of G, β̂ and its exact risk; K = 56 (p = 10, k = 2)."""

    version = "1"

    def setup(self):
        import numpy as np

        self.sets, phi = _past(10, 2, 200)
        rng = np.random.default_rng(2)
        self.beta = rng.uniform(-1, 1, phi.shape[1])
        self.gram = phi.T @ phi
        self.moment = phi.T @ (phi @ self.beta + rng.standard_normal(200))

    def time_fit(self):
        from harness.tasks.design.factorial import fit

        fit(self.gram, self.moment, self.beta, 1.0)
