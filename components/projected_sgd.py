"""Projected SGD with a constant step from w_0 = 0, shared by one-pass and multi-pass SGD."""
from __future__ import annotations

import numpy as np


def sample_order(n: int, steps: int, order: str, rng: np.random.Generator) -> np.ndarray:
    """The T sample indices: ``single-shuffle`` repeats one random permutation of [n] for every pass;
    ``with-replacement`` draws each index uniformly from [n]."""
    if order == "single-shuffle":
        return np.tile(rng.permutation(n), -(-steps // n))[:steps]
    if order == "with-replacement":
        return rng.integers(0, n, size=steps)
    raise ValueError(f"order = {order!r}; expected 'single-shuffle' or 'with-replacement'")


def sgd_path(problem, indices: np.ndarray) -> np.ndarray:
    """w_{t+1} = Π(w_t − η g_t), g_t = problem.subgradient(w_t, i_t): the (T + 1, d) iterates."""
    path = np.zeros((len(indices) + 1, problem.dim))
    w = path[0].copy()
    for t, i in enumerate(indices):
        w = problem.project(w - problem.eta * problem.subgradient(w, int(i)))
        path[t + 1] = w
    return path
