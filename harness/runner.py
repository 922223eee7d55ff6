"""The orchestrator: plan → tune → execute → store → leaderboard, for one or more specs.

:func:`run` is the Python API; ``harness run`` is a thin layer over it.
"""
from __future__ import annotations

import datetime as _dt
import sys
import time
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Iterable

from harness.plan import (DATA_DIR_VARIABLE, Cell, RunOptions, apply_options, check_slurm, check_writable,
                          data_dir_from, test_cells)
from harness.progress import Progress
from harness.report.cached import cached_legends, write_index_when_changed
from harness.spec.model import Spec, dataset_entries

NOT_OK = ("failed", "timed-out")
PROGRESS_TICK_S = 1.0  # how often the running cells shown are refreshed


@dataclass
class SpecRun:
    """What one spec's run did: where it wrote, how many cells ended how, its verdicts."""

    spec: str
    folder: Path
    statuses: Counter = field(default_factory=Counter)
    already_done: int = 0
    wall_s: float = 0.0
    verdicts: list = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    not_ok: int = 0  # planned cells whose newest record is failed or timed-out, this run's and earlier ones
    skip_reasons: Counter = field(default_factory=Counter)  # why cells were skipped → how many
    legends: list[str] = field(default_factory=list)  # what the verdicts' kinds mean, a line each

    @property
    def ok(self) -> bool:
        """Every planned cell's newest record is ok or skipped: the exit code reflects the plan, not this run."""
        return self.not_ok == 0


def default_out(profile: str) -> Path:
    return Path("results") / profile


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def _archive(folder: Path) -> Path:
    """Move a results folder aside for --fresh; refused (StoreLocked) while another run writes to it."""
    from harness.store import lock_folder, unlock_folder

    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    target = folder.parent / ".archive" / f"{folder.name}-{stamp}"
    lock = lock_folder(folder)  # the lock first: never move a folder a running run is writing to
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        folder.rename(target)
    finally:
        unlock_folder(lock)
    return target


def run(specs, out: Path | str | None = None, options: RunOptions = RunOptions(), progress: bool = True, *,
        profile: str = "default") -> list[SpecRun]:
    """Run every spec and write its results folder: ``out/<spec name>/`` (default ``results/<profile>/``).

    ``specs``: spec files (loaded at ``profile``) or :class:`~harness.spec.model.Spec` objects
    already loaded, one or a list. Raises :class:`harness.spec.load.SpecError` for an invalid
    spec and :class:`harness.plan.PlanError` for a bad selection, before anything runs.
    """
    from functools import lru_cache

    from harness.hardware import package_versions
    from harness.spec.load import load_spec

    if isinstance(specs, (str, Path, Spec)):
        specs = [specs]
    loaded = [s if isinstance(s, Spec) else load_spec(s, profile) for s in specs]
    _refuse_shared_folders(loaded, out)
    planned = [apply_options(spec, options) for spec in loaded]  # every selection error before any work
    data_dir = data_dir_from(options.data_dir)
    versions = lru_cache(maxsize=1)(package_versions)  # read once a cell is to run (a run with nothing to do: never)
    if options.executor == "slurm":
        check_slurm()
    if options.storage is not None:  # a wrong URL or a server that is down: one line before any work
        from harness.tuning import open_storage

        open_storage(options.storage, None)
    for root in {Path(out) if out is not None else default_out(spec.profile) for spec in planned}:
        check_writable(root)  # before any work: one clear line, not a traceback after tuning
    summaries, roots, said = [], set(), set()
    for spec in planned:
        root = Path(out) if out is not None else default_out(spec.profile)
        roots.add(root)
        summaries.append(_run_spec(spec, root, options, data_dir, versions, progress, said))
    if options.data_dir is not None and not any(d.requires == "data" for spec in planned for d in spec.datasets):
        for summary in summaries:
            summary.notes.append(f"--data-dir {options.data_dir} was not read: no selected dataset of "
                                 f"{'these specs' if len(planned) > 1 else 'this spec'} reads real data")
    for root in roots:
        write_index_when_changed(root)
        if out is None and root.parent.name == "results":
            write_index_when_changed(root.parent)  # results/index.md over every profile
    return summaries


