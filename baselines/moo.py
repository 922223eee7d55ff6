"""The baselines of FOOPS on ``moo.preference``: linear scalarisation, FERERO-style and PMTL/EPO-style
preference-constrained descent, and MGDA. Each takes gradient steps of size ``lr`` from x0, one oracle call a step,
as many as the problem's budget holds (:meth:`Problem.outer_steps`); and the start itself, the trivial answer."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from harness.tasks.moo.preference import min_norm_direction


@dataclass(frozen=True)
class DescentRun:
    x: np.ndarray
    values: np.ndarray
    spent: np.ndarray


def _descend(problem, direction, lr: float) -> DescentRun:
    """x ← x − lr · direction(F, J, H, ∇H), one oracle call per step, for as many steps as the budget holds; F
    recorded at every iterate evaluated (the final one is the task's to evaluate)."""
    a, b = problem.ray
    steps = problem.outer_steps(1)
    x = np.array(problem.x0, dtype=np.float64)
    values = np.empty((steps, 2))
    for t in range(steps):
        f, jac = problem.objectives(x)
        values[t] = f
        x = x - lr * direction(f, jac, a * f[0] - b * f[1], a * jac[0] - b * jac[1])
    return DescentRun(x, values, np.arange(steps))


class LinearScalarisation:
    """Gradient descent on w1 f1 + w2 f2. ``weights: ray`` uses w = (a, b)/(a + b), the weights whose level sets
    favour the preferred point a f1 = b f2; ``weights: sweep`` runs w1 = 0, 0.1, …, 1, each run with the whole
    budget (``runs`` of them: the task gives and counts ``sweep`` times the budget), and keeps the run whose last
    evaluated |H| is smallest: the best any fixed weight reaches, an oracle baseline."""

    def __init__(self, lr: float = 0.1, weights: str = "ray", sweep: int = 11):
        if weights not in ("ray", "sweep"):
            raise ValueError(f"LinearScalarisation: weights = {weights!r}; expected 'ray' or 'sweep'")
        self.lr, self.weights, self.sweep = float(lr), weights, int(sweep)
        self.runs = self.sweep if weights == "sweep" else 1

    def solve(self, problem) -> DescentRun:
        a, b = problem.ray
        grid = [np.array([a, b]) / (a + b)] if self.weights == "ray" else \
            [np.array([w, 1.0 - w]) for w in np.linspace(0.0, 1.0, self.sweep)]
        runs = [_descend(problem, lambda f, jac, h, dh: w @ jac, self.lr) for w in grid]
        # chosen on what the method saw: |H| at its last evaluated iterate (none: the start's, equal for all)
        return min(runs, key=lambda run: abs(a * run.values[-1, 0] - b * run.values[-1, 1]) if len(run.values) else 0.0)


class MGDA:
    """MGDA: x ← x − lr · (the min-norm convex combination of the two gradients); no preference."""

    def __init__(self, lr: float = 0.1):
        self.lr = float(lr)

    def solve(self, problem) -> DescentRun:
        return _descend(problem, lambda f, jac, h, dh: min_norm_direction(jac), self.lr)


def ferero_direction(jac: np.ndarray, h: float, dh: np.ndarray, c: float) -> np.ndarray:
    """w = −d for d = argmin max_m <∇f_m, d> + ||d||²/2 s.t. <∇H, d> = −c H, by its dual: w = Σ λ_m ∇f_m + ν ∇H with
    ν = (cH − <∇H, Σλ∇f>)/||∇H||² and λ = (s, 1 − s) maximising −||P⊥(Σλ∇f)||²/2 − (cH/||∇H||²)<∇H, Σλ∇f>, a
    concave quadratic in s (P⊥ projects off ∇H), maximised in closed form on [0, 1]."""
    g1, g2 = jac[0], jac[1]
    norm2 = float(dh @ dh)
    if norm2 <= 1e-30:
        return min_norm_direction(jac)
    delta = g1 - g2
    p = g2 - (dh @ g2) / norm2 * dh
    q = delta - (dh @ delta) / norm2 * dh
    qq = float(q @ q)
    slope = -float(p @ q) - c * h * float(dh @ delta) / norm2
    s = 0.5 if qq <= 1e-30 else float(np.clip(slope / qq, 0.0, 1.0))
    u = g2 + s * delta
    return u + (c * h - float(dh @ u)) / norm2 * dh


class FERERO:
    """FERERO-style preference-constrained descent (Chen et al., 2024a), single loop: the direction of
    :func:`ferero_direction` with constraint rate ``c`` (H shrinks by the factor 1 − lr·c per step to first order)."""

    def __init__(self, lr: float = 0.1, c: float = 1.0):
        self.lr, self.c = float(lr), float(c)

    def solve(self, problem) -> DescentRun:
        return _descend(problem, lambda f, jac, h, dh: ferero_direction(jac, h, dh, self.c), self.lr)


def projected_direction(jac: np.ndarray, h: float, dh: np.ndarray, c: float) -> np.ndarray:
    """The MGDA min-norm direction d, corrected along ∇H so that <∇H, w> = cH: w = d + (cH − <∇H, d>)/||∇H||² ∇H."""
    d = min_norm_direction(jac)
    norm2 = float(dh @ dh)
    if norm2 <= 1e-30:
        return d
    return d + (c * h - float(dh @ d)) / norm2 * dh


class ProjectedMGDA:
    """PMTL/EPO-style descent: the MGDA direction projected onto the linearised preference constraint."""

    def __init__(self, lr: float = 0.1, c: float = 1.0):
        self.lr, self.c = float(lr), float(c)

    def solve(self, problem) -> DescentRun:
        return _descend(problem, lambda f, jac, h, dh: projected_direction(jac, h, dh, self.c), self.lr)


class Start:
    """The trivial answer: no step and no oracle call; the start x0 is the final point of every ray."""

    def __init__(self):
        pass

    def solve(self, problem) -> DescentRun:
        return DescentRun(np.array(problem.x0, dtype=np.float64), np.empty((0, 2)), np.empty(0, dtype=int))
