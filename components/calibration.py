"""Probability predictors and their calibration, shared by the calibrated algorithms and the baselines that use a
classifier (Shen, Vitercik and Wikum, ICML 2025, App. C).

* :func:`fit_logistic`: scikit-learn's logistic regression on standardised features, the base predictor;
* :class:`HistogramCalibrator`: histogram binning with equal-mass bins (the authors' ``HistogramCalibrator``:
  each bin's output is the mean label of the validation points in it);
* :class:`PlattCalibrator`: a one-dimensional logistic regression on the predictor's logit;
* :class:`IsotonicCalibrator`: scikit-learn's isotonic regression, clipped to [0, 1];
* :func:`max_calibration_error`: the largest |mean f − mean y| over equal-width bins of f that hold a point
  (the authors' estimate of the max calibration error, which they take on the split the calibrator was fitted on);
* :func:`held_out_calibration_error`: α̂ on data the calibrator did not see: each validation point's f from a
  calibrator fitted on the other folds (cross-fitting), the largest gap over equal-mass bins of those f;
* :func:`balanced_indices`: a class-balanced subsample (the paper calibrates on one).

Numpy at import; scikit-learn inside the functions that use it.
"""
from __future__ import annotations

import numpy as np

CALIBRATORS = ("histogram", "platt", "isotonic")