def _refuse_shared_folders(specs: list[Spec], out: Path | str | None) -> None:
    """Two specs of one name would write one folder (``out/<name>/``): the second's spec.yaml and pages over the
    first's, their rows in one runs.jsonl. Refused (PlanError) before anything runs, naming both files."""
    from harness.plan import PlanError

    seen: dict[tuple[Path, str], Spec] = {}
    for spec in specs:
        root = Path(out) if out is not None else default_out(spec.profile)
        first = seen.setdefault((root, spec.name), spec)
        if first is not spec:
            if Path(first.path).resolve() == Path(spec.path).resolve():
                raise PlanError(f"{spec.path} is given twice: spec {spec.name!r} would run twice into "
                                f"{root / spec.name}/; give each spec file once")
            raise PlanError(f"{first.path} and {spec.path} both have the name {spec.name!r}: they would share the "
                            f"results folder {root / spec.name}/; run them one at a time with a different --out each")


_PLANNING_FIELDS = ("params", "spec")  # what planning reads of a row beyond what read_cells always decodes


def _run_spec(spec: Spec, root: Path, options: RunOptions, data_dir: Path | None, versions: Callable[[], dict],
              progress: bool, said: set[str] | None = None) -> SpecRun:
    """One spec: its folder, the tuning of every pair, then every test cell, then the leaderboard.

    ``versions``: the installed versions the rows record, read when a cell is to run. ``said``: the warnings
    already printed by this run (a run of several specs says each once)."""
    from harness.backends import CLUSTER_EXECUTORS, make_executor
    from harness.hardware import auto_jobs, git_commit, plan_jobs, visible_gpus
    from harness.metric_tables import write_chance_table, write_metric_table, write_trivial_table
    from harness.plan import TaskFacts, code_fingerprints
    from harness.registry import default_registry
    from harness.report.stamp import pages_stamp, read_stamp, verdicts_on_file, write_stamp
    from harness.runs_file import read_cells
    from harness.store import RunStore, write_resolved_spec_when_changed, write_skipped_datasets

    folder = root / spec.name
    summary = SpecRun(spec.name, folder)
    if options.fresh and folder.exists():
        summary.notes.append(f"--fresh: the earlier results moved to {_archive(folder)}")
    started = time.perf_counter()
    task = TaskFacts(spec.task)  # the task's version, framework, metrics and chance levels, imported only if new
    gpus = visible_gpus() if task.framework is not None and spec.hardware.device != "cpu" else []
    kept, skipped = _available_datasets(spec, data_dir, gpus)
    summary.notes += [f"skipped dataset {s['dataset']!r}: {s['reason']}" for s in skipped]
    spec = replace(spec, datasets=kept)
    if options.executor in CLUSTER_EXECUTORS:  # jobs at once on the cluster, not this machine's workers
        jobs = auto_jobs(spec.hardware.threads, gpus) if options.jobs == "auto" else int(options.jobs)
    else:
        jobs, warning = plan_jobs(options.jobs, spec.hardware.threads, gpus)
        said = set() if said is None else said
        if warning and warning not in said:
            said.add(warning)
            print(f"harness run: {warning}", file=sys.stderr)
    plan = _Plan(spec, task.version, data_dir, code_fingerprints(spec))
    # results are output, not code: the folders of every profile under results/ leave the commit clean
    outputs = root.parent if root.parent.name == "results" else root
    recorder = _Recorder(spec, plan.task_version, lambda: git_commit(spec.path.resolve().parent, ignore=outputs),
                         versions)
    cluster = {}
    if options.executor in CLUSTER_EXECUTORS:
        from harness.cluster import resources_from

        cluster = {"folder": folder, "resources": resources_from(spec.hardware, spec.hardware.slurm, options.cluster)}

    def executor_for_cells():
        recorder.provenance()  # the commit and versions the rows record, read before any cell runs
        return make_executor(options.executor, jobs=jobs, threads=spec.hardware.threads, gpus=gpus, **cluster)

    # a cluster executor is made at once (its resources are checked before any work); the local pool, whose module
    # imports the worker's, when a cell is submitted: a run with nothing to do never makes it
    executor = executor_for_cells() if cluster else _WhenUsed(executor_for_cells)
    with RunStore(folder) as store, executor as executor, Progress(progress, spec.name) as bar:
        write_resolved_spec_when_changed(spec, folder)
        write_metric_table(folder, default_registry().task_metrics(spec.task, task.metrics))  # the folder reads alone
        write_chance_table(folder, {d.get("id", d["name"]): task.chance(d["name"], d.get("params", {}))
                                    for d in dataset_entries(spec.resolved)})
        write_trivial_table(folder, spec.task, default_registry().trivial_methods(spec.task))
        task.save()
        write_skipped_datasets(folder, skipped)
        # streamed once, only the fields planning needs, nothing kept but what history returns: a re-run of a big
        # spec is mostly this
        newest, frozen, earlier, stale = plan.history(read_cells(folder, extra=_PLANNING_FIELDS))
        if stale:
            moved = store.move_aside(plan.superseded)
            summary.notes.append(f"{moved} result(s) of an earlier version of the code moved to "
                                 f"{folder / 'superseded.jsonl'}; their cells run again")
            newest, frozen, earlier, _ = plan.history(read_cells(folder, extra=_PLANNING_FIELDS))
        # a failed or timed-out cell runs again (its row stays as history) unless --no-retry
        keep = ("ok",) if options.retry else ("ok", *NOT_OK)
        done = {key: status for key, status in newest.items() if status in keep}
        params, tuning_errors = _tune(plan, frozen, options.storage, folder, executor, bar)
        _run_test_cells(plan, params, tuning_errors, done, earlier, store, recorder, executor, bar, summary)
    stamp = pages_stamp(folder)
    if not summary.statuses and read_stamp(folder) == stamp and (folder / "claims.json").exists():
        # nothing ran and nothing the pages are made of changed: they stand, and their verdicts are read back
        # (rebuilding them imported scipy and matplotlib, most of a run that has nothing to do)
        summary.verdicts = verdicts_on_file(folder)
        summary.legends = cached_legends(folder, summary.verdicts)
    else:
        from harness.report.folder import write_leaderboard

        summary.verdicts = write_leaderboard(folder)
        summary.legends = cached_legends(folder, summary.verdicts)
        write_stamp(folder, stamp)
    summary.wall_s = time.perf_counter() - started
    return summary


