"""Optuna tuning: one study per dataset × method, scored on the validation split.

The study lives in Optuna storage (a SQLite file beside the results by default, any RDB
URL, or a journal file), so an interrupted run resumes its studies too. The orchestrator
advances every study of a spec at once through the executor (:class:`StudyRun`): each
asks ``tuning.batch`` trials at a time (TPE with the constant liar, so the trials of a
batch spread out), and a batch is told back only when all of it finished. Every study has
its own seeded sampler, so the parameters found do not depend on ``--jobs`` or on the
order in which cells finish. The best parameters are then frozen for the test split.

Tuning resumes exactly: a run stopped by Ctrl-C or killed, then resumed, tunes to what an
uninterrupted run tunes to.

- An interrupted trial is one left RUNNING that no run runs: marked so by the run that
  stopped, owned by a process of this machine that is gone, or, on RDB storages, with a
  heartbeat older than ``GRACE_S`` (another machine's live trial is never touched). It is
  run again under its own number with its own params, before any new trial, so the study
  ends with the trials an uninterrupted run has. It is not failed and re-enqueued: a new
  trial would move the QMC sampler along its sequence and change CMA-ES's seeds, which
  include the trial number.
- The budget counts trials that ran to their end (a FAIL only when the method failed) or
  run now, never interrupted ones.
- The sampler is saved with each trial once its params are drawn (:data:`SAMPLER_ATTR`),
  and a resumed run continues from the newest, so the draws depend only on the seed and the
  trials before them, whatever the sampler (GP's fitted kernels included).

What stays inexact: a SIGKILL while a trial's params are drawn (Ctrl-C waits for the ask
to end) fails that trial, uncounted, and its draw is made again from the saved sampler:
the same params, except with QMC and CMA-ES, for the reasons above.
"""
from __future__ import annotations

import math
import os
import socket
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from harness.optuna_private import has_heartbeat, restored_sampler, sampler_state, stale_trial_numbers
from harness.plan import Cell
from harness.samplers import make_sampler
from harness.spec.model import DatasetEntry, MethodEntry, Spec, stable_hash

HEARTBEAT_S = 10  # a running trial's heartbeat, on storages that support it
GRACE_S = 60  # a trial whose heartbeat is older than this is stale
OWNER_ATTR = "harness_owner"  # host:pid:start of the process running the trial
INTERRUPTED_ATTR = "harness_interrupted"  # the run that ran the trial stopped before it was told
ERROR_ATTR = "error"  # why the method failed the trial: such a FAIL counts toward the budget
SAMPLER_ATTR = "harness:sampler"  # the sampler just after the trial's params were drawn (a finished ask)
OVER_BUDGET_ATTR = "harness_over_budget"  # asked after other processes had used up the budget: failed unrun, uncounted
SEED_VALUES_ATTR = "harness:seed_values"  # a completed trial's [[seed, its tuning metric], ...], in tuning.seeds order


@dataclass
class TuningOutcome:
    params: dict[str, Any]
    best_value: float | None
    trials_done: int
    error: str | None = None  # set when no trial succeeded


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
        _check_sqlite_path(storage)
        try:
            opened = _rdb_storage(storage)
            _WHERE[id(opened)] = _without_password(storage)
            return opened
        except ImportError:
            raise StorageError(f"--storage {_without_password(storage)}: no database driver for this URL here; for "
                               "PostgreSQL: pip install 'harness[cluster]' (psycopg)") from None
        except Exception as exc:  # SQLAlchemy's errors: a wrong URL, a server that is down or refuses the user
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise StorageError(f"--storage {_without_password(storage)}: cannot open the Optuna storage: {first}") from None
    from optuna.storages.journal import JournalFileBackend

    path = Path(storage).expanduser()
    if path.is_dir():
        raise StorageError(f"--storage {storage}: is a folder; give a file for the journal (e.g. {path / 'optuna.log'}) "
                           "or a database URL (sqlite:///path.db)")
    _check_writable(storage, path)
    try:
        opened = optuna.storages.JournalStorage(JournalFileBackend(str(path)))
        _WHERE[id(opened)] = str(path)
        return opened
    except OSError as exc:
        raise StorageError(f"--storage {storage}: cannot open the journal file ({exc.strerror or exc})") from None


