"""From a typed spec and the command line's filters to the list of cells to run."""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any, Callable

from harness.registry import listing, suggest
from harness.spec.model import DatasetEntry, MethodEntry, Spec, grid_members, named_datasets, stable_hash


_SEED_MARK = "\x00seed\x00"  # stands for the seed in a key's JSON text; no spec value holds a NUL


class PlanError(ValueError):
    """A command-line filter names something the spec does not have."""


@dataclass(frozen=True)
class RunOptions:
    """What the command line adds to a spec; every field has the spec's value by default."""

    methods: tuple[str, ...] | None = None
    datasets: tuple[str, ...] | None = None
    seeds: tuple[int, ...] | None = None
    trials: int | None = None
    device: str | None = None
    timeout_s: float | None = None
    jobs: int | str = "auto"  # worker processes; "auto": one per usable core (per GPU for GPU cells)
    data_dir: Path | None = None
    storage: str | None = None
    fresh: bool = False
    executor: str = "local"
    cluster: dict[str, Any] = field(default_factory=dict)  # --slurm-* and --cells-per-job: over the spec's hardware.slurm
    retry: bool = True  # run cells whose newest record is failed or timed-out again


@dataclass(frozen=True)
class Cell:
    """One unit of work: a method with frozen params on one dataset, seed and split."""

    spec: Spec
    dataset: DatasetEntry
    method: MethodEntry
    seed: int
    split: str
    params: dict[str, Any] = field(default_factory=dict)
    device: str = "auto"
    timeout_s: float = 600.0
    data_dir: Path | None = None
    task_version: str = "1"
    code: dict[str, str] = field(default_factory=dict)  # fingerprints of task, dataset and method code

    @cached_property  # read several times per cell by the orchestrator; a frozen cell's key never changes
    def key(self) -> str:
        """Hash of what determines the result, code included; the same key is never run twice."""
        return stable_hash(self._key_fields(self.seed))[:20]

    def _key_fields(self, seed: Any) -> dict[str, Any]:
        return key_fields(self.spec.task, self.task_version, self.dataset.name, self.dataset.params, self.method.name,
                          self.params, seed, self.split, self.spec.profile, self.device, self.spec.hardware.precision,
                          self.code)

    def key_for_seeds(self) -> Callable[[int], str]:
        """The key of this cell with another seed, everything else the same: :attr:`key`'s hash of the same
        JSON text, which is written once with a placeholder where the seed goes (1M keys took 12 s one by one)."""
        text = json.dumps(self._key_fields(_SEED_MARK), sort_keys=True, separators=(",", ":"), default=str)
        mark = json.dumps(_SEED_MARK)
        if text.count(mark) != 1:  # a spec value that holds the mark itself: one by one
            return lambda seed: replace(self, seed=seed).key
        before, _, after = text.partition(mark)
        return lambda seed: hashlib.sha256(f"{before}{int(seed)}{after}".encode()).hexdigest()[:20]

    @property
    def identity(self) -> tuple[str, str, int, str]:
        """(dataset id, method id, seed, split): what a newer result of the same cell replaces."""
        return (self.dataset.id, self.method.id, self.seed, self.split)

    def payload(self) -> dict[str, Any]:
        """The picklable dict a worker process needs."""
        return {
            "task": self.spec.task,
            "dataset_id": self.dataset.id,
            "dataset_name": self.dataset.name,
            "dataset_params": self.dataset.params,
            "method_name": self.method.name,
            "params": self.params,
            "seed": self.seed,
            "split": self.split,
            "device": self.device,
            "threads": self.spec.hardware.threads,
            "precision": self.spec.hardware.precision,
            "timeout_s": self.timeout_s,
            "data_dir": str(self.data_dir) if self.data_dir else None,
            # a worker keeps a seed × method's cells together (a task may cache its training)
            "group": f"{self.split}/{self.seed}/{self.method.id}",
            "key": self.key,  # a cluster executor finds a result an earlier, killed run left by it
        }


def key_fields(task: str, task_version: str, dataset_name: str, dataset_params: dict, method_name: str, params: dict,
               seed: Any, split: str, profile: str, device: str, precision: str, code: dict) -> dict[str, Any]:
    """What a cell's key hashes (:attr:`Cell.key`: ``stable_hash`` of this, first 20 hex digits)."""
    return {
        "task": [task, task_version],
        "dataset": [dataset_name, dataset_params],
        "method": [method_name, params],
        "seed": seed,
        "split": split,
        "profile": profile,
        "hardware": [device, precision],
        "code": code,
    }


