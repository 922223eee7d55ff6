"""The scheduling baselines: the β-threshold rule on a *binary* predictor turned into probabilities by Bayes' rule,
so every job gets one of two values (Cho et al. 2022, as Shen, Vitercik and Wikum run it in §5.2), and the
trivial answer, the same rule with no predictor (every job gets the training base rate)."""
from __future__ import annotations

import numpy as np

from components.calibration import fit_logistic
from components.scheduling_rule import threshold_plan


class BinaryScheduler:
    """A logistic classifier's hard prediction (threshold ``threshold`` on its score); each job's p is the mean
    priority of the validation jobs with the same hard prediction (held out: the authors' notebook uses the
    training split)."""

    def __init__(self, threshold: float = 0.5):
        self.threshold = threshold

    def fit(self, problem, rng: np.random.Generator) -> None:
        self.problem_ = problem
        self.model_ = fit_logistic(problem.train.x, problem.train.y)
        says = self._hard(problem.val.x)
        y = np.asarray(problem.val.y, dtype=float)
        overall = float(y.mean())
        self.values_ = np.array([float(y[says == k].mean()) if np.any(says == k) else overall for k in (0, 1)])

    def _hard(self, x: np.ndarray) -> np.ndarray:
        return (self.model_.predict_proba(x)[:, 1] >= float(self.threshold)).astype(int)

    def probabilities(self, x: np.ndarray) -> np.ndarray:
        return self.values_[self._hard(x)]

    def plan(self, x: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, int]:
        return threshold_plan(self.probabilities(x), self.problem_.theta, self.problem_.w0, self.problem_.w1, rng)


class ConstantScheduler:
    """The trivial answer: no features, every job's p is the base rate of the training jobs. Algorithm 3 then
    probes every job (base rate > β) or none, in random order: what the rule does without a predictor."""

    def fit(self, problem, rng: np.random.Generator) -> None:
        self.problem_ = problem
        self.rate_ = float(np.mean(problem.train.y))

    def probabilities(self, x: np.ndarray) -> np.ndarray:
        return np.full(x.shape[0], self.rate_)

    def plan(self, x: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, int]:
        return threshold_plan(self.probabilities(x), self.problem_.theta, self.problem_.w0, self.problem_.w1, rng)
