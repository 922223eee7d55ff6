"""The orchestrator: plan → tune → execute → store → leaderboard, for one or more specs.

:func:`run` is the Python API; ``harness run`` is a thin layer over it.
"""
from __future__ import annotations

import datetime as _dt
import os
import time
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from harness.plan import Cell, RunOptions, apply_options, test_cells
from harness.spec.model import Spec

DATA_DIR_VARIABLE = "HARNESS_DATA_DIR"


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

    @property
    def ok(self) -> bool:
        return self.statuses.get("failed", 0) == 0 and self.statuses.get("timed-out", 0) == 0


def default_out(profile: str) -> Path:
    return Path("results") / profile


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def _archive(folder: Path) -> Path:
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    target = folder.parent / ".archive" / f"{folder.name}-{stamp}"
    target.parent.mkdir(parents=True, exist_ok=True)
    folder.rename(target)
    return target


def write_resolved_spec(spec: Spec, folder: Path) -> None:
    import yaml

    from harness.store import write_atomic

    header = (f"# The resolved spec this folder's runs came from: {spec.path}, profile {spec.profile!r},\n"
              f"# with the command line's overrides applied. spec_hash: {spec.spec_hash}\n")
    body = {"profile": spec.profile, "source": str(spec.path), "spec_hash": spec.spec_hash,
            "selection": {"datasets": [d.id for d in spec.datasets], "methods": [m.id for m in spec.methods],
                          "seeds": spec.seeds},
            "spec": spec.resolved}
    write_atomic(folder / "spec.yaml", header + yaml.safe_dump(body, sort_keys=False, allow_unicode=True))


