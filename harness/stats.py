"""The harness's one t-interval and one t-test, from :mod:`scipy.stats`.

The leaderboard's "mean ± half-width over seeds" and a claim's paired test both come from
here. Values that are all equal have no spread: scipy's t statistic is then 0/0 (nan), so
that case is decided explicitly: the interval is the single value (half-width 0), and the
one-sided p-value is 0 when the value lies above the margin, else 1.
"""
from __future__ import annotations

import warnings
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Sequence

CONFIDENCE = 0.95


@contextmanager
def _nearly_equal_is_fine():
    # values equal but for float noise (1e-16 apart) make scipy warn of "catastrophic
    # cancellation"; its interval is then tiny and right, and the warning only alarms readers
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Precision loss occurred in moment calculation")
        yield


FLOAT_NOISE = 1e-12  # relative: values this close are equal, their differences are rounding


def no_spread(values: Sequence[float]) -> bool:
    """True when there are at least two values and all of them are equal (up to float rounding)."""
    if len(values) < 2:
        return False
    low, high = min(values), max(values)
    return high - low <= FLOAT_NOISE * max(1.0, abs(low), abs(high))


def mean_and_half_width(values: Sequence[float], confidence: float = CONFIDENCE) -> tuple[float, float | None]:
    """The mean and the half-width of its two-sided t-interval; ``None`` with one value, 0.0 with no spread."""
    import numpy as np
    from scipy import stats

    data = np.asarray(values, dtype=float)
    if data.size == 0:
        raise ValueError("no values to summarise")
    if data.size < 2:
        return float(data[0]), None
    if no_spread(values):
        return _constant(data), 0.0
    with _nearly_equal_is_fine():
        low, high = stats.ttest_1samp(data, 0.0).confidence_interval(confidence)
    return float(data.mean()), float(high - low) / 2


def _constant(data) -> float:
    """The value of data without spread: itself when all equal, else their mean (they differ by rounding)."""
    return float(data[0]) if data.min() == data.max() else float(data.mean())


@dataclass(frozen=True)
class OneSided:
    """A one-sample t-test of "the mean exceeds ``margin``", with the two-sided interval of the mean."""

    n: int
    mean: float
    interval: tuple[float, float]
    p_value: float


def one_sided_t(values: Sequence[float], margin: float = 0.0, confidence: float = CONFIDENCE) -> OneSided:
    """One-sided p-value of H0: mean ≤ ``margin``, and the ``confidence`` t-interval of the mean (n ≥ 2)."""
    import numpy as np
    from scipy import stats

    data = np.asarray(values, dtype=float)
    if data.size < 2:
        raise ValueError(f"a t-test needs at least 2 values, found {data.size}")
    if no_spread(values):
        value = _constant(data)
        # a constant difference that is only rounding away from the margin is a tie, not a win
        above = value - margin > FLOAT_NOISE * max(1.0, abs(value), abs(margin))
        return OneSided(data.size, value, (value, value), 0.0 if above else 1.0)
    with _nearly_equal_is_fine():
        low, high = stats.ttest_1samp(data, 0.0).confidence_interval(confidence)
        p_value = stats.ttest_1samp(data, popmean=margin, alternative="greater").pvalue
    return OneSided(data.size, float(data.mean()), (float(low), float(high)), float(p_value))