def _check_writable(storage: str, path: Path) -> None:
    """Refuse, in one line, a file that cannot be created or appended to: under a file, in a read-only place."""
    above = next((p for p in path.parents if p.exists()), None)
    if above is not None and not above.is_dir():
        raise StorageError(f"--storage {storage}: {above} is a file, not a folder; give a path in a folder")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        os.close(os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644))
    except OSError as exc:
        raise StorageError(f"--storage {storage}: cannot write {path} ({exc.strerror or exc}); give a writable "
                           "path") from None


def _check_sqlite_path(url: str) -> None:
    """A SQLite URL's file: refused in one line where it is a folder, or its folder does not exist."""
    if not url.startswith("sqlite:///"):
        return
    name = url[len("sqlite:///"):].split("?", 1)[0]
    if not name or name == ":memory:":
        return
    path = Path(name).expanduser()
    if path.is_dir():
        raise StorageError(f"--storage {url}: {path} is a folder; name the database file in it (e.g. "
                           f"sqlite:///{path / 'optuna.db'})")
    if path.parent.exists() and not path.parent.is_dir():
        raise StorageError(f"--storage {url}: {path.parent} is a file, not a folder; give a database file in a folder")
    if not path.parent.is_dir():
        raise StorageError(f"--storage {url}: the folder {path.parent} does not exist; create it, or give a database "
                           "file in an existing folder")
    if path.exists() and not os.access(path, os.W_OK):
        raise StorageError(f"--storage {url}: {path} is read-only; give a writable database file")


def _rdb_storage(url: str, attempts: int = 5):
    """Optuna's RDBStorage; a new database's tables are created by the first process that opens it, and a
    second process doing so at the same moment collides with it (a unique violation, or on PostgreSQL a table
    that "already exists" by the time its CREATE TABLE runs): it then tries again, and finds them."""
    import time

    import optuna
    from sqlalchemy.exc import IntegrityError, ProgrammingError

    for attempt in range(attempts):
        try:
            with _quiet():
                return optuna.storages.RDBStorage(url, heartbeat_interval=HEARTBEAT_S, grace_period=GRACE_S)
        except (IntegrityError, ProgrammingError) as exc:
            collided = isinstance(exc, IntegrityError) or "already exists" in str(exc)
            if not collided or attempt == attempts - 1:
                raise
            time.sleep(0.5 * (attempt + 1))


class StorageError(ValueError):
    """The --storage given cannot be opened (no driver, no server, a malformed URL)."""


def _without_password(url: str) -> str:
    """The URL as an error message may show it: a password in it is replaced by ***."""
    import re

    return re.sub(r"(://[^:/@]+):[^@/]*@", r"\1:***@", url)


def suggest(trial, name: str, space: dict[str, Any]) -> Any:
    if "float" in space:
        low, high = space["float"]
        return trial.suggest_float(name, low, high, log=space.get("log", False), step=space.get("step"))
    if "int" in space:
        low, high = space["int"]
        return trial.suggest_int(name, low, high, log=space.get("log", False), step=space.get("step", 1))
    return trial.suggest_categorical(name, space["choice"])