class _WhenUsed:
    """An executor made the first time it is used (``make`` returns it, not yet entered), and closed, if it was
    made, when the ``with`` block ends."""

    def __init__(self, make: Callable[[], Any]):
        self._make = make
        self._made = None

    def __enter__(self) -> "_WhenUsed":
        return self

    def __exit__(self, *exc):
        if self._made is not None:
            return self._made.__exit__(*exc)
        return None

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        if self._made is None:
            self._made = self._make().__enter__()
        return getattr(self._made, name)


def _available_datasets(spec: Spec, data_dir: Path | None, gpus: list[str]) -> tuple[list, list[dict[str, str]]]:
    """The spec's datasets whose real data and GPU are here, and the others with why (``skipped.json``)."""
    kept, skipped = [], []
    for dataset in spec.datasets:
        if dataset.requires == "data" and data_dir is None:
            reason = f"it needs real data; pass --data-dir DIR or set {DATA_DIR_VARIABLE}"
        elif dataset.requires == "gpu" and not gpus:
            why = "the run is on the CPU (--device cpu)" if spec.hardware.device == "cpu" else "no GPU is visible"
            reason = f"it needs a GPU, and {why}"
        else:
            kept.append(dataset)
            continue
        skipped.append({"dataset": dataset.id, "reason": reason})
    return kept, skipped