def fit_logistic(x: np.ndarray, y: np.ndarray, *, regularisation: float = 1.0):
    """A fitted ``Pipeline(StandardScaler, LogisticRegression)`` for the label y ∈ {0, 1}; ``predict_proba(x)[:, 1]``
    is P̂(y = 1 | x). A single-class label raises a ValueError naming it."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    y = np.asarray(y).astype(int)
    if np.unique(y).size < 2:
        raise ValueError(f"fit_logistic: every training label is {int(y[0]) if y.size else None}; a classifier needs "
                         "both classes (choose b inside the range of the training durations)")
    return make_pipeline(StandardScaler(), LogisticRegression(C=float(regularisation), max_iter=1000)).fit(x, y)


class HistogramCalibrator:
    """Histogram binning on ``bins`` equal-mass bins of the scores: a score maps to the mean label of its bin's
    calibration points. Bin edges are quantiles of the calibration scores; tied scores share a bin (so there may
    be fewer bins than asked)."""

    def __init__(self, bins: int = 20):
        if int(bins) < 1:
            raise ValueError(f"HistogramCalibrator: bins = {bins}; expected at least 1")
        self.bins = int(bins)

    def fit(self, scores: np.ndarray, y: np.ndarray) -> "HistogramCalibrator":
        scores, y = np.asarray(scores, dtype=float), np.asarray(y, dtype=float)
        inner = np.unique(np.quantile(scores, np.linspace(0, 1, self.bins + 1)[1:-1]))
        self.edges_ = inner
        which = np.searchsorted(inner, scores, side="right")
        counts = np.bincount(which, minlength=inner.size + 1)
        sums = np.bincount(which, weights=y, minlength=inner.size + 1)
        overall = float(y.mean()) if y.size else 0.5
        self.values_ = np.where(counts > 0, sums / np.maximum(counts, 1), overall)
        return self

    def predict(self, scores: np.ndarray) -> np.ndarray:
        return self.values_[np.searchsorted(self.edges_, np.asarray(scores, dtype=float), side="right")]


class PlattCalibrator:
    """Platt scaling: P(y = 1 | s) = σ(a·logit(s) + c), fitted by (unregularised) logistic regression."""

    def fit(self, scores: np.ndarray, y: np.ndarray) -> "PlattCalibrator":
        from sklearn.linear_model import LogisticRegression

        z = _logit(scores)[:, None]
        self.model_ = LogisticRegression(C=1e6, max_iter=1000).fit(z, np.asarray(y).astype(int))
        return self

    def predict(self, scores: np.ndarray) -> np.ndarray:
        return self.model_.predict_proba(_logit(scores)[:, None])[:, 1]


class IsotonicCalibrator:
    """Isotonic regression of the label on the score (monotone; out-of-range scores clipped to the fitted ends)."""

    def fit(self, scores: np.ndarray, y: np.ndarray) -> "IsotonicCalibrator":
        from sklearn.isotonic import IsotonicRegression

        self.model_ = IsotonicRegression(y_min=0.0, y_max=1.0, out_of_bounds="clip").fit(
            np.asarray(scores, dtype=float), np.asarray(y, dtype=float))
        return self

    def predict(self, scores: np.ndarray) -> np.ndarray:
        return self.model_.predict(np.asarray(scores, dtype=float))


def make_calibrator(name: str, bins: int = 20):
    """``histogram`` (with ``bins``), ``platt`` or ``isotonic``."""
    if name == "histogram":
        return HistogramCalibrator(bins)
    if name == "platt":
        return PlattCalibrator()
    if name == "isotonic":
        return IsotonicCalibrator()
    raise ValueError(f"calibrator = {name!r}; expected one of {', '.join(CALIBRATORS)}")


def _logit(p: np.ndarray) -> np.ndarray:
    p = np.clip(np.asarray(p, dtype=float), 1e-12, 1 - 1e-12)
    return np.log(p) - np.log1p(-p)


def max_calibration_error(f: np.ndarray, y: np.ndarray, bins: int = 100) -> float:
    """α̂ = max over the ``bins`` equal-width bins of [0, 1] that hold a point of |mean f − mean y| in the bin."""
    f, y = np.asarray(f, dtype=float), np.asarray(y, dtype=float)
    which = np.minimum((f * bins).astype(int), bins - 1)
    counts = np.bincount(which, minlength=bins)
    gaps = np.abs(np.bincount(which, weights=f, minlength=bins) - np.bincount(which, weights=y, minlength=bins))
    held = counts > 0
    return float(np.max(gaps[held] / counts[held])) if held.any() else 0.0


def held_out_calibration_error(name: str, bins: int, scores: np.ndarray, y: np.ndarray, *, folds: int = 5,
                                alpha_bins: int = 10, rng: np.random.Generator) -> float:
    """α̂ estimated on held-out data. A calibrator fitted on a split is calibrated on that split by construction
    (histogram binning and isotonic regression exactly: α̂ = 0 there), so its error must be measured on points it
    did not see. The calibration set is cut into ``folds`` random folds; each fold's f comes from a calibrator
    (``name``, ``bins``) fitted on the other folds; α̂ is the largest |mean f − mean y| over ``alpha_bins``
    equal-mass bins of those out-of-fold f. It describes calibrators fitted on (folds − 1)/folds of the set, a
    little coarser than the one fitted on all of it, so it errs high; and it has a noise floor, the largest of
    ``alpha_bins`` binomial deviations, about 2.5·√(p(1 − p)·alpha_bins/n) for a perfectly calibrated f (0.09 at
    n = 1,600 and p = ½), which every held-out estimate pays."""
    from harness.tasks.online.ski_rental import equal_mass_calibration_error

    scores, y = np.asarray(scores, dtype=float), np.asarray(y, dtype=float)
    folds = int(folds)
    if folds < 2 or y.size < 2 * folds:
        raise ValueError(f"held_out_calibration_error: folds = {folds} on {y.size} points; expected 2 ≤ folds ≤ n/2")
    which = rng.permutation(y.size) % folds
    f = np.empty(y.size)
    for k in range(folds):
        out = which == k
        f[out] = make_calibrator(name, bins).fit(scores[~out], y[~out]).predict(scores[out])
    return equal_mass_calibration_error(np.clip(f, 0.0, 1.0), y, int(alpha_bins))


def balanced_indices(y: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Indices of a class-balanced subsample: every point of the smaller class and as many drawn from the larger."""
    y = np.asarray(y).astype(int)
    ones, zeros = np.flatnonzero(y == 1), np.flatnonzero(y == 0)
    k = min(ones.size, zeros.size)
    return np.sort(np.concatenate([rng.choice(ones, k, replace=False), rng.choice(zeros, k, replace=False)]))
