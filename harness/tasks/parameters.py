"""Checks of a dataset loader's numeric parameters, each raising :class:`~harness.tasks.base.DataError` with the
parameter's name, the value found and what was expected (the spec's user reads it on the failed cell).

A module of its own, as :mod:`harness.tasks.evaluation` is: a cell's key includes a fingerprint of the
``harness.tasks`` modules its task imports, so only the tasks that use these depend on this one. (The older task
np.regression keeps private copies until its next re-run, which moving them would force.)
"""
from __future__ import annotations

from harness.tasks.base import DataError


def count(name: str, value, low: int = 1) -> int:
    """``value`` as an int, which must be an integer (not a bool) of at least ``low``."""
    import numpy as np

    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        raise DataError(f"{name} = {value!r}: expected an integer of at least {low}")
    return int(value)


def positive(name: str, value) -> float:
    """``value`` as a float, which must be a number above 0."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise DataError(f"{name} = {value!r}: expected a positive number")
    return float(value)


def non_negative(name: str, value) -> float:
    """``value`` as a float, which must be a number of at least 0."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise DataError(f"{name} = {value!r}: expected a number of at least 0")
    return float(value)
