"""Algorithms with calibrated predictions (Shen, Vitercik and Wikum, ICML 2025), implemented from the paper's text.

* :func:`calibrated_buy_day`: Algorithm 1's k*(v) for ski rental;
* :class:`CalibratedSkiRental`: logistic regression on 1{Z > b}, calibrated on the validation split (histogram
  binning, Platt scaling or isotonic regression), α estimated on held-out validation points (cross-fitting),
  then Algorithm 1;
* :class:`CalibratedScheduler` (task ``online.scheduling``): the β-threshold rule of Algorithm 3 on the priority
  probabilities of a calibrated predictor.

The authors' public helpers have two operator-precedence slips (the note, (e)); the formulas here follow the paper:
k*(v) = b·√((1 − v + α)/(v + α)), not b·√((1 − v + α)/v + α).
"""
from __future__ import annotations

import numpy as np

from components.calibration import balanced_indices, fit_logistic, held_out_calibration_error, make_calibrator
from components.scheduling_rule import threshold_plan

__all__ = ["calibrated_buy_day", "CalibratedSkiRental", "CalibratedScheduler"]


def calibrated_buy_day(v: np.ndarray, alpha: float, b: float) -> np.ndarray:
    """Algorithm 1: buy on day b if v ≤ (4 + 3α)/5, else on day b·√((1 − v + α)/(v + α))."""
    v = np.asarray(v, dtype=float)
    alpha = float(alpha)
    early = b * np.sqrt(np.clip(1 - v + alpha, 0, None) / np.maximum(v + alpha, 1e-300))
    return np.where(v <= (4 + 3 * alpha) / 5, b, early)


class _Calibrated:
    """Logistic regression on the training split, calibrated on (a class-balanced subsample of) the validation
    split. α̂ is estimated on points the calibrator did not see: out-of-fold predictions of calibrators fitted on
    ``alpha_folds`` − 1 of ``alpha_folds`` folds of the calibration set, the largest gap over ``alpha_bins``
    equal-mass bins (the authors measure it on the split the calibrator was fitted on, where histogram binning
    and isotonic regression are calibrated by construction and α̂ = 0)."""

    uses_alpha = True  # the decisions depend on α (Algorithm 1); Algorithm 3 does not

    def __init__(self, calibrator: str = "histogram", bins: int = 100, alpha_bins: int = 10, alpha_folds: int = 5,
                 balance: bool = False, alpha: float | None = None):
        self.calibrator = calibrator
        self.bins = bins
        self.alpha_bins = alpha_bins
        self.alpha_folds = alpha_folds
        self.balance = balance
        self.alpha = alpha

    def _fit_predictor(self, x_train, y_train, x_val, y_val, rng) -> None:
        self.model_ = fit_logistic(x_train, y_train)
        keep = balanced_indices(y_val, rng) if self.balance else np.arange(y_val.size)
        scores, y = self.model_.predict_proba(x_val[keep])[:, 1], np.asarray(y_val[keep], dtype=float)
        self.calibrator_ = make_calibrator(self.calibrator, self.bins).fit(scores, y)
        if not self.uses_alpha:
            return
        if self.alpha is None:
            self.alpha_ = held_out_calibration_error(self.calibrator, self.bins, scores, y, folds=int(self.alpha_folds),
                                                     alpha_bins=int(self.alpha_bins), rng=rng)
        else:
            self.alpha_ = float(self.alpha)

    def probabilities(self, x: np.ndarray) -> np.ndarray:
        return np.clip(self.calibrator_.predict(self.model_.predict_proba(x)[:, 1]), 0.0, 1.0)


class CalibratedSkiRental(_Calibrated):
    """The paper's calibrated ski-rental algorithm (Algorithm 1) on a calibrated logistic predictor of Z > b.

    ``bins``: histogram bins (the authors use 100 for ski rental); ``alpha``: a fixed bound on the calibration
    error instead of the held-out estimate; ``balance``: calibrate on a class-balanced validation subsample, as
    the paper does on CitiBike."""

    def fit(self, problem, rng: np.random.Generator) -> None:
        b = problem.b
        self.b_ = b
        self._fit_predictor(problem.train.x, problem.train.z > b, problem.val.x, problem.val.z > b, rng)

    def buy_days(self, x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        return calibrated_buy_day(self.probabilities(x), self.alpha_, self.b_)

    def error_bound(self) -> float:
        """The bound α on the max calibration error that the decisions assume (Algorithm 1's α)."""
        return float(self.alpha_)


class CalibratedScheduler(_Calibrated):
    """Algorithm 3 (the β-threshold rule) on the probabilities of a logistic predictor of high priority calibrated
    on the validation split (histogram binning with 20 bins by default, as the authors' scheduling notebook)."""

    uses_alpha = False

    def __init__(self, calibrator: str = "histogram", bins: int = 20, balance: bool = False):
        super().__init__(calibrator=calibrator, bins=bins, balance=balance)

    def fit(self, problem, rng: np.random.Generator) -> None:
        self.problem_ = problem
        self._fit_predictor(problem.train.x, problem.train.y, problem.val.x, problem.val.y, rng)

    def plan(self, x: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, int]:
        return threshold_plan(self.probabilities(x), self.problem_.theta, self.problem_.w0, self.problem_.w1, rng)
