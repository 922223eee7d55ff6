"""Cells on a cluster through submitit: :class:`SubmititExecutor` (``--executor slurm`` / ``local-submitit``).

The scheduling is submitit's and SLURM's; this module only packs cells into jobs and reads
their results back.

- **Jobs.** The cells of one ``group`` (a seed × method, whose training a task may cache in
  its worker) always share a job; small groups are packed together until a job holds
  ``cells_per_job`` cells, so a 1,000-cell spec is some dozens of jobs, not 1,000. Jobs go
  out as submitit job arrays; at most ``jobs`` run at once (SLURM's array throttle; the
  local backend is throttled here, since submitit's local executor has none).
- **Inside a job** the cells run in one :class:`harness.executors.LocalExecutor` worker,
  so a cell keeps its hard timeout and a crash costs one cell, exactly as on a laptop.
- **Results: one writer per file.** Each job appends each finished cell to its own shard,
  ``jobs/<job>.shard.jsonl`` beside the results (one ``write`` + ``fsync``, file opened and
  closed per cell, so NFS's close-to-open consistency shows the parent whole lines). The
  parent reads the shards and stays the only writer of ``runs.jsonl``. Nothing relies on
  ``flock``, which is unreliable on NFS across machines.
- **Pre-emption and time limits.** A job is :class:`submitit.helpers.Checkpointable`: when
  SLURM pre-empts it or its time limit nears, submitit requeues it, and the requeued job
  skips the cells its shard already holds. A cell is handed back once, whatever the shard
  says twice.
- **A killed parent** leaves shards behind; the next run reads them first and hands back
  the ``ok`` result of any cell it asks for whose key a shard already holds, without
  submitting it again. (A cell that was still running when the parent died runs again.)
- **Logs** stay in ``jobs/`` (submitit's ``<job>_<task>_log.out`` / ``.err``); the row of a
  cell lost with its job names them in ``error`` and in ``log``.
"""
from __future__ import annotations

import json
import math
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import submitit

from harness.executors import Executor, LocalExecutor

JOBS_FOLDER = "jobs"  # beside runs.jsonl: submitit's pickles and logs, and the shards
SHARD_SUFFIX = ".shard.jsonl"
_JOB_STARTUP_S = 300  # on top of its cells' timeouts: queueing is not counted, imports and a worker start are
_POLL_S = {"local": 0.05, "slurm": 2.0}
_KILL_GRACE_S = 10.0  # how often the shards are read while waiting


@dataclass(frozen=True)
class ClusterResources:
    """What one job asks for: from the spec's ``hardware`` (and its ``slurm:`` section), overridable on the command line."""

    cpus: int = 1
    gpus: int = 0
    memory_gb: float | None = None
    time_min: float | None = None  # a cap on every job's time limit; by default from its cells' timeouts
    partition: str | None = None
    account: str | None = None
    constraint: str | None = None
    qos: str | None = None
    options: dict[str, Any] = field(default_factory=dict)  # any other sbatch option, e.g. {"exclusive": true}
    cells_per_job: int | None = None  # None: about four jobs per concurrent slot


def shard_lines(path: Path, offset: int = 0) -> tuple[list[dict[str, Any]], int]:
    """The whole lines of a shard from byte ``offset`` on, and the offset after the last whole line."""
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            data = f.read()
    except FileNotFoundError:
        return [], offset
    end = data.rfind(b"\n") + 1
    lines = []
    for raw in data[:end].splitlines():
        try:
            lines.append(json.loads(raw))
        except json.JSONDecodeError:
            continue  # bytes a crash left mid-line before the job repaired its shard
    return lines, offset + end


class CellBatch(submitit.helpers.Checkpointable):
    """One job's cells: run in a worker process each, every result appended to the job's shard.

    Checkpointable: a pre-empted or timed-out job is requeued with this same object, and the
    run skips the cells its shard already holds.
    """

    def __init__(self, shard: str, cells: list[tuple[int, dict[str, Any]]], threads: int):
        self.shard, self.cells, self.threads = shard, cells, threads

    def __call__(self) -> int:
        from harness.store import _append_raw, cut_partial_line

        path = Path(self.shard)
        cut_partial_line(path)  # a job killed inside a write left half a line; the requeued job appends after it
        done = {line["index"] for line in shard_lines(path)[0]}
        todo = [(index, cell) for index, cell in self.cells if index not in done]
        keys = {index: cell.get("key") for index, cell in self.cells}
        with LocalExecutor(jobs=1, threads=self.threads) as pool:
            for index, result in pool.run(todo):
                line = {"index": index, "key": keys[index], "result": result}
                _append_raw(path, (json.dumps(line, allow_nan=False) + "\n").encode())
        return len(self.cells)


