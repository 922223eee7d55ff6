"""Algorithm 1 of FOOPS on the preference problem min f0(x) = H(x)² over the weak Pareto set of F = (f1, f2)."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


def smoothed_merit(fx: np.ndarray, gx: np.ndarray, fy: np.ndarray, gy: np.ndarray, x: np.ndarray, y: np.ndarray,
                   tau: float, l: float):
    """h_{l,τ}(x, y) = τ log Σ_m exp((f_m(y) − f_m(x))/τ) + (l/2)||x − y||², with the max subtracted inside the
    log-sum-exp; returns (h, ∇_x h, ∇_y h, π), π_m ∝ exp((f_m(y) − f_m(x))/τ):
    ∇_y h = Σ π_m ∇f_m(y) + l(y − x) and ∇_x h = −Σ π_m ∇f_m(x) + l(x − y)."""
    z = (np.asarray(fy) - np.asarray(fx)) / tau
    top = float(z.max())
    weights = np.exp(z - top)
    total = float(weights.sum())
    pi = weights / total
    diff = x - y
    h = tau * (top + math.log(total)) + 0.5 * l * float(diff @ diff)
    return h, -(pi @ gx) + l * diff, pi @ gy + l * (y - x), pi


@dataclass(frozen=True)
class FOOPSRun:
    x: np.ndarray
    values: np.ndarray  # F(x_t) per outer step
    spent: np.ndarray  # the oracle calls made to reach x_t: t (K + 2)
    merit: np.ndarray  # v_t = τ ln M − h(x_t, y_{t+1}) per outer step


def foops(objectives, x0: np.ndarray, ray, steps: int, *, tau: float = 0.05, l: float = 2.0, inner_steps: int = 20,
          beta: float = 0.05, alpha: float = 1e-2, gamma0: float = 1.0, gamma_rate: float = 0.1,
          gamma_cap: float = 10.0, theta: float = 1.0) -> FOOPSRun:
    """Algorithm 1 with PGD oracles on X = R^q (the projection is the identity), ``steps`` outer steps of K + 2
    oracle calls each: one at x_t, K at the inner iterates (the first at y = x_t, as Algorithm 1 writes it) and one
    at y_{t+1}. F at the final x is not evaluated (no call is spent on it).

    Each outer step t: y starts at x_t (so h(x_t, y) ≤ h(x_t, x_t) = τ ln M under descent and v_t ≥ 0), takes
    ``inner_steps`` steps y ← y − β ∇_y h(x_t, y); then x ← x − α(∇f0(x) + γ_t ∇p), with f0 = H², H = a f1 − b f2,
    p = (v + τ ln M)^θ … here v_t = τ ln M − h(x_t, y_{t+1}) ≥ 0 is the penalty's base and ∇v = −∇_x h, so for
    θ = 1 the step is the plain ∇f0 − γ_t ∇_x h (eq. 191) and otherwise ∇f0 − γ_t θ v_t^{θ−1} ∇_x h.
    γ_t = min(γ0 + γ_rate t, γ_cap): ramped (no early jumps) and capped (a γ growing without bound pulls x to
    {p = 0}, the equal-weight stationary points, away from the preferred point; Thm 3.7 ties γ to δ ≥ τ ln M).
    """
    a, b = float(ray[0]), float(ray[1])
    m = 2
    x = np.array(x0, dtype=np.float64)
    values = np.empty((steps, m))
    merit = np.empty(steps)
    log_m = tau * math.log(m)
    for t in range(steps):
        fx, gx = objectives(x)
        values[t] = fx
        y = x.copy()
        for _ in range(inner_steps):
            fy, gy = objectives(y)
            _, _, grad_y, _ = smoothed_merit(fx, gx, fy, gy, x, y, tau, l)
            y = y - beta * grad_y
        fy, gy = objectives(y)
        h, grad_x, _, _ = smoothed_merit(fx, gx, fy, gy, x, y, tau, l)
        v = log_m - h  # ≥ 0 up to the inner solver's descent
        merit[t] = v
        hx = a * fx[0] - b * fx[1]
        grad_f0 = 2.0 * hx * (a * gx[0] - b * gx[1])
        gamma = min(gamma0 + gamma_rate * t, gamma_cap)
        scale = 1.0 if theta == 1.0 else theta * max(v, 0.0) ** (theta - 1.0)
        x = x - alpha * (grad_f0 - gamma * scale * grad_x)
    return FOOPSRun(x, values, (inner_steps + 2) * np.arange(steps), merit)


class FOOPS:
    """FOOPS with PGD oracles, θ = 1 by default; γ_t = min(γ0 + γ_rate·t, γ_cap); y re-initialised at x_t; as many
    outer steps (K + 2 oracle calls each) as the problem's budget holds."""

    def __init__(self, tau: float = 0.05, l: float = 2.0, inner_steps: int = 20, beta: float = 0.05,
                 alpha: float = 1e-2, gamma0: float = 1.0, gamma_rate: float = 0.1, gamma_cap: float = 10.0,
                 theta: float = 1.0):
        if not (tau > 0 and l >= 0 and inner_steps >= 1 and beta > 0 and alpha > 0 and theta >= 1):
            raise ValueError(f"FOOPS: tau = {tau}, l = {l}, inner_steps = {inner_steps}, beta = {beta}, "
                             f"alpha = {alpha}, theta = {theta}; expected tau, beta, alpha > 0, l >= 0, "
                             f"inner_steps >= 1, theta >= 1")
        self.params = dict(tau=float(tau), l=float(l), inner_steps=int(inner_steps), beta=float(beta),
                           alpha=float(alpha), gamma0=float(gamma0), gamma_rate=float(gamma_rate),
                           gamma_cap=float(gamma_cap), theta=float(theta))

    def solve(self, problem) -> FOOPSRun:
        steps = problem.outer_steps(self.params["inner_steps"] + 2)
        return foops(problem.objectives, problem.x0, problem.ray, steps, **self.params)
