"""The β-threshold rule for online scheduling with priority predictions (Cho et al. 2022; Algorithm 3 of Shen,
Vitercik and Wikum, ICML 2025), shared by the calibrated scheduler and the binary-predictor baseline: they differ
only in the probabilities p_i they feed it."""
from __future__ import annotations

import numpy as np

from harness.tasks.online.scheduling import beta_threshold


def threshold_plan(p: np.ndarray, theta: float, w0: float, w1: float,
                   rng: np.random.Generator) -> tuple[np.ndarray, int]:
    """Algorithm 3's plan: the jobs in decreasing p (ties in random order) and how many of the first are probed
    (p > β); the rest run non-preemptively in that order."""
    p = np.asarray(p, dtype=float)
    shuffled = rng.permutation(p.size)
    order = shuffled[np.argsort(-p[shuffled], kind="stable")]
    return order, int(np.sum(p > beta_threshold(theta, w0, w1)))