def apply_options(spec: Spec, options: RunOptions) -> Spec:
    """Narrow the spec to the command line's selection and apply its overrides."""
    from dataclasses import replace

    def select(entries, wanted, what, groups=None):
        if wanted is None:
            return entries
        wanted = named_datasets(wanted, groups or {})  # a grid's id stands for its datasets
        ids = [e.id for e in entries]
        unknown = [w for w in wanted if w not in ids]
        if unknown:
            raise PlanError(f"{spec.path}: --{what} {unknown[0]!r} is not a {what[:-1]} id of spec {spec.name!r}"
                            f"{suggest(unknown[0], ids)}; its {what}: {listing(ids)}")
        return [e for e in entries if e.id in wanted]

    resolved = dict(spec.resolved)
    tuning, hardware = spec.tuning, spec.hardware
    if options.trials is not None:
        tuning = replace(tuning, trials=options.trials)
        resolved["tuning"] = {**resolved.get("tuning", {}), "trials": options.trials}
    if options.device is not None:
        hardware = replace(hardware, device=options.device)
        resolved["hardware"] = {**resolved.get("hardware", {}), "device": options.device}
    if options.timeout_s is not None:
        # how long a cell may run, not what it computes: the cells get it, the resolved spec (spec.yaml and the
        # spec hash) keeps the spec's own timeout_s, so --timeout neither re-keys nor re-records a finished cell
        hardware = replace(hardware, timeout_s=options.timeout_s)
    return replace(
        spec,
        datasets=select(spec.datasets, options.datasets, "datasets", grid_members(spec.resolved["datasets"])),
        methods=select(spec.methods, options.methods, "methods"),
        seeds=list(options.seeds) if options.seeds is not None else spec.seeds,
        tuning=tuning,
        hardware=hardware,
        resolved=resolved,
    )


def code_fingerprints(spec: Spec) -> dict[tuple[str, str], dict[str, str]]:
    """(dataset id, method id) → fingerprints of the task's, the loader's and the method's code."""
    from harness.code import fingerprint
    from harness.registry import default_registry

    registry = default_registry()
    task = fingerprint(registry.entry("tasks", spec.task).target)
    loaders = {d.name: fingerprint(registry.entry("datasets", d.name).target) for d in spec.datasets}
    methods = {m.name: fingerprint(registry.entry("methods", m.name).target) for m in spec.methods}
    return {(d.id, m.id): {"task": task, "dataset": loaders[d.name], "method": methods[m.name]}
            for d in spec.datasets for m in spec.methods}


TASK_FACTS = "task"  # the cache's kind of entry: what a run needs of a task besides its code's fingerprint


class TaskFacts:
    """What a run needs of its task besides the fingerprint of its code: its ``version``, ``framework``, the
    ``metrics`` it lists and its :meth:`~harness.Task.chance` levels.

    Reading them imported the task's module (and numpy with it) in every run, one with nothing to do included:
    they are kept in the cache (:mod:`harness.cache`) under a digest of the task's name, its target, the
    fingerprint of its code (its module and every module of its tree that module imports, the task contract
    included), the engine's source, the registry and the installed packages. Any difference imports the task and
    reads them again; a chance level not kept yet (a dataset or params not seen) does too, and is kept after.
    """

    def __init__(self, name: str):
        from harness.cache import digest, engine_digest, environment_digest, get
        from harness.code import fingerprint
        from harness.registry import default_registry

        registry = default_registry()
        self.name = name
        self._task = None
        target = registry.entry("tasks", name).target
        self._key = digest(engine_digest(), environment_digest(), registry.digest(), name, target, fingerprint(target))
        entry = get(TASK_FACTS, self._key)
        self._keep, self._dirty = True, False  # whether the entry may be kept; whether it has news to keep
        if not (isinstance(entry, dict) and isinstance(entry.get("version"), str)
                and isinstance(entry.get("framework"), (str, type(None))) and isinstance(entry.get("metrics"), list)
                and all(isinstance(m, str) for m in entry["metrics"]) and isinstance(entry.get("chance"), dict)):
            task = self.task
            entry = {"version": str(task.version), "framework": task.framework, "metrics": list(task.metrics),
                     "chance": {}}
            self._keep = isinstance(task.framework, (str, type(None))) and all(isinstance(m, str) for m in task.metrics)
            self._dirty = True
        self._entry = entry
        self.version: str = entry["version"]
        self.framework: str | None = entry["framework"]
        self.metrics: tuple[str, ...] = tuple(entry["metrics"])

    @property
    def task(self):
        """The task object itself (imported on first use)."""
        if self._task is None:
            from harness.registry import default_registry

            self._task = default_registry().load("tasks", self.name)
        return self._task

    def chance(self, dataset: str, params: dict[str, Any]) -> dict[str, float]:
        """:meth:`harness.Task.chance` of the loader ``dataset`` with ``params``, each level a float."""
        try:
            key = json.dumps([dataset, params], sort_keys=True, allow_nan=False)
        except (TypeError, ValueError):
            key = None  # params JSON cannot hold: asked every time
        known = self._entry["chance"].get(key) if key is not None else None
        if isinstance(known, dict) and all(isinstance(v, float) for v in known.values()):
            return dict(known)
        levels = {metric: float(value) for metric, value in self.task.chance(dataset, params).items()}
        if key is not None and all(isinstance(metric, str) for metric in levels):
            self._entry["chance"][key] = dict(levels)
            self._dirty = True
        return levels

    def save(self) -> None:
        """Keep what was read of the task for the next run."""
        from harness.cache import put

        if self._keep and self._dirty:
            put(TASK_FACTS, self._key, self._entry)
            self._dirty = False


