"""Ski-rental baselines the calibrated algorithm is compared against (Shen, Vitercik and Wikum, ICML 2025, §3 and §5).

* :class:`BreakEven`: buy on day b (deterministic, 2-competitive);
* :class:`RandomizedSkiRental`: Karlin et al.'s randomised rule, buy day k with density e^{k/b}/(b(e − 1)) on
  [0, b] (e/(e − 1)-competitive in expectation on every instance);
* :class:`RobustSkiRental`: Purohit, Svitkina and Kumar (2018), deterministic with a trust parameter λ ∈ (0, 1]
  on a regression prediction ŷ of Z: buy on day λb if ŷ ≥ b, else on day b/λ ((1 + λ)-consistent,
  (1 + 1/λ)-robust);
* :class:`BinaryPredictorSkiRental`: Anand, Ge and Panigrahi (2020) as the paper runs it: a logistic classifier
  of Z > b thresholded at Youden's J on the validation split, ε its error rate there; buy on day √ε·b if it says
  Z > b, else on day b;
* :class:`ConformalSkiRental`: Sun et al. (2024), Algorithm 2 on a split-conformal interval [ℓ, u] for Z at
  confidence 1 − δ (a linear regression of log Z, absolute residuals on the validation split).
"""
from __future__ import annotations

import math

import numpy as np

from components.calibration import fit_logistic


class BreakEven:
    def fit(self, problem, rng: np.random.Generator) -> None:
        self.b_ = problem.b

    def buy_days(self, x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        return np.full(x.shape[0], self.b_)

    def probabilities(self, x: np.ndarray) -> None:
        return None


class RandomizedSkiRental:
    def fit(self, problem, rng: np.random.Generator) -> None:
        self.b_ = problem.b

    def buy_days(self, x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        return randomized_buy_day(rng.random(x.shape[0]), self.b_)

    def probabilities(self, x: np.ndarray) -> None:
        return None


def randomized_buy_day(u: np.ndarray, b: float) -> np.ndarray:
    """Inverse of F(k) = (e^{k/b} − 1)/(e − 1) on [0, b] at uniforms u."""
    return b * np.log1p(np.asarray(u, dtype=float) * (math.e - 1))


def _regression(x: np.ndarray, z: np.ndarray):
    """A linear regression of log Z on standardised features."""
    from sklearn.linear_model import LinearRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    return make_pipeline(StandardScaler(), LinearRegression()).fit(x, np.log(z))


class RobustSkiRental:
    def __init__(self, trust: float = 0.5):
        self.trust = trust

    def fit(self, problem, rng: np.random.Generator) -> None:
        if not 0 < float(self.trust) <= 1:
            raise ValueError(f"RobustSkiRental: trust = {self.trust}; expected 0 < trust ≤ 1")
        self.b_ = problem.b
        self.model_ = _regression(problem.train.x, problem.train.z)

    def buy_days(self, x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        predicted = np.exp(self.model_.predict(x))
        return robust_buy_day(predicted, self.b_, float(self.trust))

    def probabilities(self, x: np.ndarray) -> None:
        return None


def robust_buy_day(predicted: np.ndarray, b: float, trust: float) -> np.ndarray:
    """Purohit et al.'s deterministic rule: λb if the prediction is ≥ b, else b/λ."""
    return np.where(np.asarray(predicted) >= b, trust * b, b / trust)


class BinaryPredictorSkiRental:
    def fit(self, problem, rng: np.random.Generator) -> None:
        from sklearn.metrics import roc_curve

        b = self.b_ = problem.b
        self.model_ = fit_logistic(problem.train.x, problem.train.z > b)
        y_val = problem.val.z > b
        scores = self.model_.predict_proba(problem.val.x)[:, 1]
        if np.unique(y_val).size < 2:
            self.threshold_ = 0.5
        else:
            fpr, tpr, thresholds = roc_curve(y_val, scores)
            self.threshold_ = float(min(thresholds[int(np.argmax(tpr - fpr))], 1.0))
        self.error_ = float(np.mean((scores >= self.threshold_) != y_val))

    def buy_days(self, x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        says_long = self.model_.predict_proba(x)[:, 1] >= self.threshold_
        return np.where(says_long, math.sqrt(self.error_) * self.b_, self.b_)

    def probabilities(self, x: np.ndarray) -> None:
        return None  # a hard prediction, not a probability


class ConformalSkiRental:
    def __init__(self, delta: float = 0.1):
        self.delta = delta

    def fit(self, problem, rng: np.random.Generator) -> None:
        delta = float(self.delta)
        if not 0 < delta < 1:
            raise ValueError(f"ConformalSkiRental: delta = {self.delta}; expected 0 < delta < 1")
        self.b_ = problem.b
        self.model_ = _regression(problem.train.x, problem.train.z)
        residuals = np.sort(np.abs(np.log(problem.val.z) - self.model_.predict(problem.val.x)))
        n = residuals.size
        rank = math.ceil((n + 1) * (1 - delta))  # split-conformal quantile; beyond n the interval is unbounded
        self.radius_ = float(residuals[rank - 1]) if rank <= n else math.inf

    def intervals(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        centre = self.model_.predict(x)
        return np.exp(centre - self.radius_), np.exp(centre + self.radius_)

    def buy_days(self, x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        lower, upper = self.intervals(x)
        return conformal_buy_day(lower, upper, float(self.delta), self.b_)

    def probabilities(self, x: np.ndarray) -> None:
        return None


def zeta(delta: float, lower: np.ndarray, b: float) -> np.ndarray:
    """ζ(δ, ℓ) = δ + (1 − δ)b/ℓ + 2√(δ(1 − δ)b/ℓ) if δ < ℓ/(ℓ + b), else 1 + b/ℓ."""
    lower = np.asarray(lower, dtype=float)
    ratio = b / lower
    return np.where(delta < lower / (lower + b),
                    delta + (1 - delta) * ratio + 2 * np.sqrt(delta * (1 - delta) * ratio), 1 + ratio)


def conformal_buy_day(lower: np.ndarray, upper: np.ndarray, delta: float, b: float) -> np.ndarray:
    """Sun et al.'s Algorithm 2 on intervals [ℓ, u] at confidence 1 − δ, branch by branch as the note states it:
    u < b: b; ℓ > b: b·min{√(δ/(1 − δ)), 1}; ζ ≥ 2 and δ + u/b ≥ 2: b; ζ ≤ δ + u/b: ℓ·min{√(bδ/(ℓ(1 − δ))), 1};
    else u."""
    lower, upper = np.broadcast_arrays(np.asarray(lower, dtype=float), np.asarray(upper, dtype=float))
    with np.errstate(divide="ignore", invalid="ignore"):  # ℓ = 0 (an unbounded interval) gives ζ = ∞
        z = zeta(delta, lower, b)
        fourth = lower * np.minimum(np.sqrt(b * delta / (lower * (1 - delta))), 1.0)
    third = upper / b + delta
    return np.select(
        [upper < b, lower > b, (z >= 2) & (third >= 2), z <= third],
        [np.full(lower.shape, b), np.full(lower.shape, b * min(math.sqrt(delta / (1 - delta)), 1.0)),
         np.full(lower.shape, b), fourth],
        default=upper)
