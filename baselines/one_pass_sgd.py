"""One-pass SGD: projected SGD from 0 with a constant step η = n^(−step_exponent), one pass over a random
permutation of the n training samples (T = n), the algorithm that online-to-batch conversion makes
O(1/√n)-optimal at η = 1/√n."""
from __future__ import annotations

from components.projected_sgd import sample_order, sgd_path


class OnePassSGD:
    def __init__(self, step_exponent: float = 0.5):
        self.step_exponent = step_exponent

    def plan(self, n: int) -> tuple[float, int]:
        return float(n) ** -float(self.step_exponent), int(n)

    def run(self, problem, rng):
        return sgd_path(problem, sample_order(problem.n, problem.steps, "single-shuffle", rng))