@dataclass
class _Plan:
    """The cells of one spec: which pairs are tuned, the code behind each, what earlier runs left."""

    spec: Spec
    task_version: str
    data_dir: Path | None
    code: dict[tuple[str, str], dict[str, str]]

    @property
    def pairs(self) -> list[tuple]:
        return [(d, m) for d in self.spec.datasets for m in self.spec.methods if d.runs(m.id)]

    def tuned(self, method) -> bool:
        return bool(method.search) and self.spec.tuning.trials > 0

    def cells(self, params: dict[tuple[str, str], dict]) -> list[Cell]:
        return test_cells(self.spec, params, self.task_version, self.data_dir, self.code)

    def tuning_cell(self, dataset, method, params: dict, seed: int) -> Cell:
        return Cell(self.spec, dataset, method, seed, "val", params, self.spec.hardware.device,
                    self.spec.hardware.timeout_s, self.data_dir, self.task_version, self.code[(dataset.id, method.id)])

    def superseded(self, row: dict) -> bool:
        """A test result of a planned cell that came from other code than the current one."""
        planned = self.code.get((row.get("dataset"), row.get("method")))
        return (planned is not None and row.get("split") == "test" and row.get("spec") == self.spec.name
                and row.get("code") != planned)

    def history(self, rows: Iterable) -> tuple[dict[str, str], dict[tuple[str, str], dict], set[str], bool]:
        """From runs.jsonl's ``rows`` (read_cells' records, read once): the newest status of every key, the params
        finished test cells froze, the keys whose newest row has another spec hash, and whether any row is
        :meth:`superseded` (a planned cell's result from other code).

        A pair whose test cells froze params has finished its tuning, even when the Optuna
        storage is gone (it is not committed with the results). A key finished under an earlier
        version of the spec (a method or dataset added, a profile edited) has the same result under
        this one: it is recorded again under this spec hash, not run.
        """
        from harness.store import FINISHED

        spec_hash, code, name = self.spec.spec_hash, self.code, self.spec.name
        statuses, hashes, frozen, stale = {}, {}, {}, False
        for r in rows:  # one pass, attribute reads only: a re-run of a million cells is mostly this
            key, status, row_hash = r["key"], r["status"], r["spec_hash"]
            statuses[key], hashes[key] = status, row_hash
            if r["split"] == "test":
                pair = (r["dataset"], r["method"])
                planned = code.get(pair)
                if planned is not None and r["code"] != planned and r["spec"] == name:
                    stale = True  # as superseded() says
                elif status in FINISHED and row_hash == spec_hash and r["code"] == planned:
                    frozen[pair] = r["params"]  # tuned with today's code
        earlier = {key for key, row_hash in hashes.items() if row_hash != spec_hash}
        return statuses, frozen, earlier, stale


