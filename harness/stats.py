"""The harness's one t-interval and one t-test, from :func:`scipy.stats.ttest_1samp` (imported only when a page is
built or a claim checked: ``harness --help``, ``list`` and ``validate`` never load it).

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
    if len(values) == 0:
        raise ValueError("no values to summarise")
    return means_and_half_widths([values], confidence)[0]


def means_and_half_widths(samples: Sequence[Sequence[float]],
                          confidence: float = CONFIDENCE) -> list[tuple[float, float | None]]:
    """:func:`mean_and_half_width` of each sample, computed for all samples of one size at once.

    The samples of one size are summarised at once, a row each (``scipy.stats.t.ppf`` and ``scipy.stats.sem`` along
    axis 1): a call per sample costs about 1 ms, 8 s for the 7,000 summaries of a 10k-row folder.
    """
    import numpy as np

    out: list[tuple[float, float | None] | None] = [None] * len(samples)
    by_size: dict[int, list[int]] = {}
    for i, values in enumerate(samples):
        if len(values) == 0:
            raise ValueError("no values to summarise")
        by_size.setdefault(len(values), []).append(i)
    for size, indices in by_size.items():
        data = np.array([samples[i] for i in indices], dtype=float).reshape(len(indices), size)
        for i, summary in zip(indices, summarise_rows(data, confidence)):
            out[i] = summary
    return out  # type: ignore[return-value]


def summarise_rows(data, confidence: float = CONFIDENCE) -> list[tuple[float, float | None]]:
    """:func:`mean_and_half_width` of each row of a 2-D float array (one sample per row, all of one size): what
    :func:`means_and_half_widths` computes for each size, for callers that hold their samples as arrays already."""
    count, size = data.shape
    if count == 0:
        return []
    means, halves = summarise_arrays(data, confidence)
    if size < 2:
        return [(value, None) for value in means.tolist()]
    return list(zip(means.tolist(), halves.tolist()))


def summarise_arrays(data, confidence: float = CONFIDENCE):
    """:func:`summarise_rows` as two float arrays, the means and the half-widths (nan where the samples have one
    value each: no interval), for the leaderboard's columnar grouping.

    A sample without spread (its values equal up to :data:`FLOAT_NOISE`) has half-width 0 and, where its values
    are exactly equal, its first value as the mean; the others the t quantile × the standard error
    (``scipy.stats.t.ppf`` and ``scipy.stats.sem`` along axis 1, every sample of this size at once)."""
    import numpy as np

    count, size = data.shape
    if size < 2:
        return data[:, 0].copy(), np.full(count, np.nan)
    low_values, high_values = data.min(axis=1), data.max(axis=1)
    scale = np.maximum(1.0, np.maximum(np.abs(low_values), np.abs(high_values)))
    flat = high_values - low_values <= FLOAT_NOISE * scale
    means = data.mean(axis=1)
    exact = flat & (low_values == high_values)
    if exact.any():
        means[exact] = data[exact, 0]
    halves = np.zeros(count)
    spread = ~flat
    if spread.any():
        from scipy import stats

        # ttest_1samp(axis=1).confidence_interval gives the same to 1e-15 at 30x the cost (its p-values)
        with _nearly_equal_is_fine():
            halves[spread] = stats.t.ppf((1 + confidence) / 2, size - 1) * stats.sem(data[spread], axis=1)
    return means, halves


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

    data = np.asarray(values, dtype=float)
    if data.size < 2:
        raise ValueError(f"a t-test needs at least 2 values, found {data.size}")
    if no_spread(values):
        value = _constant(data)
        # a constant difference that is only rounding away from the margin is a tie, not a win
        above = value - margin > FLOAT_NOISE * max(1.0, abs(value), abs(margin))
        return OneSided(data.size, value, (value, value), 0.0 if above else 1.0)
    from scipy import stats

    with _nearly_equal_is_fine():
        low, high = stats.ttest_1samp(data, 0.0).confidence_interval(confidence)
        with np.errstate(divide="ignore", invalid="ignore"):
            p_value = stats.ttest_1samp(data, float(margin), alternative="greater").pvalue
    return OneSided(data.size, float(data.mean()), (float(low), float(high)), float(p_value))
