"""Optuna tuning: one study per dataset × method, scored on the validation split.

The study lives in Optuna storage (a SQLite file beside the results by default), so an
interrupted run resumes its studies too. Each trial's cells run through the same worker
pool as the test cells; the best parameters are then frozen for the test split.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

from harness.plan import Cell
from harness.spec.model import DatasetEntry, MethodEntry, Spec, stable_hash


@dataclass
class TuningOutcome:
    params: dict[str, Any]
    best_value: float | None
    trials_done: int
    error: str | None = None  # set when no trial succeeded


def sampler_class(name: str):
    import optuna

    return {
        "tpe": optuna.samplers.TPESampler,
        "random": optuna.samplers.RandomSampler,
        "cmaes": optuna.samplers.CmaEsSampler,
        "qmc": optuna.samplers.QMCSampler,
        "gp": optuna.samplers.GPSampler,
    }[name]


def make_sampler(spec: Spec):
    import warnings

    import optuna

    with warnings.catch_warnings():
        # QMC and GP samplers are flagged experimental; the spec chose one on purpose
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        return sampler_class(spec.tuning.sampler)(seed=spec.tuning.sampler_seed, **spec.tuning.sampler_args)


def suggest(trial, name: str, space: dict[str, Any]) -> Any:
    if "float" in space:
        low, high = space["float"]
        return trial.suggest_float(name, low, high, log=space.get("log", False), step=space.get("step"))
    if "int" in space:
        low, high = space["int"]
        return trial.suggest_int(name, low, high, log=space.get("log", False), step=space.get("step", 1))
    return trial.suggest_categorical(name, space["choice"])


def study_name(spec: Spec, dataset: DatasetEntry, method: MethodEntry) -> str:
    fingerprint = stable_hash({
        "dataset": [dataset.name, dataset.params], "method": [method.name, method.params, method.search],
        "tuning": [spec.tuning.sampler, spec.tuning.sampler_args, list(spec.tuning.seeds), spec.tuning.sampler_seed],
        "metric": spec.primary_metric, "profile": spec.profile, "task": spec.task,
    })[:12]
    return f"{spec.name}/{dataset.id}/{method.id}/{fingerprint}"


def tune(spec: Spec, dataset: DatasetEntry, method: MethodEntry, storage: str, goal: str,
         run_cells: Callable[[list[Cell]], list[dict]], make_cell: Callable[[dict, int], Cell],
         on_start: Callable[[int], None]) -> TuningOutcome:
    """Run the remaining trials of this pair's study; return the best frozen params."""
    import optuna
    from optuna.trial import TrialState

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(
        study_name=study_name(spec, dataset, method), storage=storage, load_if_exists=True,
        direction="maximize" if goal == "max" else "minimize", sampler=make_sampler(spec),
    )
    for trial in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        # left RUNNING by a run that was killed; this run holds the results lock, so it is stale
        study.tell(trial.number, state=TrialState.FAIL)
    done = len(study.get_trials(deepcopy=False, states=(TrialState.COMPLETE, TrialState.FAIL, TrialState.PRUNED)))
    last_error = None
    remaining = max(0, spec.tuning.trials - done)
    on_start(remaining)
    for _ in range(remaining):
        trial = study.ask()
        params = dict(method.params)
        params.update({name: suggest(trial, name, space) for name, space in method.search.items()})
        results = run_cells([make_cell(params, seed) for seed in spec.tuning.seeds])
        values = [r["metrics"].get(spec.primary_metric) for r in results if r["status"] == "ok"]
        if len(values) == len(results) and all(v is not None and math.isfinite(v) for v in values):
            study.tell(trial, sum(values) / len(values))
        else:
            failed = next((r for r in results if r["status"] != "ok"), None)
            last_error = f"{failed['status']}: {failed['error']}" if failed else f"no {spec.primary_metric!r} metric"
            trial.set_user_attr("error", last_error)
            study.tell(trial, state=TrialState.FAIL)
    complete = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    total = len(study.get_trials(deepcopy=False))
    if not complete:
        if last_error is None:
            failed = study.get_trials(deepcopy=False, states=(TrialState.FAIL,))
            last_error = failed[-1].user_attrs.get("error", "unknown") if failed else "no trial ran"
        return TuningOutcome(dict(method.params), None, total, f"tuning failed: all {total} trials failed (last: {last_error})")
    best = study.best_trial
    params = dict(method.params)
    params.update(best.params)
    return TuningOutcome(params, best.value, total)
