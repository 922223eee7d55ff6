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
  confidence 1 − δ (a linear regression of log Z, absolute residuals on the validation split): one width for
  every x;
* :class:`QuantileConformalSkiRental`: the same Algorithm 2 on a conformalised quantile regression interval
  (Romano, Patterson and Candès, 2019): gradient-boosted quantile regressions of log Z at δ/2 and 1 − δ/2 on the
  training split, widened by the conformal quantile of max(q̂_lo − log z, log z − q̂_hi) on the validation split,
  so that the interval follows the conditional distribution of Z given x (narrow where one mode dominates).

None of them has a probability predictor or a calibration-error bound (``probabilities`` and ``error_bound``
return None).
"""
from __future__ import annotations

import math

import numpy as np

from components.calibration import fit_logistic


class _NoPredictor:
    def probabilities(self, x: np.ndarray) -> None:
        return None

    def error_bound(self) -> None:
        return None


class BreakEven(_NoPredictor):
    def fit(self, problem, rng: np.random.Generator) -> None:
        self.b_ = problem.b

    def buy_days(self, x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        return np.full(x.shape[0], self.b_)


class RandomizedSkiRental(_NoPredictor):
    def fit(self, problem, rng: np.random.Generator) -> None:
        self.b_ = problem.b

    def buy_days(self, x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        return randomized_buy_day(rng.random(x.shape[0]), self.b_)


def randomized_buy_day(u: np.ndarray, b: float) -> np.ndarray:
    """Inverse of F(k) = (e^{k/b} − 1)/(e − 1) on [0, b] at uniforms u."""
    return b * np.log1p(np.asarray(u, dtype=float) * (math.e - 1))


def _regression(x: np.ndarray, z: np.ndarray):
    """A linear regression of log Z on standardised features."""
    from sklearn.linear_model import LinearRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    return make_pipeline(StandardScaler(), LinearRegression()).fit(x, np.log(z))


class RobustSkiRental(_NoPredictor):
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


def robust_buy_day(predicted: np.ndarray, b: float, trust: float) -> np.ndarray:
    """Purohit et al.'s deterministic rule: λb if the prediction is ≥ b, else b/λ."""
    return np.where(np.asarray(predicted) >= b, trust * b, b / trust)


class BinaryPredictorSkiRental(_NoPredictor):
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
        return np.where(says_long, math.sqrt(self.error_) * self.b_, self.b_)  # a hard prediction, no probability


def _conformal_rank(n: int, delta: float) -> int:
    """The split-conformal quantile's rank ⌈(n + 1)(1 − δ)⌉ among n validation scores; beyond n the interval is
    unbounded."""
    return math.ceil((n + 1) * (1 - delta))


class ConformalSkiRental(_NoPredictor):
    def __init__(self, delta: float = 0.1):
        self.delta = delta

    def fit(self, problem, rng: np.random.Generator) -> None:
        delta = float(self.delta)
        if not 0 < delta < 1:
            raise ValueError(f"ConformalSkiRental: delta = {self.delta}; expected 0 < delta < 1")
        self.b_ = problem.b
        self.model_ = _regression(problem.train.x, problem.train.z)
        residuals = np.sort(np.abs(np.log(problem.val.z) - self.model_.predict(problem.val.x)))
        rank = _conformal_rank(residuals.size, delta)
        self.radius_ = float(residuals[rank - 1]) if rank <= residuals.size else math.inf

    def intervals(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        centre = self.model_.predict(x)
        return np.exp(centre - self.radius_), np.exp(centre + self.radius_)

    def buy_days(self, x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        lower, upper = self.intervals(x)
        return conformal_buy_day(lower, upper, float(self.delta), self.b_)


class QuantileConformalSkiRental(_NoPredictor):
    """Conformalised quantile regression (CQR) of log Z, then Algorithm 2. The quantile regressions are
    scikit-learn's histogram gradient boosting with the pinball loss at δ/2 and 1 − δ/2 and its default settings
    (100 trees of at most 31 leaves, learning rate 0.1, no early stopping below 10,000 points), fixed before any
    run; the conformal step makes the interval cover Z with probability at least 1 − δ whatever the regressions
    learned."""

    def __init__(self, delta: float = 0.1):
        self.delta = delta

    def fit(self, problem, rng: np.random.Generator) -> None:
        from sklearn.ensemble import HistGradientBoostingRegressor

        delta = float(self.delta)
        if not 0 < delta < 1:
            raise ValueError(f"QuantileConformalSkiRental: delta = {self.delta}; expected 0 < delta < 1")
        self.b_ = problem.b
        target = np.log(problem.train.z)
        self.quantiles_ = [HistGradientBoostingRegressor(loss="quantile", quantile=q, random_state=0)
                           .fit(problem.train.x, target) for q in (delta / 2, 1 - delta / 2)]
        low, high = self._bounds(problem.val.x)
        log_z = np.log(problem.val.z)
        scores = np.sort(np.maximum(low - log_z, log_z - high))
        rank = _conformal_rank(scores.size, delta)
        self.widen_ = float(scores[rank - 1]) if rank <= scores.size else math.inf

    def _bounds(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return self.quantiles_[0].predict(x), self.quantiles_[1].predict(x)

    def intervals(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        low, high = self._bounds(x)
        lower, upper = np.exp(low - self.widen_), np.exp(high + self.widen_)
        return np.minimum(lower, upper), np.maximum(lower, upper)  # crossed quantiles and a negative widening

    def buy_days(self, x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        lower, upper = self.intervals(x)
        return conformal_buy_day(lower, upper, float(self.delta), self.b_)


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