@dataclass
class _Recorder:
    """Turns a cell and its result into one runs.jsonl line with its provenance.

    ``commit_of`` and ``versions_of`` read the provenance (a git status, every package's metadata), which a run
    with nothing to run never needs: :meth:`provenance` reads it once, before the first cell is run."""

    spec: Spec
    task_version: str
    commit_of: Callable[[], str]
    versions_of: Callable[[], dict]
    commit: str | None = None
    versions: dict | None = None

    def provenance(self) -> None:
        if self.commit is None:
            self.commit, self.versions = self.commit_of(), self.versions_of()

    def record(self, cell: Cell, result: dict[str, Any], tuned: list[str]) -> dict[str, Any]:
        self.provenance()
        spec = self.spec
        row = {
            "key": cell.key, "spec": spec.name, "profile": spec.profile, "task": spec.task,
            "task_version": self.task_version, "dataset": cell.dataset.id, "dataset_name": cell.dataset.name,
            "dataset_params": cell.dataset.params, "method": cell.method.id,
            "method_name": cell.method.name, "kind": cell.method.kind, "seed": cell.seed,
            "split": cell.split, "params": cell.params, "tuned": tuned, "status": result["status"],
            "error": result.get("error"), "traceback": result.get("traceback"),
            "metrics": result.get("metrics", {}), "wall_s": round(result.get("wall_s") or 0.0, 4),
            "peak_mib": result.get("peak_mib"), "peak_gpu_mib": result.get("peak_gpu_mib"),
            "device": result.get("device"), "git_commit": self.commit, "spec_hash": spec.spec_hash,
            "versions": self.versions, "finished_at": _now(), "code": cell.code,
        }
        if result.get("curves"):  # only tasks that measure series write the field
            row["curves"] = result["curves"]
        # the machine that ran the cell and how busy it was; a cluster job's logs, when the job lost it
        for extra in ("host", "load_average", "cores", "log"):
            if result.get(extra):
                row[extra] = result[extra]
        return row


def _tune(plan: _Plan, frozen: dict, storage_option: str | None, folder: Path, executor, bar: Progress) -> tuple[dict, dict]:
    """Tune every pair with a search space, all studies at once through the executor.

    Each tuned pair's summary (chosen params, how each validation seed alone ranks them) goes
    to ``tuning.json``; a frozen pair keeps its entry there. Returns the params of every pair
    (tuned, frozen earlier, or the spec's) and, for each pair whose every trial failed, the
    status its test cells get and why: ``skipped`` when every tuning cell was skipped (its data
    or device is not here), else ``failed``.
    """
    spec = plan.spec
    if any(plan.tuned(m) and (d.id, m.id) not in frozen for d, m in plan.pairs):  # else nothing to import or read
        frozen = {**_tuned_before(plan, folder), **frozen}
    params = {(d.id, m.id): frozen.get((d.id, m.id), dict(m.params)) if plan.tuned(m) else dict(m.params)
              for d, m in plan.pairs}
    pending = [(d, m) for d, m in plan.pairs if plan.tuned(m) and (d.id, m.id) not in frozen]
    bar.add(len(spec.seeds) * sum(plan.tuned(m) for _, m in plan.pairs))  # their test cells
    if not pending:
        return params, {}
    from harness.registry import metrics
    from harness.store import write_tuning_summaries
    from harness.tuning import StudyRun, open_storage

    storage = open_storage(storage_option, folder)
    studies = {}
    try:
        for d, m in pending:
            study = StudyRun(spec, d, m, storage, metrics()[spec.tuning_metric(d)].goal, plan.code[(d.id, m.id)],
                             lambda trial_params, seed, d=d, m=m: plan.tuning_cell(d, m, trial_params, seed))
            studies[(d.id, m.id)] = study
            bar.add(study.start() * len(spec.tuning.seeds))
        skipped = _advance(studies, executor, bar)
    except BaseException:  # Ctrl-C or a crash: the next run redoes the trials in flight, with the same params
        for study in studies.values():
            study.stop()
        raise
    summaries = {pair: study.summary() for pair, study in studies.items()}
    write_tuning_summaries(folder, [s for s in summaries.values() if s is not None],
                           failed=[pair for pair, s in summaries.items() if s is None])
    errors = {}
    for pair, study in studies.items():
        outcome = study.outcome()
        params[pair] = outcome.params
        if outcome.error:
            errors[pair] = ("skipped", skipped[pair]) if skipped.get(pair) else ("failed", outcome.error)
    return params, errors


