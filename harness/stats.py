"""The harness's one t-interval and one t-test, from :mod:`scipy.stats`.

The leaderboard's "mean ± half-width over seeds" and a claim's paired test both come from
here. Values that are all equal have no spread: scipy's t statistic is then 0/0 (nan), so
that case is decided explicitly: the interval is the single value (half-width 0), and the
one-sided p-value is 0 when the value lies above the margin, else 1.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

CONFIDENCE = 0.95


def no_spread(values: Sequence[float]) -> bool:
    """True when there are at least two values and all of them are equal."""
    return len(values) >= 2 and min(values) == max(values)


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
        return float(data[0]), 0.0
    low, high = stats.ttest_1samp(data, 0.0).confidence_interval(confidence)
    return float(data.mean()), float(high - low) / 2


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
        value = float(data[0])
        return OneSided(data.size, value, (value, value), 0.0 if value > margin else 1.0)
    low, high = stats.ttest_1samp(data, 0.0).confidence_interval(confidence)
    p_value = stats.ttest_1samp(data, popmean=margin, alternative="greater").pvalue
    return OneSided(data.size, float(data.mean()), (float(low), float(high)), float(p_value))