def staggered(pairs: list[tuple], method_of: Callable[[tuple], str] = lambda pair: pair[1].id) -> list[tuple]:
    """(dataset, method) ``pairs`` method by method (in the order methods first appear), each method's datasets
    (in their order) starting one further along than the last method's: the order cells of one group (a seed
    and method) are handed to a worker in, so that workers beginning several methods at once begin on different
    datasets (see :func:`test_cells`). ``method_of`` names a pair's method (pairs of ids: ``lambda p: p[1]``)."""
    by_method: dict[str, list[tuple]] = {}
    for pair in pairs:
        by_method.setdefault(method_of(pair), []).append(pair)
    ordered = []
    for index, group in enumerate(by_method.values()):
        start = index % len(group)
        ordered += group[start:] + group[:start]
    return ordered


def test_cells(spec: Spec, params_by_pair: dict[tuple[str, str], dict], task_version: str,
               data_dir: Path | None, code: dict[tuple[str, str], dict[str, str]] | None = None) -> list[Cell]:
    """Every (seed, method, dataset) cell on the test split.

    Seed-major, then method: the worker's data cache holds every dataset of a seed, and a
    task that trains once per method and seed (a source domain shared by several target
    datasets) finds that training in its own cache while the method's targets follow.
    Each method's datasets start one further along than the last method's: workers that
    begin a seed's methods at once then begin on different datasets, so a preparation a
    task shares between the methods of a dataset and seed (a pretrained reference, kept
    under a lock) is made by several workers side by side instead of one after another.
    """
    device, timeout_s = spec.hardware.device, spec.hardware.timeout_s
    pairs = [(d, m, params_by_pair[(d.id, m.id)], (code or {}).get((d.id, m.id), {}))
             for d, m in staggered([(d, m) for m in spec.methods for d in spec.datasets if d.runs(m.id)])]
    keys = [Cell(spec, d, m, 0, "test", p, device, timeout_s, data_dir, task_version, c).key_for_seeds()
            for d, m, p, c in pairs]
    cells = []
    for seed in spec.seeds:
        for (dataset, method, params, fingerprints), key in zip(pairs, keys):
            cell = Cell(spec, dataset, method, seed, "test", params, device, timeout_s, data_dir, task_version,
                        fingerprints)
            cell.__dict__["key"] = key(seed)  # where cached_property keeps it: the same value, found sooner
            cells.append(cell)
    return cells


DATA_DIR_VARIABLE = "HARNESS_DATA_DIR"


def data_dir_from(given: Path | None) -> Path | None:
    """``--data-dir``, else ``HARNESS_DATA_DIR``; PlanError when it names no folder (a typo skipped every dataset
    that reads real data, with exit 0)."""
    if given is not None:
        where, what = Path(given), f"--data-dir {given}"
    elif os.environ.get(DATA_DIR_VARIABLE):
        where = Path(os.environ[DATA_DIR_VARIABLE])
        what = f"{DATA_DIR_VARIABLE}={where}"
    else:
        return None
    if where.is_dir():
        return where
    problem = "is a file, not a folder" if where.exists() else "no such folder"
    raise PlanError(f"{what}: {problem}; give the folder that holds the real datasets "
                    f"(or leave out --data-dir and unset {DATA_DIR_VARIABLE} to skip the datasets that need it)")


def check_slurm() -> None:
    import shutil

    missing = [command for command in ("sbatch", "srun") if shutil.which(command) is None]
    if missing:
        raise PlanError(f"--executor slurm: {' and '.join(missing)} not found on PATH, so this is not a SLURM "
                        "login node; run there, or try the same code path here with --executor local-submitit")


def check_writable(root: Path) -> None:
    if root.exists() and not root.is_dir():
        raise PlanError(f"--out {root}: is a file, not a folder; give a folder for the results")
    try:
        root.mkdir(parents=True, exist_ok=True)
        probe = root / f".harness-write-test-{os.getpid()}"
        probe.write_text("")
        probe.unlink()
    except OSError as exc:
        raise PlanError(f"--out {root}: cannot write results there ({exc.strerror or exc})") from None
