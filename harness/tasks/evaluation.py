"""What a task may return besides scalar metrics: named curves, each with the theory's prediction beside it.

A module of its own, not part of :mod:`harness.tasks.base`: a cell's key includes a fingerprint of the task's
code and of the ``harness.tasks`` modules it imports, so only the tasks that measure curves depend on this one.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence


@dataclass(frozen=True)
class Curve:
    """A series a cell measured beside its metrics: the error after each round of a design, the excess loss after
    each epoch. ``theory`` is the paper's prediction at the same ``x`` (drawn dashed beside the measurement), or
    None. The leaderboard plots each method's mean curve over seeds with its 95% band, one panel per dataset and
    curve name, and tabulates it."""

    x: Sequence[float]
    y: Sequence[float]
    x_label: str = "step"
    y_label: str = ""
    theory: Sequence[float] | None = None


@dataclass(frozen=True)
class Evaluation:
    """What :meth:`Task.evaluate` may return instead of a plain metrics dict: the metrics and named curves."""

    metrics: dict[str, float]
    curves: dict[str, Curve] = field(default_factory=dict)


def curve_record(name: str, curve: Curve) -> dict[str, Any]:
    """A :class:`Curve` as the plain dict ``runs.jsonl`` keeps; a ValueError says what is wrong with it."""
    import math

    x, y = [float(v) for v in curve.x], [float(v) for v in curve.y]
    theory = None if curve.theory is None else [float(v) for v in curve.theory]
    if not x or len(x) != len(y) or (theory is not None and len(theory) != len(x)):
        raise ValueError(f"curve {name!r}: x has {len(x)} values, y {len(y)}"
                         + ("" if theory is None else f", theory {len(theory)}") + "; expected the same number (≥ 1)")
    for label, values in (("x", x), ("y", y), ("theory", theory or [])):
        bad = next((v for v in values if not math.isfinite(v)), None)
        if bad is not None:
            raise ValueError(f"curve {name!r}: {label} holds {bad} (not a finite number)")
    return {"x": x, "y": y, "x_label": curve.x_label, "y_label": curve.y_label or name, "theory": theory}