def study_name(spec: Spec, dataset: DatasetEntry, method: MethodEntry, code: dict[str, str] | None = None) -> str:
    """The study's name in the storage: a changed space, sampler, budget, tuning metric or code starts a new study.

    The metric is the dataset's tuning metric (:meth:`Spec.tuning_metric`), which is the primary one unless the spec
    says otherwise: the name of a pair tuned on the primary metric is what it was before tuning metrics could differ,
    so the studies that ``tuning.json`` entries name keep freezing their pairs."""
    fingerprint = stable_hash({
        "dataset": [dataset.name, dataset.params], "method": [method.name, method.params, method.search],
        "tuning": [spec.tuning.sampler, spec.tuning.sampler_args, list(spec.tuning.seeds), spec.tuning.sampler_seed],
        "metric": spec.tuning_metric(dataset), "profile": spec.profile, "task": spec.task,
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


def _storage_writes(method):
    """``method`` of :class:`StudyRun`, with a storage that cannot be written (a full disk: SQLite's "database or disk
    is full", the journal's ENOSPC) raised as :class:`harness.store.WriteFailed`, one line naming the storage."""
    import functools

    @functools.wraps(method)
    def guarded(self, *args, **kwargs):
        from harness.store import WriteFailed, no_space, write_failed

        try:
            return method(self, *args, **kwargs)
        except WriteFailed:
            raise
        except Exception as exc:  # noqa: BLE001 - Optuna wraps SQLAlchemy's errors in its own
            if no_space(exc):
                raise write_failed(f"the Optuna storage {_where(self.storage)}", exc) from None
            raise
    return guarded


_WHERE: dict[int, str] = {}  # id of a storage open_storage opened → its URL or journal file, as messages name it


def _where(storage) -> str:
    """Where a storage keeps its trials, as a message names it."""
    return _WHERE.get(id(storage), type(storage).__name__)


class StudyRun:
    """One dataset × method study, advanced one batch of trials at a time by the orchestrator."""

    def __init__(self, spec: Spec, dataset: DatasetEntry, method: MethodEntry, storage, goal: str,
                 code: dict[str, str], make_cell: Callable[[dict, int], Cell]):
        self.spec, self.dataset, self.method, self.code = spec, dataset, method, code
        self.storage, self.goal, self.make_cell = storage, goal, make_cell
        self.study = None
        self.remaining = 0  # new trials still to ask
        self.interrupted: list = []  # frozen trials an earlier run left unfinished, to run again first
        self.running: dict[int, int] = {}  # trial number → trial id, asked and not yet told
        self.study_id: int | None = None
        self._ids: dict[int, int] = {}  # trial number → trial id (the storage's, for its attrs), as looked up
        self.last_error: str | None = None
        self._last_draw = -1  # the number of the newest trial whose params this run drew or restored

    @_storage_writes
    def start(self) -> int:
        """Open the study, take over its interrupted trials, and return how many trials are left to run."""
        import optuna

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        with _quiet():
            self.study = optuna.create_study(
                study_name=study_name(self.spec, self.dataset, self.method, self.code), storage=self.storage,
                load_if_exists=True, direction="maximize" if self.goal == "max" else "minimize",
                sampler=make_sampler(self.spec),
            )
            self._label()
        self.study_id = self.storage.get_study_id_from_name(self.study.study_name)
        self._take_over_interrupted()
        self._restore_sampler()
        self.remaining = max(0, self.spec.tuning.trials - len(self._counted()))
        return self.remaining + len(self.interrupted)

    def _label(self) -> None:
        """Name the study's metric and what it tunes, for optuna-dashboard. The study's name fixes all of it, so a
        reopened study is written to only where it predates the labels; nothing hashed or in the results reads them."""
        metric = self.spec.tuning_metric(self.dataset)
        if self.study.metric_names != [metric]:
            self.study.set_metric_names([metric])  # experimental in Optuna: _quiet silences its warning
        labels = {"spec": self.spec.name, "profile": self.spec.profile, "dataset": self.dataset.id,
                  "method": self.method.id, "metric": metric, "goal": self.goal}
        written = self.study.user_attrs
        for key, value in labels.items():
            if written.get(key) != value:
                self.study.set_user_attr(key, value)

    def _take_over_interrupted(self) -> None:
        """Take the study's interrupted trials (see :func:`_was_interrupted`) into ``self.interrupted``."""
        from optuna.trial import TrialState

        # Optuna's fail_stale_trials would fail them; these are run again instead
        stale = stale_trial_numbers(self.storage, self.study_id)
        owner = owner_id()
        ours = set(self.running) | {trial.number for trial in self.interrupted}
        with _ctrl_c_deferred():  # a trial taken over is in self.interrupted, where stop() finds it
            for trial in self.study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
                if trial.number in ours or not _was_interrupted(trial, stale):
                    continue  # ours already, or another run's live trial: left to it
                trial_id = self._trial_id(trial.number)
                if SAMPLER_ATTR in trial.system_attrs and set(self.method.search) <= set(trial.params):
                    self.storage.set_trial_user_attr(trial_id, OWNER_ATTR, owner)
                    self.storage.set_trial_user_attr(trial_id, INTERRUPTED_ATTR, False)
                    self.beat(trial_id)
                    self.interrupted.append(trial)
                else:  # stopped while its params were drawn: nothing of it ran, and its draw is made again
                    self.storage.set_trial_user_attr(trial_id, INTERRUPTED_ATTR, True)
                    self.study.tell(trial.number, state=TrialState.FAIL, skip_if_finished=True)

    @_storage_writes
    def others_running(self) -> bool:
        """Done here, while another process (a second `harness run` on this storage) still runs trials of the study.

        Its trials count toward the budget and may be the best: the study's params are chosen only when
        they are told, or, if their process is gone, after they are taken over and run here
        (:meth:`refresh`)."""
        from optuna.trial import TrialState

        return self.finished and bool(self.study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)))

    @_storage_writes
    def refresh(self) -> int:
        """Take over the trials that other processes left interrupted, and see what budget is left; returns
        how many trials that adds here."""
        before = self.remaining + len(self.interrupted)
        self._take_over_interrupted()
        self.remaining = max(0, self.spec.tuning.trials - len(self._counted()))
        return self.remaining + len(self.interrupted) - before

    @property
    def waiting(self) -> bool:
        """A batch is out: the next one is asked only after it is told."""
        return bool(self.running)

    @property
    def finished(self) -> bool:
        return self.remaining == 0 and not self.interrupted and not self.running

    @_storage_writes
    def ask_batch(self) -> list[tuple[int, list[Cell]]]:
        """Up to ``tuning.batch`` trials, each with its cells (one per validation seed): interrupted trials
        first, in their order, then new ones."""
        size = self.spec.tuning.batch
        owner = owner_id()
        # Ctrl-C waits: a trial's params and its saved sampler are written together. A trial is in
        # self.running from its ask on, where stop() finds it if anything else stops the run
        with _ctrl_c_deferred():
            again, self.interrupted = self.interrupted[:size], self.interrupted[size:]
            batch = [(trial.number, trial.params) for trial in again]
            self.running.update((trial.number, self._trial_id(trial.number)) for trial in again)
            for _ in range(0 if self.interrupted else min(size - len(again), self.remaining)):
                self._follow_other_processes()
                with _quiet():
                    trial = self.study.ask()
                if self._over_budget(trial):
                    break
                trial_id = self.running[trial.number] = self._trial_id(trial.number)
                self.remaining -= 1
                self.storage.set_trial_user_attr(trial_id, OWNER_ATTR, owner)
                self.beat(trial_id)
                drawn = {name: suggest(trial, name, space) for name, space in self.method.search.items()}
                self.storage.set_trial_system_attr(trial_id, SAMPLER_ATTR, sampler_state(self.study.sampler))
                self._last_draw = trial.number
                batch.append((trial.number, drawn))
        cells = []
        for number, drawn in batch:
            params = dict(self.method.params)
            params.update({name: drawn[name] for name in self.method.search})
            cells.append((number, [self.make_cell(params, seed) for seed in self.spec.tuning.seeds]))
        return cells

    @_storage_writes
    def tell(self, results: dict[int, list[dict]]) -> None:
        """Tell the whole batch, in trial order: trial number → its cells' results."""
        from optuna.trial import TrialState

        metric = self.spec.tuning_metric(self.dataset)
        with _ctrl_c_deferred():  # a trial leaves self.running only once it is told
            for number in sorted(results):
                cells = results[number]
                values = [r["metrics"].get(metric) for r in cells if r["status"] == "ok"]
                if len(values) == len(cells) and all(v is not None and math.isfinite(v) for v in values):
                    # the mean is what the study ranks; each seed's own value says whether another seed agrees
                    self.storage.set_trial_user_attr(self.running[number], SEED_VALUES_ATTR,
                                                     [[seed, value] for seed, value in zip(self.spec.tuning.seeds, values)])
                    self.study.tell(number, sum(values) / len(values), skip_if_finished=True)
                else:
                    failed = next((r for r in cells if r["status"] != "ok"), None)
                    self.last_error = f"{failed['status']}: {failed['error']}" if failed else f"no {metric!r} metric"
                    self.storage.set_trial_user_attr(self.running[number], ERROR_ATTR, self.last_error)
                    self.study.tell(number, state=TrialState.FAIL, skip_if_finished=True)
                del self.running[number]

    @_storage_writes
    def stop(self) -> None:
        """The run stops with trials unfinished: mark them interrupted, for the next run to redo."""
        with _ctrl_c_deferred():  # a second Ctrl-C (or a signal sent to the process and its group) waits
            for trial_id in [*self.running.values(), *(self._trial_id(trial.number) for trial in self.interrupted)]:
                self.storage.set_trial_user_attr(trial_id, INTERRUPTED_ATTR, True)

    @_storage_writes
    def beat(self, trial_id: int | None = None) -> None:
        """Record a heartbeat for the running trials (storages with a heartbeat only)."""
        if not has_heartbeat(self.storage):
            return
        for running in [trial_id] if trial_id is not None else self.running.values():
            self.storage.record_heartbeat(running)

    def _trial_id(self, number: int) -> int:
        """The storage's id of trial ``number`` of this study, which its attrs are written under."""
        if number not in self._ids:
            self._ids[number] = self.storage.get_trial_id_from_study_id_trial_number(self.study_id, number)
        return self._ids[number]

    @_storage_writes
    def outcome(self) -> TuningOutcome:
        from optuna.trial import TrialState

        complete = self.study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
        done = len(self._counted())
        if not complete:
            error = self.last_error
            if error is None:
                failed = [t for t in self._counted() if t.state == TrialState.FAIL]
                error = failed[-1].user_attrs.get(ERROR_ATTR, "unknown") if failed else "no trial ran"
            return TuningOutcome(dict(self.method.params), None, done,
                                 f"tuning failed: all {done} trials failed (last: {error})")
        best = self.study.best_trial
        params = dict(self.method.params)
        params.update(best.params)
        return TuningOutcome(params, best.value, done)

    @_storage_writes
    def summary(self) -> dict[str, Any] | None:
        """What ``tuning.json`` says of this pair (see :func:`seed_stability`); None when no trial completed."""
        from optuna.trial import TrialState

        complete = self.study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
        if not complete:
            return None
        return {"dataset": self.dataset.id, "method": self.method.id, "code": self.code,
                "spec_hash": self.spec.spec_hash, "study": self.study.study_name,
                "metric": self.spec.tuning_metric(self.dataset), "goal": self.goal,
                **seed_stability(complete, self.study.best_trial.number, list(self.method.search), self.goal)}

    def _counted(self) -> list:
        """The trials that use up the budget: those that ran to their end, or run now here or elsewhere.

        A FAIL counts when the method failed (it carries :data:`ERROR_ATTR`), never when a run stopped.
        """
        from optuna.trial import TrialState

        return [t for t in self.study.get_trials(deepcopy=False)
                if t.state in (TrialState.COMPLETE, TrialState.PRUNED, TrialState.RUNNING)
                or (t.state == TrialState.FAIL and ERROR_ATTR in t.user_attrs)]

    def _over_budget(self, trial) -> bool:
        """Whether the trial just asked lies beyond the budget, because other processes asked the rest meanwhile.

        The storage numbers a study's trials in the order they are asked, whoever asks, so the trials
        that use up the budget are those with the lowest numbers: a trial with the whole budget before
        it is failed at once, never run, and not counted (it carries :data:`OVER_BUDGET_ATTR`)."""
        from optuna.trial import TrialState

        earlier = [t for t in self._counted() if t.number < trial.number]
        if len(earlier) < self.spec.tuning.trials:
            return False
        self.storage.set_trial_user_attr(self._trial_id(trial.number), OVER_BUDGET_ATTR, True)
        self.study.tell(trial.number, state=TrialState.FAIL, skip_if_finished=True)
        self.remaining = 0
        return True

    def _follow_other_processes(self) -> None:
        """Another process drew the newest trial's params: continue the sampler from its state, so the
        two do not draw the same sequence (a single run always finds its own draw newest)."""
        saved = [t for t in self.study.get_trials(deepcopy=False) if SAMPLER_ATTR in t.system_attrs]
        if saved and max(t.number for t in saved) > self._last_draw:
            self._restore_sampler()

    def _restore_sampler(self) -> None:
        """Continue the sampler from its state after the newest finished ask, as if the run had never stopped."""
        saved = [t for t in self.study.get_trials(deepcopy=False) if SAMPLER_ATTR in t.system_attrs]
        if saved:
            self._last_draw = max(t.number for t in saved)
            sampler = restored_sampler(max(saved, key=lambda t: t.number).system_attrs[SAMPLER_ATTR])
            if sampler is not None:
                self.study.sampler = sampler
            else:
                import sys

                print(f"tuning {self.study.study_name}: this Optuna cannot read the sampler state the interrupted "
                      "run saved; the remaining trials are drawn by a fresh sampler, so the tuned params may "
                      "differ from an uninterrupted run's", file=sys.stderr)