def run(specs: list[Spec], out: Path | None = None, options: RunOptions = RunOptions(),
        progress: bool = True) -> list[SpecRun]:
    """Run every spec (already loaded with its profile) and write its results folder.

    Raises :class:`harness.plan.PlanError` for a bad selection before anything runs.
    """
    from harness.execute import WorkerPool
    from harness.hardware import git_commit, package_versions
    from harness.leaderboard import write_index, write_leaderboard
    from harness.metrics import write_metric_table
    from harness.registry import metrics as metric_table
    from harness.registry import default_registry
    from harness.store import FINISHED, RunStore, read_runs
    from harness.tuning import tune

    planned = [apply_options(spec, options) for spec in specs]  # every selection error before any work
    data_dir = options.data_dir or (Path(os.environ[DATA_DIR_VARIABLE]) if os.environ.get(DATA_DIR_VARIABLE) else None)
    versions = package_versions()
    summaries = []
    roots = set()
    for spec in planned:
        root = Path(out) if out is not None else default_out(spec.profile)
        roots.add(root)
        folder = root / spec.name
        summary = SpecRun(spec.name, folder)
        if options.fresh and folder.exists():
            summary.notes.append(f"--fresh: the earlier results moved to {_archive(folder)}")
        started = time.perf_counter()
        task = default_registry().load("tasks", spec.task)
        task_version = str(getattr(task, "version", "1"))
        goal = metric_table()[spec.primary_metric].goal
        commit = git_commit(spec.path.resolve().parent, ignore=root)
        datasets = []
        for dataset in spec.datasets:
            if dataset.requires == "data" and data_dir is None:
                summary.notes.append(f"skipped dataset {dataset.id!r}: it needs real data; pass --data-dir DIR or set {DATA_DIR_VARIABLE}")
            else:
                datasets.append(dataset)
        spec = replace(spec, datasets=datasets)

        with RunStore(folder) as store, WorkerPool(options.jobs, spec.hardware.threads) as pool, \
                _Progress(progress, spec.name) as bar:
            write_resolved_spec(spec, folder)
            storage = options.storage or f"sqlite:///{(folder / 'optuna.db').resolve()}"
            finished = [r for r in read_runs(folder) if r.get("status") in FINISHED]
            done = {r["key"] for r in finished}
            # params a finished test cell already froze: its pair's tuning is over, even if
            # the Optuna storage is gone (it is not committed with the results)
            frozen = {(r["dataset"], r["method"]): r["params"] for r in finished
                      if r.get("spec_hash") == spec.spec_hash and r.get("split") == "test"}

            def record(cell: Cell, result: dict[str, Any], tuned: list[str]) -> None:
                store.append({
                    "key": cell.key, "spec": spec.name, "profile": spec.profile, "task": spec.task,
                    "task_version": task_version, "dataset": cell.dataset.id, "dataset_name": cell.dataset.name,
                    "dataset_params": cell.dataset.params, "method": cell.method.id,
                    "method_name": cell.method.name, "kind": cell.method.kind, "seed": cell.seed,
                    "split": cell.split, "params": cell.params, "tuned": tuned, "status": result["status"],
                    "error": result.get("error"), "traceback": result.get("traceback"),
                    "metrics": result.get("metrics", {}), "wall_s": round(result.get("wall_s") or 0.0, 4),
                    "peak_mib": result.get("peak_mib"), "peak_gpu_mib": result.get("peak_gpu_mib"),
                    "device": result.get("device"), "git_commit": commit, "spec_hash": spec.spec_hash,
                    "versions": versions, "finished_at": _now(),
                })

            # tuning: one study per dataset × method with a search space
            params: dict[tuple[str, str], dict] = {}
            tuned_names: dict[tuple[str, str], list[str]] = {}
            tuning_errors: dict[tuple[str, str], str] = {}
            pairs = [(d, m) for d in spec.datasets for m in spec.methods]
            to_tune = [(d, m) for d, m in pairs if m.search and spec.tuning.trials > 0]
            untuned_cells = [c for c in test_cells(spec, {(d.id, m.id): m.params for d, m in pairs}, task_version, data_dir)
                             if not c.method.search or spec.tuning.trials == 0]
            bar.add(len(spec.seeds) * len(to_tune) + sum(c.key not in done for c in untuned_cells))
            for d, m in pairs:
                params[(d.id, m.id)] = dict(m.params)
            for d, m in to_tune:
                tuned_names[(d.id, m.id)] = sorted(m.search)
                if (d.id, m.id) in frozen:
                    params[(d.id, m.id)] = frozen[(d.id, m.id)]
                    continue

                def make_cell(trial_params, seed, d=d, m=m):
                    return Cell(spec, d, m, seed, "val", trial_params, spec.hardware.device,
                                spec.hardware.timeout_s, data_dir, task_version)

                def run_trial(cells):
                    bar.describe(f"tuning {m.id} on {d.id}")
                    results = dict(pool.run((i, c.payload()) for i, c in enumerate(cells)))
                    for _ in cells:
                        bar.advance()
                    return [results[i] for i in range(len(cells))]

                outcome = tune(spec, d, m, storage, goal, run_trial, make_cell, 
                               on_start=lambda n: bar.add(n * len(spec.tuning.seeds)))
                params[(d.id, m.id)] = outcome.params
                if outcome.error:
                    tuning_errors[(d.id, m.id)] = outcome.error

            # the test split: every seed with frozen params
            cells = test_cells(spec, params, task_version, data_dir)
            todo = []
            for cell in cells:
                pair = (cell.dataset.id, cell.method.id)
                if cell.key in done:
                    summary.already_done += 1
                    if pair in tuned_names:
                        bar.advance()
                elif pair in tuning_errors:
                    result = {"status": "failed", "error": tuning_errors[pair], "metrics": {}, "wall_s": 0.0}
                    record(cell, result, tuned_names[pair])
                    summary.statuses["failed"] += 1
                    bar.advance()
                else:
                    todo.append(cell)
            for cell, result in pool.run((c, c.payload()) for c in todo):
                record(cell, result, tuned_names.get((cell.dataset.id, cell.method.id), []))
                summary.statuses[result["status"]] += 1
                bar.describe(f"{cell.method.id} on {cell.dataset.id}, seed {cell.seed}")
                bar.advance()

        write_metric_table(folder, {name: metric_table()[name] for name in task.metrics})
        summary.verdicts = write_leaderboard(folder)
        summary.wall_s = time.perf_counter() - started
        summaries.append(summary)
    for root in roots:
        write_index(root)
        if out is None and root.parent.name == "results":
            write_index(root.parent)  # results/index.md over every profile
    return summaries


class _Progress:
    """A rich progress bar on stderr: cells done / total and the current cell."""

    def __init__(self, enabled: bool, label: str):
        self.enabled = enabled
        self.label = label
        self._progress = None
        self._task = None

    def __enter__(self) -> "_Progress":
        if self.enabled:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self._progress = Progress(
                TextColumn(f"[bold]{self.label}[/bold]"), BarColumn(), MofNCompleteColumn(),
                TimeElapsedColumn(), TextColumn("{task.description}"),
                console=Console(stderr=True), transient=False,
            )
            self._progress.start()
            self._task = self._progress.add_task("", total=0)
        return self

    def add(self, n: int) -> None:
        if self._progress:
            self._progress.update(self._task, total=(self._progress.tasks[0].total or 0) + n)

    def advance(self) -> None:
        if self._progress:
            self._progress.advance(self._task)

    def describe(self, text: str) -> None:
        if self._progress:
            self._progress.update(self._task, description=text)

    def __exit__(self, *exc) -> None:
        if self._progress:
            self._progress.stop()
