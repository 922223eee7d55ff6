"""What the paper's designs are compared against: fixed uniform dosages, random dosages, and a regular two-level
fractional factorial of resolution ≥ V (the classical design; for k = 1 and k = 2 it is orthogonal)."""
from __future__ import annotations

import itertools

import numpy as np

from harness.tasks.design.factorial import DesignProblem

# Generators of the fractions: each added factor is the product of the named base factors (0 = A, 1 = B, …).
# 2^{5−1}_V: E = ABCD; 2^{6−1}_VI: F = ABCDE; 2^{7−1}_VII: G = ABCDEF; 2^{8−2}_V: G = ABCD, H = ABEF.
GENERATORS = {
    5: (4, [(0, 1, 2, 3)]),
    6: (5, [(0, 1, 2, 3, 4)]),
    7: (6, [(0, 1, 2, 3, 4, 5)]),
    8: (6, [(0, 1, 2, 3), (0, 1, 4, 5)]),
}


def fraction(p: int) -> np.ndarray:
    """The runs (2^base, p) in ±1: the full factorial for p ≤ 4, else the resolution ≥ V fraction of GENERATORS."""
    if p <= 4:
        return np.array(list(itertools.product((-1.0, 1.0), repeat=p)))
    if p not in GENERATORS:
        raise ValueError(f"fractional-factorial: no resolution-V fraction is tabulated for p = {p}; "
                         f"expected p ≤ 4 or one of {sorted(GENERATORS)}")
    base, words = GENERATORS[p]
    full = np.array(list(itertools.product((-1.0, 1.0), repeat=base)))
    added = [full[:, list(word)].prod(axis=1) for word in words]
    return np.column_stack([full, *added])


class UniformDosage:
    """Every treatment at ``dosage`` in every round."""

    def __init__(self, dosage: float = 0.5):
        self.dosage = dosage

    def design(self, problem: DesignProblem, past: np.ndarray) -> np.ndarray:
        return np.full(problem.p, float(self.dosage))


class PerturbedDosage:
    """Every treatment ``distance`` away from the centre (L/p under a supply limit, else ½), half of them up and
    half down (one at the centre when p is odd), the signs drawn each round: the total dosage is the centre's, the
    ℓ∞ distance from it is ``distance`` (§6's dosages at a given distance, Sim 1 and the supply experiment)."""

    def __init__(self, distance: float = 0.1):
        self.distance = distance

    def design(self, problem: DesignProblem, past: np.ndarray) -> np.ndarray:
        p = problem.p
        centre = 0.5 if problem.supply is None else min(0.5, problem.supply / p)
        if not 0 <= self.distance <= centre:
            raise ValueError(f"perturbed-dosage: distance = {self.distance}; expected 0 … {centre:g} (the centre)")
        signs = np.array([1.0] * (p // 2) + [-1.0] * (p // 2) + [0.0] * (p % 2))
        return centre + self.distance * problem.rng.permutation(signs)


class RandomDosage:
    """A fresh d ~ U(0, 1)^p each round, from the method's stream."""

    def design(self, problem: DesignProblem, past: np.ndarray) -> np.ndarray:
        return problem.rng.random(problem.p)


class FractionalFactorial:
    """The fraction's runs, repeated to fill the round's n units (n must be a multiple of the run count)."""

    def design(self, problem: DesignProblem, past: np.ndarray) -> np.ndarray:
        runs = fraction(problem.p)
        if problem.units % len(runs):
            raise ValueError(f"fractional-factorial: {problem.units} units per round is not a multiple of the "
                             f"{len(runs)} runs of the fraction for p = {problem.p}")
        return np.tile(runs, (problem.units // len(runs), 1))
