"""The paper's passive and active designs."""
from __future__ import annotations

import numpy as np

from harness.tasks.design.factorial import (DesignProblem, expected_information, expected_information_gradient,
                                            features)


class HalfDosage:
    """Every treatment at dosage ½ in every round: Σ(½) = I, the passive optimum (Thm 4.2)."""

    def design(self, problem: DesignProblem, past: np.ndarray) -> np.ndarray:
        return np.full(problem.p, 0.5)


class SupplyUniform:
    """Under a supply limit Σ_i d_i ≤ L (§5.1): every treatment at L/p where L < p/2, else at ½. Proved optimal for
    k = 1 and seen empirically for k = 2 (the paper's Thm 5.1 and Fig. 5)."""

    def design(self, problem: DesignProblem, past: np.ndarray) -> np.ndarray:
        if problem.supply is None:
            return np.full(problem.p, 0.5)
        return np.full(problem.p, min(0.5, problem.supply / problem.p))


def _information(d, sets, past_information):
    return expected_information(d, sets) + past_information


def trace_objective(d, sets, past_information) -> tuple[float, np.ndarray]:
    """tr M⁻¹ with M = Σ(d) + past_information, and its gradient: ∂/∂d_i = −tr(M⁻¹ ∂_iΣ M⁻¹) = −⟨∂_iΣ, M⁻²⟩."""
    inverse = np.linalg.inv(_information(d, sets, past_information))
    square = inverse @ inverse
    grad = -np.einsum("ijk,jk->i", expected_information_gradient(d, sets), square)
    return float(np.trace(inverse)), grad


def lambda_min_objective(d, sets, past_information) -> tuple[float, np.ndarray]:
    """1/λ_min(M) and its gradient −vᵀ∂_iΣ v / λ_min² (v the unit eigenvector of λ_min)."""
    lam, vec = np.linalg.eigh(_information(d, sets, past_information))
    v = vec[:, 0]
    grad = -np.einsum("ijk,j,k->i", expected_information_gradient(d, sets), v, v) / lam[0] ** 2
    return float(1.0 / lam[0]), grad


def optimise_dosage(objective, sets, past_information, p: int, low: float = 0.01, high: float = 0.99,
                    max_iter: int = 100) -> np.ndarray:
    """argmin of ``objective`` over [low, high]^p by SLSQP from d = ½ (the paper's App. D solver); the start is
    kept if the optimiser ends anywhere worse."""
    from scipy.optimize import minimize

    start = np.full(p, 0.5)
    result = minimize(objective, start, args=(sets, past_information), jac=True, method="SLSQP",
                      bounds=[(low, high)] * p, options={"maxiter": max_iter, "ftol": 1e-10})
    d = np.clip(result.x, low, high)
    if not np.isfinite(result.fun) or objective(d, sets, past_information)[0] > objective(start, sets, past_information)[0]:
        return start
    return d


class _Active:
    objective = staticmethod(trace_objective)

    def __init__(self, low: float = 0.01, high: float = 0.99, max_iter: int = 100):
        self.low = low
        self.high = high
        self.max_iter = max_iter

    def design(self, problem: DesignProblem, past: np.ndarray) -> np.ndarray:
        if past.shape[0] == 0:  # Algorithm 1: the first round at ½
            return np.full(problem.p, 0.5)
        phi = features(past, problem.sets)
        past_information = phi.T @ phi / problem.units  # Eq. (7): the past Gram over n, not re-averaged over rounds
        return optimise_dosage(self.objective, problem.sets, past_information, problem.p, self.low, self.high,
                               self.max_iter)


class ActiveTrace(_Active):
    """Eq. (7): d_t = argmin_{d ∈ [low, high]^p} tr[(Σ(d) + (1/n) Σ_{s<t} X_sᵀX_s)⁻¹]."""

    objective = staticmethod(trace_objective)


class ActiveLambdaMin(_Active):
    """The paper's proxy: d_t = argmin 1/λ_min(Σ(d) + (1/n) Σ_{s<t} X_sᵀX_s)."""

    objective = staticmethod(lambda_min_objective)