def _tuned_before(plan: _Plan, folder: Path) -> dict[tuple[str, str], dict]:
    """The params of each tuned pair whose study ``tuning.json`` records as run to its whole budget under the same
    name: the same search space, sampler, validation seeds, metric, profile and code (:func:`harness.tuning.
    study_name`), so tuning again would ask the same trials. A spec whose hash changed elsewhere (a method or a
    dataset added) keeps the tuned choices of its other pairs without the Optuna storage, which is not committed
    with the results, and their test cells are recorded again rather than run; an entry written before entries
    named their study freezes nothing."""
    from harness.store import read_tuning_summaries
    from harness.tuning import study_name

    recorded = {(e.get("dataset"), e.get("method")): e for e in read_tuning_summaries(folder)}
    out = {}
    for d, m in plan.pairs:
        entry = recorded.get((d.id, m.id))
        if (plan.tuned(m) and entry and entry.get("study") == study_name(plan.spec, d, m, plan.code[(d.id, m.id)])
                and entry.get("trials") == plan.spec.tuning.trials and isinstance(entry.get("chosen"), dict)):
            out[(d.id, m.id)] = {**m.params, **entry["chosen"]["params"]}
    return out


OTHERS_POLL_S = 0.5  # how often a run that finished its share of a shared study looks at the other runs' trials


def _advance(studies: dict, executor, bar: Progress) -> dict[tuple[str, str], str | None]:
    """Run every study to its end: ask a batch of each idle study, run its cells, tell it when all are back.

    Returns, per pair, the reason its cells were skipped while every one of them was (else None).
    """
    from harness.plan import staggered
    from harness.tuning import HEARTBEAT_S

    batches: dict[tuple[str, str], dict[int, list]] = {}
    labels: dict[tuple, str] = {}
    skipped: dict[tuple[str, str], str | None] = {}  # pair → the skip reason while every cell of it was skipped
    last_beat = time.monotonic()
    # each method's studies begin on another dataset (as test cells do): a shared per-dataset preparation is made
    # side by side
    order = [(d.id, m.id) for d, m in staggered([(study.dataset, study.method) for study in studies.values()])]
    while True:
        for pair in order:
            study = studies[pair]
            if not study.waiting and not study.finished:
                batch = study.ask_batch()
                batches[pair] = {number: [None] * len(cells) for number, cells in batch}
                for number, cells in batch:
                    for i, cell in enumerate(cells):
                        tag = (pair, number, i)
                        labels[tag] = f"tuning {cell.method.id} on {cell.dataset.id}, trial {number}, seed {cell.seed}"
                        executor.submit(tag, cell.payload())
        if not executor.outstanding:
            waiting = [study for study in studies.values() if study.others_running()]
            if not waiting:
                break
            # another `harness run` on this storage still runs trials of these studies: wait for them to be
            # told, or take them over once their process is gone or their heartbeat stale
            bar.running([(f"waiting for another process's trials of {len(waiting)} stud"
                          f"{'y' if len(waiting) == 1 else 'ies'}", time.monotonic())])
            time.sleep(OTHERS_POLL_S)
            for study in waiting:
                bar.add(max(0, study.refresh()) * len(study.spec.tuning.seeds))
            continue
        for tag, result in _wait(executor, bar, labels):
            pair, number, i = tag
            batches[pair][number][i] = result
            if pair not in skipped or skipped[pair] is not None:
                skipped[pair] = result.get("error") if result["status"] == "skipped" else None
            bar.finished(labels.pop(tag), result["status"], result.get("wall_s"))
            if all(r is not None for cells in batches[pair].values() for r in cells):
                studies[pair].tell(batches.pop(pair))
        if time.monotonic() - last_beat >= HEARTBEAT_S:
            for study in studies.values():
                study.beat()
            last_beat = time.monotonic()
    return skipped


def _wait(executor, bar: Progress, labels: dict) -> list[tuple[Any, dict]]:
    """The cells finished within :data:`PROGRESS_TICK_S`; the bar learns which still run."""
    finished = executor.wait(timeout=PROGRESS_TICK_S)
    bar.running([(labels[tag], started) for tag, started in executor.running() if tag in labels])
    return finished


