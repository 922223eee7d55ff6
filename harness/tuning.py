"""Optuna tuning: one study per dataset × method, scored on the validation split.

The study lives in Optuna storage (a SQLite file beside the results by default, any RDB
URL, or a journal file), so an interrupted run resumes its studies too. The orchestrator
advances every study of a spec at once through the executor (:class:`StudyRun`): each
asks ``tuning.batch`` trials at a time (TPE with the constant liar, so the trials of a
batch spread out), and a batch is told back only when all of it finished. Every study has
its own seeded sampler, so the parameters found do not depend on ``--jobs`` or on the
order in which cells finish. The best parameters are then frozen for the test split.

Stale trials (left RUNNING by a run that was killed) are failed in two ways, neither of
which touches another machine's live trial: through Optuna's heartbeat on RDB storages
(a trial whose heartbeat stopped for ``GRACE_S``), and at once when the process that
owned the trial ran on this machine and is gone.
"""
from __future__ import annotations

import math
import os
import socket
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from harness.plan import Cell
from harness.spec.model import DatasetEntry, MethodEntry, Spec, stable_hash

HEARTBEAT_S = 10  # a running trial's heartbeat, on storages that support it
GRACE_S = 60  # a trial whose heartbeat is older than this is stale
OWNER_ATTR = "harness_owner"


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


def sampler_arguments(spec: Spec) -> dict[str, Any]:
    """The spec's sampler arguments, with TPE's constant liar on for batches unless the spec says otherwise."""
    args = dict(spec.tuning.sampler_args)
    if spec.tuning.sampler == "tpe" and spec.tuning.batch > 1:
        args.setdefault("constant_liar", True)
    return args


def make_sampler(spec: Spec):
    import warnings

    import optuna

    with warnings.catch_warnings():
        # QMC and GP samplers are flagged experimental; the spec chose one on purpose
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        return sampler_class(spec.tuning.sampler)(seed=spec.tuning.sampler_seed, **sampler_arguments(spec))


@contextmanager
def _quiet():
    """Optuna flags the heartbeat as experimental and warns when it is used without
    ``Study.optimize``; this module records heartbeats itself, on purpose."""
    import warnings

    import optuna

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        warnings.filterwarnings("ignore", message="Heartbeat of storage is supposed to be used with Study.optimize")
        yield


def open_storage(storage: str | None, folder: Path):
    """An Optuna storage: the folder's SQLite file by default, an RDB URL, or a journal-file path.

    RDB storages get a heartbeat (see :data:`HEARTBEAT_S`). A journal file suits several
    processes on one machine; for several machines use a PostgreSQL URL.
    """
    import optuna

    if storage is None:
        storage = f"sqlite:///{(Path(folder) / 'optuna.db').resolve()}"
    if "://" in storage:
        with _quiet():
            return optuna.storages.RDBStorage(storage, heartbeat_interval=HEARTBEAT_S, grace_period=GRACE_S)
    from optuna.storages.journal import JournalFileBackend

    path = Path(storage).expanduser()
    path.parent.mkdir(parents=True, exist_ok=True)
    return optuna.storages.JournalStorage(JournalFileBackend(str(path)))


def suggest(trial, name: str, space: dict[str, Any]) -> Any:
    if "float" in space:
        low, high = space["float"]
        return trial.suggest_float(name, low, high, log=space.get("log", False), step=space.get("step"))
    if "int" in space:
        low, high = space["int"]
        return trial.suggest_int(name, low, high, log=space.get("log", False), step=space.get("step", 1))
    return trial.suggest_categorical(name, space["choice"])


def study_name(spec: Spec, dataset: DatasetEntry, method: MethodEntry, code: dict[str, str] | None = None) -> str:
    """The study's name in the storage: a changed space, sampler, budget or code starts a new study."""
    fingerprint = stable_hash({
        "dataset": [dataset.name, dataset.params], "method": [method.name, method.params, method.search],
        "tuning": [spec.tuning.sampler, spec.tuning.sampler_args, list(spec.tuning.seeds), spec.tuning.sampler_seed],
        "metric": spec.primary_metric, "profile": spec.profile, "task": spec.task,
        "batch": spec.tuning.batch, "code": code or {},
    })[:12]
    return f"{spec.name}/{dataset.id}/{method.id}/{fingerprint}"


def owner_id(pid: int | None = None) -> str:
    """host:pid:start — who runs a trial; the start time tells a reused pid from the original."""
    pid = os.getpid() if pid is None else pid
    return f"{socket.gethostname()}:{pid}:{_process_start(pid)}"


