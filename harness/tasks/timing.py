"""Timing like a benchmark: warm-up calls excluded, the median of repeats, CPU time beside wall time, and the spread
of the repeats recorded, so that a timing claim can be read against the noise of the method's own repeats.

A module of its own, as :mod:`harness.tasks.evaluation` is: a cell's key includes a fingerprint of the
``harness.tasks`` modules its task imports, so only the tasks that time with it depend on this one.

Use::

    result, timing = time_call(method.fit, data, repeats=5, warmup=1)
    metrics.update(timing.metrics("fit_seconds"))    # fit_seconds, fit_seconds_cpu, fit_seconds_spread

The catalogue declares ``fit_seconds`` (unit ``s``), ``fit_seconds_cpu`` (unit ``s``) and ``fit_seconds_spread``
(unit ``s``, ``"spread_of": "fit_seconds"``); ``harness audit``'s timing-within-noise rule reads the spread.
"""
from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from typing import Any, Callable

CPU_SUFFIX, SPREAD_SUFFIX = "_cpu", "_spread"


@dataclass(frozen=True)
class Timing:
    """The repeats of a timed call: medians of wall and CPU time, and the spread (half the range) of the wall times."""

    wall_s: float
    cpu_s: float
    spread_s: float
    repeats: int
    warmup: int

    def metrics(self, name: str) -> dict[str, float]:
        """``{name: median wall time, name_cpu: median CPU time, name_spread: half the range of the wall times}``."""
        return {name: self.wall_s, name + CPU_SUFFIX: self.cpu_s, name + SPREAD_SUFFIX: self.spread_s}


def time_call(fn: Callable[..., Any], *args: Any, repeats: int = 5, warmup: int = 1,
              sync: Callable[[], Any] | None = None, **kwargs: Any) -> tuple[Any, Timing]:
    """Call ``fn(*args, **kwargs)`` ``warmup`` times untimed, then ``repeats`` times timed; the last call's result and
    the :class:`Timing`. ``sync`` (e.g. ``torch.cuda.synchronize``) is called before each clock is read, so that an
    accelerator's queued work is inside the call it belongs to. CPU time is the process's (every thread's)."""
    if repeats < 1 or warmup < 0:
        raise ValueError(f"time_call: repeats {repeats} (≥ 1) and warmup {warmup} (≥ 0)")
    result = None
    for _ in range(warmup):
        result = fn(*args, **kwargs)
    walls, cpus = [], []
    for _ in range(repeats):
        if sync is not None:
            sync()
        wall, cpu = time.perf_counter(), time.process_time()
        result = fn(*args, **kwargs)
        if sync is not None:
            sync()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return result, Timing(statistics.median(walls), statistics.median(cpus), (max(walls) - min(walls)) / 2,
                          repeats, warmup)