def _run_test_cells(plan: _Plan, params: dict, tuning_errors: dict, done: dict[str, str], earlier: set[str], store,
                    recorder: _Recorder, executor, bar: Progress, summary: SpecRun) -> None:
    """Every seed on the test split with frozen params; ``done`` keys (→ newest status) are not run again, and
    those of them in ``earlier`` (finished under another spec hash) are recorded again under this one.

    Counts in ``summary.not_ok`` the planned cells whose newest record is failed or timed-out,
    kept from earlier runs (``--no-retry``) or written now, and in ``summary.skip_reasons``
    why cells were skipped.
    """
    tuned_names = {(d.id, m.id): sorted(m.search) for d, m in plan.pairs if plan.tuned(m)}
    todo, carried, done_tuned = [], set(), 0
    for cell in plan.cells(params):
        key = cell.key
        if key in done:  # the most of a re-run's cells: kept to dict lookups
            if key in earlier:
                carried.add(key)
            summary.already_done += 1
            summary.not_ok += done[key] in NOT_OK
            done_tuned += (cell.dataset.id, cell.method.id) in tuned_names
            continue
        pair = (cell.dataset.id, cell.method.id)
        label = f"{cell.method.id} on {cell.dataset.id}, seed {cell.seed}"
        if pair not in tuned_names:
            bar.add(1)
        if pair in tuning_errors:
            status, error = tuning_errors[pair]
            store.append(recorder.record(cell, {"status": status, "error": error, "metrics": {}, "wall_s": 0.0},
                                         tuned_names.get(pair, [])))
            _count(summary, status, error)
            bar.finished(label, status, 0.0)
        else:
            todo.append((cell, label))
    bar.skip(done_tuned)  # tuned pairs' test cells were counted in the total before tuning
    if carried:
        _carry_forward(plan, carried, store)
        summary.notes.append(f"{len(carried)} cell(s) finished under an earlier version of the spec (the same key: "
                             "the same result) recorded again under this one, not run again")
    if not todo:
        return  # the executor is not asked (a run with nothing to run never makes its pool)
    # a local pool is fed a window of cells at a time, so a million-cell run does not hold a million payloads;
    # a cluster executor packs jobs over the whole wave, so it gets every cell at once
    window = getattr(executor, "window", None) or len(todo)
    labels, fed = {}, 0
    while fed < len(todo) or executor.outstanding:
        while fed < len(todo) and executor.outstanding < window:
            labels[fed] = todo[fed][1]
            executor.submit(fed, todo[fed][0].payload())
            fed += 1
        for index, result in _wait(executor, bar, labels):
            cell = todo[index][0]
            store.append(recorder.record(cell, result, tuned_names.get((cell.dataset.id, cell.method.id), [])))
            _count(summary, result["status"], result.get("error"))
            bar.finished(labels.pop(index), result["status"], result.get("wall_s"))


def _carry_forward(plan: _Plan, keys: set[str], store) -> None:
    """Append, for each key, a copy of its newest row under this spec hash (``carried_from``: the earlier one).

    The leaderboard shows the rows of the spec as it is now; without this, adding a method to a spec hid
    every earlier method's cells, which the run did not run again since their keys were done.
    """
    from harness.runs_file import read_runs

    newest = {}
    for row in read_runs(store.folder):
        if row["key"] in keys:
            newest[row["key"]] = row
    for row in newest.values():  # in the order the keys were first written
        row = dict(row)
        row["carried_from"] = row["spec_hash"]
        row["spec_hash"] = plan.spec.spec_hash
        store.append(row)


def _count(summary: SpecRun, status: str, error: str | None) -> None:
    summary.statuses[status] += 1
    summary.not_ok += status in NOT_OK
    if status == "skipped":
        summary.skip_reasons[error or "no reason given"] += 1