def seed_stability(complete: list, chosen: int, searched: list[str], goal: str) -> dict[str, Any]:
    """How the chosen trial fares on each validation seed alone, from the completed trials' :data:`SEED_VALUES_ATTR`.

    ``chosen``: the number of the trial the study picked (best mean over the seeds). Per seed:
    the chosen trial's value there, the trial that seed alone would pick (on a tie the chosen
    one, else the lowest number) and the chosen trial's rank there (1 + the trials strictly
    better). ``stable`` is True when every seed alone picks the chosen params; None when fewer
    than two seeds say (one tuning seed, or a study from before the per-seed values were kept).
    """
    def searched_params(trial) -> dict[str, Any]:
        return {name: trial.params[name] for name in searched if name in trial.params}

    best = next(t for t in complete if t.number == chosen)
    summary: dict[str, Any] = {"trials": len(complete),
                               "chosen": {"number": best.number, "params": searched_params(best), "value": best.value}}
    recorded = [t for t in complete if SEED_VALUES_ATTR in t.user_attrs]
    per_trial = {t.number: {seed: value for seed, value in t.user_attrs[SEED_VALUES_ATTR]} for t in recorded}
    sign = 1 if goal == "max" else -1
    by_seed = []
    for seed, value in (best.user_attrs.get(SEED_VALUES_ATTR) or []):
        scored = [(t, per_trial[t.number][seed]) for t in recorded if seed in per_trial[t.number]]
        top = max(sign * v for _, v in scored)
        pick = best if sign * value == top else min((t for t, v in scored if sign * v == top), key=lambda t: t.number)
        by_seed.append({"seed": seed, "value": value, "best_number": pick.number, "best_params": searched_params(pick),
                        "best_value": per_trial[pick.number][seed],
                        "rank": 1 + sum(sign * v > sign * value for _, v in scored), "of": len(scored)})
    summary["by_seed"] = by_seed
    summary["stable"] = (all(s["best_params"] == summary["chosen"]["params"] for s in by_seed)
                         if len(by_seed) >= 2 else None)
    return summary


def _was_interrupted(trial, stale: set[int]) -> bool:
    """A RUNNING trial that no run is running: marked so by its run, its owner here gone, or its heartbeat stale
    (``stale``: the numbers of the trials whose heartbeat is)."""
    owner = trial.user_attrs.get(OWNER_ATTR)
    return (trial.user_attrs.get(INTERRUPTED_ATTR) is True or trial.number in stale
            or (owner is not None and _owner_is_gone(owner)))


@contextmanager
def _ctrl_c_deferred():
    """Ctrl-C waits until the block ends (main thread, Python's own handler only), then interrupts."""
    import signal
    import threading

    if (threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGINT) is not signal.default_int_handler):
        yield
        return
    caught = []
    signal.signal(signal.SIGINT, lambda signum, frame: caught.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if caught:
        raise KeyboardInterrupt
