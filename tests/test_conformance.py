"""Every registered method runs on every dataset of its task, at the task's tiny configuration.

New tasks, datasets and methods are picked up from the catalogue: registering a name is
enough to be tested here.
"""
from __future__ import annotations

import inspect
import math
import pytest

from harness.execute import execute_cell
from harness.registry import default_registry, import_target, metrics

REGISTRY = default_registry()
PAIRS = [
    (method, dataset)
    for method in REGISTRY.names("methods")
    for dataset in REGISTRY.names("datasets", REGISTRY.entry("methods", method).task)
]

# Tasks whose cells leave out a metric where it has no value (every other task returns every metric), and tasks
# whose trivial answers (catalogue "trivial": true) implement a protocol of their own. Kept here, not on the tasks,
# because a task's source is in its cells' fingerprint: move them onto causal.pairwise when it is next run again.
OPTIONAL_METRICS = {
    # a class's F1 where the class is true or answered on some pair; blankets where a local method found one;
    # times on the timed (Gaussian) datasets
    "causal.pairwise": ("f1_explicit", "f1_implicit", "f1_possible", "f1_non_ancestor", "blanket_recall",
                        "blanket_precision", "seconds", "seconds_cpu", "seconds_spread"),
    # the distance to the preferred point and whether the end lies on the front, where the dataset knows the Pareto
    # set (the toy, not the network)
    "moo.preference": ("preferred_distance", "on_front"),
    # precision, recall and the true density's NLL where the density is known (the mixtures); the classifier's
    # distance and confidence on the digits; the scoring images' NLL where the model's likelihood is exact
    # the training objectives of the arms that train, and of the initial policy the toy's arms start from
    "codegen.execution_feedback": ("train_return", "initial_log_likelihood"),
    "generative.finetune": ("precision", "recall", "sample_nll", "frechet_distance", "classifier_confidence",
                            "data_nll"),
}


def _pairwise_trivial():
    from harness.tasks.causal.pairwise import TrivialAnswer

    return TrivialAnswer


TRIVIAL_PROTOCOLS = {"causal.pairwise": _pairwise_trivial}
# (method, dataset) → a word of the line the skipped cell carries: sanity rows that only simulated data can give,
# trivial answers of one kind of data (a Gaussian of continuous data, independent pixels of binary ones)
EXPECTED_SKIPS = {("oracle", "hest-1k"): "simulated", ("independent", "sensor-periods"): "zero-shot",
                  **{("local-model", d): "no model endpoint" for d in ("bf-copy", "bf-print", "bf-sort", "befunge-print",
                                                                      "befunge-fibonacci", "befunge-factorial")},
                  ("gaussian-fit", "binary-digits-64"): "binary",
                  **{(m, "python-problems"): "policy of the hidden-constants" for m in (
                      "rlef", "initial-independent", "initial-multi-turn", "shuffled-feedback-rl", "single-turn-ppo",
                      "rlef-single-turn")},
                  ("reference-solutions", "hidden-constants"): "python-problems only",
                  ("served-model", "hidden-constants"): "acts on python-problems",
                  ("served-model", "python-problems"): "no model endpoint",
                  **{("independent-pixels", d): "binary" for d in ("ring-8", "grid-25", "digits-64")}}


@pytest.mark.parametrize("task_name", REGISTRY.names("tasks"))
def test_task_declares_its_contract(task_name, tmp_path):
    from harness import Task

    task = REGISTRY.load("tasks", task_name)
    assert isinstance(task, Task)
    assert isinstance(task.name, str) and task.name == task_name
    assert isinstance(task.version, str) and task.version
    assert task.framework in (None, "torch")
    assert getattr(task.protocol, "_is_protocol", False), "protocol is a typing.Protocol"
    assert set(task.metrics) <= set(metrics()), "every metric a task reports is declared in a catalogue"
    assert set(OPTIONAL_METRICS.get(task_name, ())) <= set(task.metrics), "an optional metric is one of the task's"
    assert set(task.tiny(tmp_path)) == set(REGISTRY.names("datasets", task_name)), "a tiny configuration per dataset"


@pytest.mark.parametrize("kind", ["datasets", "methods"])
def test_parameters_are_keyword_with_defaults(kind):
    for name in REGISTRY.names(kind):
        obj = REGISTRY.load(kind, name)
        func = obj.__init__ if inspect.isclass(obj) else obj
        params = list(inspect.signature(func).parameters.values())[1:]  # self, or a loader's context
        for p in params:
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                continue  # object.__init__ of a method without parameters
            assert p.default is not inspect.Parameter.empty, f"{kind[:-1]} {name}: {p.name} needs a default"
            assert p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD), f"{name}: {p.name}"


@pytest.mark.parametrize("method, dataset", PAIRS, ids=[f"{m}@{d}" for m, d in PAIRS])
def test_method_runs_on_tiny_dataset(method, dataset, tmp_path):
    entry = REGISTRY.entry("methods", method)
    task = REGISTRY.load("tasks", entry.task)
    cls = import_target(entry.target)
    protocol = TRIVIAL_PROTOCOLS[entry.task]() if entry.trivial and entry.task in TRIVIAL_PROTOCOLS else task.protocol
    protocol_methods = [n for n in vars(protocol) if not n.startswith("_") and callable(getattr(protocol, n))]
    for name in protocol_methods:
        assert callable(getattr(cls, name, None)), f"{method} lacks {name}() of {protocol.__name__}"
    result = execute_cell({
        "task": entry.task, "dataset_id": dataset, "dataset_name": dataset, "dataset_params": task.tiny(tmp_path)[dataset],
        "method_name": method, "params": {}, "seed": 0, "split": "val", "device": "cpu", "threads": 1,
        "timeout_s": 60, "data_dir": None,
    })
    if (method, dataset) in EXPECTED_SKIPS:
        assert result["status"] == "skipped" and EXPECTED_SKIPS[method, dataset] in result["error"], result
        return
    assert result["status"] == "ok", result.get("traceback") or result["error"]
    optional = set(OPTIONAL_METRICS.get(entry.task, ()))
    assert set(task.metrics) - optional <= set(result["metrics"]) <= set(task.metrics)
    assert all(math.isfinite(v) for v in result["metrics"].values())
