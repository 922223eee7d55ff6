"""The text of the files ``harness new`` writes, as :class:`string.Template` s (``$name``; ``$$`` is a dollar).

A new family's skeleton is a complete comparison that runs: a task that scores an estimate of a mean, a trimmed
mean (the method, with one tuned hyper-parameter), the sample median (the baseline) and 0 (the trivial answer).
Every place its author must fill in is one line starting with ``# TODO(author):``.
"""
from __future__ import annotations

from string import Template

TODO = "# TODO(author):"

FAMILY_INIT = Template('''\
"""The $family family (``$task``), written by `harness new $name`: its task, loaders and metrics."""
# TODO(author): say in the docstring above what the family's tasks measure, and what its code imports
''')

CATALOGUE = Template('''\
"""The $family family's names: tasks, datasets, methods and metrics, as ``module:attr`` strings.

Found by the registry's scan of ``harness/tasks/*/catalogue.py`` (no ``pyproject.toml`` line, no reinstall).
Plain data: importing it imports nothing else.
"""

_T = "$task"
_M = "$task_module"

CATALOGUE = {
    # TODO(author): a family importing libraries beyond the harness's own declares them: "requires": {"extra": ..., "modules": [...]}
    "tasks": {
        _T: {"target": f"{_M}:TASK", "about": "estimate the mean of n noisy draws, scored by the absolute error"},
    },
    "datasets": {
        "$dataset": {"task": _T, "target": f"{_M}:gaussian", "about": "n draws of N(mean, scale²)"},
    },
    "methods": {
        "$name": {"task": _T, "target": "implementations.$pkg:$camel",
                  "about": "the mean of the samples left after trimming a share `trim` from each end"},
        "$baseline": {"task": _T, "target": "baselines.$pkg:SampleMedian", "about": "the sample median"},
        "$trivial": {"task": _T, "target": "baselines.$pkg:ZeroGuess", "trivial": True,
                     "about": "the trivial answer: 0, the prior mean, without reading the samples"},
    },
    "metrics": {
        "$metric": {"goal": "min", "unit": "", "about": "|estimate − true mean|"},
    },
}
''')

TASK = Template('''\
"""``$task``: a method estimates the mean of noisy draws; the task scores its absolute error.

The skeleton `harness new $name` wrote: a complete, runnable task to change into yours.
"""
from __future__ import annotations

from pathlib import Path
from typing import Protocol

import numpy as np

from harness.tasks.base import Context, Task


class Estimator(Protocol):
    """What a method of ``$task`` implements (the conformance test checks every registered method)."""

    # TODO(author): the calls your methods implement, and only what the protocol lets them see
    def estimate(self, samples: np.ndarray, rng: np.random.Generator) -> float:
        """The estimate of the mean the samples were drawn around; ``rng`` is the method's only randomness."""
        ...


def gaussian(context: Context, *, n: int = 200, mean: float = 1.0, scale: float = 1.0) -> dict:
    """n draws of N(mean, scale²): keyword parameters with defaults, so a spec and its profiles can scale them."""
    # TODO(author): draw or read your data (local files under context.data_dir; DataUnavailable when they are absent)
    rng = context.rng("data")  # the same draw for every method; validation and test differ
    return {"samples": rng.normal(mean, scale, size=n), "mean": float(mean)}


class ${task_class}(Task):
    name = "$task"
    version = "1"  # bump it when the protocol changes what a number means
    metrics = ("$metric",)  # each declared with its goal and unit in catalogue.py
    protocol = Estimator

    def evaluate(self, method: Estimator, data: dict, context: Context) -> dict[str, float]:
        # TODO(author): hand the method only what the protocol allows (never the answer), and score it here
        estimate = method.estimate(data["samples"].copy(), context.rng("method"))
        return {"$metric": abs(float(estimate) - data["mean"])}

    def tiny(self, workdir: Path) -> dict[str, dict]:
        # TODO(author): small parameters per dataset, for the conformance test (files a loader reads go in workdir)
        return {"$dataset": {"n": 20}}


TASK = ${task_class}()
''')

METHOD_INIT = Template('''\
"""$camel, a method of ``$task`` (written by `harness new $name`)."""
# TODO(author): the paper this method comes from, in the docstring above (title, venue, what it does)
from implementations.$pkg._method import $camel

__all__ = ["$camel"]
''')

METHOD = Template('''\
"""The trimmed mean: the mean of the samples left after cutting a share ``trim`` from each end."""
from __future__ import annotations

import numpy as np


class $camel:
    # TODO(author): your method, its hyper-parameters as keyword arguments with defaults (a spec and Optuna set them)
    def __init__(self, trim: float = 0.0):
        self.trim = trim

    def estimate(self, samples: np.ndarray, rng: np.random.Generator) -> float:
        cut = int(self.trim * len(samples))
        kept = np.sort(samples)[cut:len(samples) - cut]
        return float(np.mean(kept))
''')

BASELINES = Template('''\
"""What ``$name`` is compared with on ``$task``: the sample median (a baseline) and 0 (the trivial answer)."""
from __future__ import annotations

import numpy as np


class SampleMedian:
    # TODO(author): the methods your method is compared with (shared between specs where possible)
    def estimate(self, samples: np.ndarray, rng: np.random.Generator) -> float:
        return float(np.median(samples))


class ZeroGuess:
    """The trivial answer: 0, the prior mean, knowing nothing of the samples a real method could not also know."""

    def estimate(self, samples: np.ndarray, rng: np.random.Generator) -> float:
        return 0.0
''')