@dataclass
class _Job:
    job: Any  # submitit.Job
    shard: Path
    indices: set[int]  # its cells not yet handed back
    offset: int = 0


class SubmititExecutor(Executor):
    """Cells as submitit jobs: ``backend`` ``slurm`` (sbatch job arrays) or ``local`` (submitit's local processes)."""

    def __init__(self, jobs: int = 1, threads: int = 1, gpus: list[str] | None = None, *, folder: Path,
                 backend: str = "slurm", resources: ClusterResources | None = None, **_: Any):
        self.jobs = max(1, jobs)
        self.threads = threads
        self.backend = backend
        self.resources = resources or ClusterResources(cpus=threads)
        self.folder = Path(folder) / JOBS_FOLDER
        self.folder.mkdir(parents=True, exist_ok=True)
        self._run_id = uuid.uuid4().hex[:8]  # shard names never collide with an earlier run's
        self._submitted = 0
        self._cells: dict[int, tuple[Any, dict[str, Any]]] = {}  # index → (tag, cell), not yet handed back
        self._pending: list[int] = []  # indices not yet in a job
        self._wave = 0  # cells submitted since the pending list was last empty
        self._jobs: list[_Job] = []
        self._ended: list[_Job] = []  # jobs whose cells are all back; a local one's process may still be exiting
        self._ready: list[tuple[Any, dict[str, Any]]] = []  # results recovered from an earlier run's shards
        self._recovered = self._read_earlier_shards()
        self._executor = self._make_executor()

    # the interface ---------------------------------------------------------------------

    def submit(self, tag: Any, cell: dict[str, Any]) -> None:
        earlier = self._recovered.pop(cell.get("key"), None)
        if earlier is not None:
            self._ready.append((tag, earlier))
            return
        if not self._pending:  # a new wave of cells (the test cells, a round of trials): jobs are sized on it
            self._wave = 0
        self._wave += 1
        index = self._submitted
        self._submitted += 1
        self._cells[index] = (tag, cell)
        self._pending.append(index)

    @property
    def outstanding(self) -> int:
        return len(self._cells) + len(self._ready)

    def wait(self, timeout: float | None = None) -> list[tuple[Any, dict[str, Any]]]:
        give_up = math.inf if timeout is None else time.monotonic() + timeout
        while True:
            finished, self._ready = self._ready, []
            self._dispatch()
            for job in list(self._jobs):
                finished += self._collect(job)
            if finished or not self.outstanding or time.monotonic() >= give_up:
                return finished
            time.sleep(min(_POLL_S[self.backend], max(0.0, give_up - time.monotonic())))

    def close(self) -> None:
        """Cancel the jobs still running (Ctrl-C, an error); a clean end removes the shards, keeping the logs."""
        for job in self._jobs:
            try:
                job.job.cancel(check=False)
            except Exception:  # a job that ended meanwhile, a scheduler that is down: nothing more to do
                pass
        if not self._cells and not self._jobs:
            for shard in self.folder.glob(f"*{SHARD_SUFFIX}"):
                shard.unlink(missing_ok=True)
        for job in self._ended:  # a local job ends a moment after its last cell: no process outlives the run
            process = getattr(job.job, "_process", None)
            if process is not None:
                try:
                    process.wait(timeout=_KILL_GRACE_S)
                except Exception:  # still busy after its last result: it is ours, and done
                    process.kill()
        self._jobs, self._ended, self._cells, self._pending = [], [], {}, []

    # jobs ------------------------------------------------------------------------------

    def _make_executor(self):
        if self.backend == "local":
            executor = submitit.LocalExecutor(folder=self.folder)
        else:
            executor = submitit.AutoExecutor(folder=self.folder, cluster="slurm")
        return executor

    def _parameters(self, cells: int) -> dict[str, Any]:
        r = self.resources
        longest = max((float(self._cells[i][1]["timeout_s"]) for i in self._pending), default=600.0)
        time_min = math.ceil((cells * longest + _JOB_STARTUP_S) / 60)
        if r.time_min is not None:
            time_min = min(time_min, r.time_min)
        params: dict[str, Any] = {"timeout_min": time_min, "cpus_per_task": r.cpus, "tasks_per_node": 1,
                                  "nodes": 1, "name": "harness"}
        if self.backend == "local":  # submitit's local jobs are warned (and checkpointed) a quarter before their end
            return {"timeout_min": time_min, "signal_delay_s": max(1, min(30, int(15 * time_min)))}
        if r.gpus:
            params["gpus_per_node"] = r.gpus
        if r.memory_gb is not None:
            params["mem_gb"] = r.memory_gb
        slurm = {"partition": r.partition, "account": r.account, "constraint": r.constraint, "qos": r.qos}
        params.update({f"slurm_{k}": v for k, v in slurm.items() if v is not None})
        if r.options:
            params["slurm_additional_parameters"] = dict(r.options)
        params["slurm_array_parallelism"] = self.jobs
        return params

    def _dispatch(self) -> None:
        free = self.jobs - len(self._jobs) if self.backend == "local" else math.inf
        if not self._pending or free <= 0:
            return
        batches = self._pack(self._pending)
        if len(batches) > free:
            batches = batches[:int(free)]
        taken = {i for batch in batches for i in batch}
        self._executor.update_parameters(**self._parameters(max(len(b) for b in batches)))
        callables = []
        for batch in batches:
            shard = self.folder / f"{self._run_id}-{batch[0]}{SHARD_SUFFIX}"
            callables.append((shard, batch, CellBatch(str(shard), [(i, self._cells[i][1]) for i in batch], self.threads)))
        with self._executor.batch():
            submitted = [self._executor.submit(call) for _, _, call in callables]
        for job, (shard, batch, _) in zip(submitted, callables):
            self._jobs.append(_Job(job, shard, set(batch)))
        self._pending = [i for i in self._pending if i not in taken]

    def _pack(self, indices: list[int]) -> list[list[int]]:
        """Whole groups, in their order, packed into jobs of about ``cells_per_job`` cells."""
        groups: dict[Any, list[int]] = {}
        for i in indices:
            group = self._cells[i][1].get("group")
            groups.setdefault(group if group is not None else ("cell", i), []).append(i)
        # sized on the whole wave, not on what is left of it: throttled dispatches would make ever smaller jobs
        size = self.resources.cells_per_job or max(1, math.ceil(max(self._wave, len(indices)) / (4 * self.jobs)))
        batches: list[list[int]] = []
        for members in groups.values():
            if batches and len(batches[-1]) + len(members) <= size:
                batches[-1].extend(members)
            else:
                batches.append(list(members))
        return batches

    def _collect(self, job: _Job) -> list[tuple[Any, dict[str, Any]]]:
        done = job.job.done()  # asked first: a shard read after it has every line the job wrote
        lines, job.offset = shard_lines(job.shard, job.offset)
        finished = []
        for line in lines:
            index = line["index"]
            if index in job.indices:  # a requeued job never writes a cell twice; this guards anyway
                job.indices.discard(index)
                finished.append((self._cells.pop(index)[0], line["result"]))
        if done or not job.indices:  # a job whose every cell is back is not cancelled at close
            self._jobs.remove(job)
            self._ended.append(job)
            if job.indices:
                finished += self._lost(job)
        return finished

    def _lost(self, job: _Job) -> list[tuple[Any, dict[str, Any]]]:
        """The cells of a job that ended without their results: failed, naming the job's logs."""
        reason = f"its state: {job.job.state}"  # job.exception() would wait for a result file that never comes
        paths = job.job.paths
        log = {"stdout": str(paths.stdout.relative_to(self.folder.parent)),
               "stderr": str(paths.stderr.relative_to(self.folder.parent))}
        lost = []
        for index in sorted(job.indices):
            tag, cell = self._cells.pop(index)
            lost.append((tag, {"status": "failed", "metrics": {}, "device": None, "wall_s": 0.0, "peak_mib": None,
                               "error": f"the cluster job {job.job.job_id} ended without this cell's result "
                                        f"({reason}); its log: {log['stderr']}", "log": log}))
        job.indices.clear()
        return lost

    def _read_earlier_shards(self) -> dict[str, dict[str, Any]]:
        """Cell key → an ``ok`` result that an earlier run's job left in a shard (its parent was killed)."""
        recovered = {}
        for shard in sorted(self.folder.glob(f"*{SHARD_SUFFIX}")):
            for line in shard_lines(shard)[0]:
                if line.get("key") and line.get("result", {}).get("status") == "ok":
                    recovered[line["key"]] = line["result"]
        return recovered


def resources_from(hardware, slurm: dict[str, Any], overrides: dict[str, Any]) -> ClusterResources:
    """A job's resources: the spec's ``hardware`` and its ``slurm:`` section, then the command line's overrides."""
    values: dict[str, Any] = {
        "cpus": hardware.threads, "gpus": 1 if hardware.device == "cuda" else 0,
        "memory_gb": hardware.memory_gb,
        **{k: slurm[k] for k in ("partition", "account", "constraint", "qos", "time_min", "cells_per_job", "gpus")
           if slurm.get(k) is not None},
        "options": dict(slurm.get("options", {})),
    }
    for key, value in overrides.items():
        if key == "options":
            values["options"].update(value)
        elif value is not None:
            values[key] = value
    return ClusterResources(**values)