def _process_start(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return "?"


def _owner_is_gone(owner: str) -> bool:
    host, _, rest = owner.partition(":")
    pid, _, start = rest.partition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return False  # another machine's trial: only its heartbeat can tell
    return not Path(f"/proc/{pid}").exists() or _process_start(int(pid)) != start


class StudyRun:
    """One dataset × method study, advanced one batch of trials at a time by the orchestrator."""

    def __init__(self, spec: Spec, dataset: DatasetEntry, method: MethodEntry, storage, goal: str,
                 code: dict[str, str], make_cell: Callable[[dict, int], Cell]):
        self.spec, self.dataset, self.method, self.code = spec, dataset, method, code
        self.storage, self.goal, self.make_cell = storage, goal, make_cell
        self.study = None
        self.remaining = 0
        self.running: dict[int, Any] = {}  # trial number → trial, asked and not yet told
        self.last_error: str | None = None

    def start(self) -> int:
        """Open the study, fail its stale trials, and return how many trials are left to run."""
        import optuna
        from optuna.trial import TrialState

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        with _quiet():
            self.study = optuna.create_study(
                study_name=study_name(self.spec, self.dataset, self.method, self.code), storage=self.storage,
                load_if_exists=True, direction="maximize" if self.goal == "max" else "minimize",
                sampler=make_sampler(self.spec),
            )
            if _has_heartbeat(self.storage):
                optuna.storages.fail_stale_trials(self.study)
        for trial in self.study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
            owner = trial.user_attrs.get(OWNER_ATTR)
            if owner is not None and _owner_is_gone(owner):
                self.study.tell(trial.number, state=TrialState.FAIL)
        counted = (TrialState.COMPLETE, TrialState.FAIL, TrialState.PRUNED, TrialState.RUNNING)
        self.remaining = max(0, self.spec.tuning.trials - len(self.study.get_trials(deepcopy=False, states=counted)))
        return self.remaining

    @property
    def waiting(self) -> bool:
        """A batch is out: the next one is asked only after it is told."""
        return bool(self.running)

    @property
    def finished(self) -> bool:
        return self.remaining == 0 and not self.running

    def ask_batch(self) -> list[tuple[int, list[Cell]]]:
        """Up to ``tuning.batch`` new trials, each with its cells (one per validation seed)."""
        batch = []
        owner = owner_id()
        for _ in range(min(self.spec.tuning.batch, self.remaining)):
            with _quiet():
                trial = self.study.ask()
            trial.set_user_attr(OWNER_ATTR, owner)
            self.beat(trial)
            params = dict(self.method.params)
            params.update({name: suggest(trial, name, space) for name, space in self.method.search.items()})
            self.running[trial.number] = trial
            self.remaining -= 1
            batch.append((trial.number, [self.make_cell(params, seed) for seed in self.spec.tuning.seeds]))
        return batch

    def tell(self, results: dict[int, list[dict]]) -> None:
        """Tell the whole batch, in trial order: trial number → its cells' results."""
        from optuna.trial import TrialState

        metric = self.spec.primary_metric
        for number in sorted(results):
            trial = self.running.pop(number)
            cells = results[number]
            values = [r["metrics"].get(metric) for r in cells if r["status"] == "ok"]
            if len(values) == len(cells) and all(v is not None and math.isfinite(v) for v in values):
                self.study.tell(trial, sum(values) / len(values))
            else:
                failed = next((r for r in cells if r["status"] != "ok"), None)
                self.last_error = f"{failed['status']}: {failed['error']}" if failed else f"no {metric!r} metric"
                trial.set_user_attr("error", self.last_error)
                self.study.tell(trial, state=TrialState.FAIL)

    def beat(self, trial=None) -> None:
        """Record a heartbeat for the running trials (storages with a heartbeat only)."""
        if not _has_heartbeat(self.storage):
            return
        for running in [trial] if trial is not None else self.running.values():
            self.storage.record_heartbeat(running._trial_id)

    def outcome(self) -> TuningOutcome:
        from optuna.trial import TrialState

        complete = self.study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
        total = len(self.study.get_trials(deepcopy=False))
        if not complete:
            error = self.last_error
            if error is None:
                failed = self.study.get_trials(deepcopy=False, states=(TrialState.FAIL,))
                error = failed[-1].user_attrs.get("error", "unknown") if failed else "no trial ran"
            return TuningOutcome(dict(self.method.params), None, total,
                                 f"tuning failed: all {total} trials failed (last: {error})")
        best = self.study.best_trial
        params = dict(self.method.params)
        params.update(best.params)
        return TuningOutcome(params, best.value, total)


def _has_heartbeat(storage) -> bool:
    # Optuna exports no public name for "a storage with a heartbeat"; RDBStorage is the one today
    from optuna.storages._heartbeat import BaseHeartbeat

    return isinstance(storage, BaseHeartbeat) and storage.get_heartbeat_interval() is not None
