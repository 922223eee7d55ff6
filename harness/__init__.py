"""harness: declarative YAML benchmark specs, run alike, stored per cell, ranked, and checked.

The public surface is what this module exports; every other module is internal and may
change between versions::

    import harness

    summaries = harness.run("specs/cdfsl.yaml", profile="quick", out="out")   # run specs
    frame = harness.read_results("out/cdfsl")                                 # its cells as a DataFrame
    spec = harness.load_spec("specs/cdfsl.yaml", profile="quick")             # the typed, resolved spec

and, to add a paper, :class:`Task` with :class:`Context`, :class:`DataUnavailable`,
:class:`DataError`, :class:`WorkerCache` and :class:`SourceTraining` (see docs/adding-a-paper.md).
Everything loads lazily, so ``import harness`` (and ``harness --help``) stays light.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

__all__ = [
    "run", "RunOptions", "SpecRun", "read_results", "load_spec", "validate_spec", "SpecError",
    "Task", "Context", "DataUnavailable", "DataError", "WorkerCache", "SourceTraining", "Evaluation", "Curve",
    "TrainingLog", "time_call", "Timing",
]
__version__ = "0.1.0"

if TYPE_CHECKING:
    from harness.plan import RunOptions
    from harness.runner import SpecRun, run
    from harness.spec.load import SpecError, load_spec, validate_spec
    from harness.report.table import read_results
    from harness.tasks.base import Context, DataError, DataUnavailable, SourceTraining, Task, WorkerCache
    from harness.tasks.evaluation import Curve, Evaluation
    from harness.tasks.timing import Timing, time_call
    from harness.tasks.training import TrainingLog

_EXPORTS = {
    "run": "harness.runner", "SpecRun": "harness.runner", "RunOptions": "harness.plan",
    "read_results": "harness.report.table", "load_spec": "harness.spec.load", "validate_spec": "harness.spec.load",
    "SpecError": "harness.spec.load", "Task": "harness.tasks.base", "Context": "harness.tasks.base",
    "DataUnavailable": "harness.tasks.base", "DataError": "harness.tasks.base", "WorkerCache": "harness.tasks.base",
    "SourceTraining": "harness.tasks.base", "Evaluation": "harness.tasks.evaluation", "Curve": "harness.tasks.evaluation",
    "TrainingLog": "harness.tasks.training", "time_call": "harness.tasks.timing", "Timing": "harness.tasks.timing",
}


def __getattr__(name: str):
    # lazy, so `import harness` stays light; no submodule shares a name with an export, so
    # importing one never shadows the function of the same name
    if name in _EXPORTS:
        import importlib

        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'harness' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
