"""The trivial answer of ``sco.multipass``: return the starting point w0 = 0 without reading the sample (T = 0 steps).

On the hard instance w = 0 is a population minimiser (excess 0), so a method that ends above it has done worse
than not training at all; on the smooth control its excess is ‖w*‖²/(2d) = 1/(2d), the level SGD must beat to
have learned anything."""
from __future__ import annotations

import numpy as np


class ZeroPoint:
    def __init__(self, step_exponent: float = 0.5):
        self.step_exponent = step_exponent

    def plan(self, n: int) -> tuple[float, int]:
        return float(n) ** -float(self.step_exponent), 0

    def run(self, problem, rng):
        return np.zeros((problem.steps + 1, problem.dim))