FAMILY_SPEC = Template('''\
# yaml-language-server: $$schema=$schema
# Written by `harness new $name`: each line marked TODO(author) is yours to fill in.
spec: 1
name: $name
# TODO(author): what is compared with what, and where; add `paper: {title: ..., venue: ..., code: ...}`
title: A trimmed mean against the sample median and the trivial 0 on Gaussian draws
task: $task
datasets:
  # TODO(author): the datasets, and the parameters the claim is tested at
  - {name: $dataset, id: gaussian, params: {n: 200, mean: 1.0, scale: 1.0}}
methods:
  - name: $name
    kind: implementation
    search: {trim: {float: [0.0, 0.4]}}  # tuned on the validation split, the same budget for every method
  - {name: $baseline, kind: baseline}
  - {name: $trivial, kind: trivial}
metrics: {primary: $metric}
seeds: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]
tuning: {trials: 8, sampler: {name: tpe, args: {n_startup_trials: 4}}}
hardware: {device: cpu, threads: 1, timeout_s: 60}
claims:
  # TODO(author): the paper's claim: source: paper with its quote, and the margin that matters (margin_from)
  - id: $name-beats-trivial
    says: The trimmed mean errs less than the trivial answer 0
    better: $name
    than: $trivial
    metric: $metric
    margin: 0
    margin_from: prior
    source: harness
profiles:
  quick: {seeds: [0, 1, 2, 3, 4], tuning: {trials: 2}, datasets: {gaussian: {params: {n: 20}}}}  # CI: seconds
  default: {}  # the spec as written above: what `harness run` does without --profile
  # TODO(author): the paper's scale (its sizes and seeds; requires: data or gpu where it needs them)
  paper: {seeds: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19], tuning: {trials: 32}, datasets: {gaussian: {params: {n: 10000}}}}
''')

FAMILY_TEST = Template('''\
"""The $name spec's task and methods: their formulas pinned on numbers computed by hand."""
from __future__ import annotations

import numpy as np

from baselines.$pkg import SampleMedian, ZeroGuess
from harness.tasks.base import Context
from harness.tasks.$family.$task_file import TASK, gaussian
from implementations.$pkg import $camel


def _context(seed: int = 0) -> Context:
    return Context(seed=seed, split="test", dataset="gaussian")


def test_the_task_scores_the_absolute_error():
    # TODO(author): pin your task's metrics on a case computed by hand
    data = gaussian(_context(), n=5, mean=1.5)
    assert TASK.evaluate(ZeroGuess(), data, _context()) == {"$metric": 1.5}


def test_the_methods_on_samples_computed_by_hand():
    # TODO(author): pin your method's and baselines' formulas
    samples = np.array([0.0, 1.0, 2.0, 9.0])
    rng = np.random.default_rng(0)
    assert $camel().estimate(samples, rng) == 3.0
    assert $camel(trim=0.25).estimate(samples, rng) == 1.5
    assert SampleMedian().estimate(samples, rng) == 1.5
''')

# --- a method for an existing family (--family, --from-spec) ----------------------------------------------------

STARTED_METHOD = Template('''\
"""$camel: a method of ``$task``, implementing ``$protocol`` of ``$protocol_module``.

Written by `harness new $name` as the registered method ``$starting``, unchanged, so that it runs
as written: each call of the protocol below returns what ``$starting`` returns until its author writes it.
"""
from __future__ import annotations
$imports
from harness.registry import default_registry

# looked up by its registered name, not imported: a method never imports a baseline's code (tests/test_layering.py)
_StartingMethod = default_registry().load("methods", "$starting")


# TODO(author): your method in place of $starting: write each call below, then drop _StartingMethod from the bases
class $camel(_StartingMethod):
    """$camel (for now ``$starting``, call for call)."""

    # TODO(author): its hyper-parameters as keyword arguments with defaults in an __init__ (a spec and Optuna set them by name); $starting's now: $parameters
$calls''')

STARTED_CALL = Template('''
    def $call($arguments)$returns:
$docstring        # TODO(author): $camel's $call() in place of $starting's
        return super().$call($forwarded)
''')

METHOD_TEST = Template('''\
"""$name, a method of ``$task``: its formulas pinned on numbers computed by hand."""
from __future__ import annotations

from $module import $camel


def test_${pkg}_has_every_call_of_the_protocol():
    # TODO(author): pin the method's formulas on a case computed by hand
    method = $camel()
    for call in $calls:
        assert callable(getattr(method, call, None)), call
''')

METHOD_ROW = Template('''\
$indent# TODO(author): say in `about` what $name does (`harness list methods` shows it)
$indent"$name": {"task": "$task", "target": "$target", "about": "written by harness new"},
''')

METHOD_SPEC_HEAD = Template('''\
# yaml-language-server: $$schema=$schema
# Written by `harness new $name`$source: each line marked TODO(author) is yours to fill in.
spec: 1
name: $name
# TODO(author): what is compared with what, and where; add `paper: {title: ..., venue: ..., code: ...}`
title: $name against $than on $task
task: $task
''')

METHOD_SPEC_CLAIM = Template('''\
claims:
  # TODO(author): the paper's claim: source: paper with its quote, and the margin that matters (margin_from)
  - id: $claim_id
    says: $name does better than $than
    better: $name
    than: $than
    metric: $metric
    margin: 0
    margin_from: prior
    source: harness
''')
