"""Run cells in reusable worker processes, with a hard timeout per cell.

A cell is a plain dict (see :func:`harness.plan.Cell.payload`); its result is a plain
dict with ``status`` (ok, failed, timed-out, skipped), ``metrics``, ``error``,
``wall_s``, ``peak_mib`` and ``device``. Workers are started once and reused, so the
engine's overhead per cell is a pipe round-trip; a worker whose cell times out is
killed and replaced.
"""
from __future__ import annotations

import math
import multiprocessing as mp
import os
import time
import traceback
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any, Iterable, Iterator

from harness.hardware import thread_environment
from harness.tasks.base import WorkerCache

_KILL_GRACE_S = 2.0


# --- inside a worker -------------------------------------------------------------------

_data_cache = WorkerCache(16)  # every dataset of a seed, since cells run seed → method → dataset


def _reset_peak_rss() -> bool:
    try:  # Linux: writing 5 resets VmHWM, so the peak is this cell's alone
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def _peak_rss_mib() -> float:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _seed_everything(seed: int, uses_torch: bool) -> None:
    import random

    import numpy as np

    random.seed(seed)
    np.random.seed(seed % 2**32)
    if uses_torch:
        import torch

        torch.manual_seed(seed)


def execute_cell(cell: dict[str, Any]) -> dict[str, Any]:
    """Evaluate one cell in this process and return its result dict (never raises)."""
    from harness.hardware import DeviceUnavailable, resolve_device
    from harness.registry import default_registry
    from harness.tasks.base import Context, DataUnavailable

    started = time.perf_counter()
    result: dict[str, Any] = {"status": "ok", "metrics": {}, "error": None, "device": None}
    _reset_peak_rss()
    try:
        registry = default_registry()
        task = registry.load("tasks", cell["task"])
        uses_torch = task.framework == "torch"
        device, result["device"] = resolve_device(cell["device"], uses_torch)
        if uses_torch:
            import torch

            torch.set_num_threads(cell["threads"])
        _seed_everything(cell["seed"], uses_torch)
        context = Context(
            seed=cell["seed"], split=cell["split"], dataset=cell["dataset_id"], device=device,
            threads=cell["threads"], data_dir=Path(cell["data_dir"]) if cell.get("data_dir") else None,
            precision=cell.get("precision", "fp32"),
        )
        data_key = (cell["dataset_name"], repr(sorted(cell["dataset_params"].items())), cell["seed"], cell["split"],
                    cell["dataset_id"], cell.get("data_dir"))
        data = _data_cache.get_or_build(
            data_key, lambda: registry.load("datasets", cell["dataset_name"])(context, **cell["dataset_params"]))
        method = registry.load("methods", cell["method_name"])(**cell["params"])
        metrics = task.evaluate(method, data, context)
        clean = {}
        for name, value in metrics.items():
            value = float(value)
            if not math.isfinite(value):
                raise ValueError(f"metric {name!r} is {value} (not a finite number)")
            clean[name] = value
        result["metrics"] = clean
        if uses_torch and device == "cuda":
            import torch

            result["peak_gpu_mib"] = torch.cuda.max_memory_allocated() / 2**20
    except (DataUnavailable, DeviceUnavailable) as exc:
        result.update(status="skipped", error=str(exc))
    except Exception as exc:  # the cell failed; the run goes on
        result.update(status="failed", error=f"{type(exc).__name__}: {exc}",
                      traceback="".join(traceback.format_exc(limit=-6)))
    result["wall_s"] = time.perf_counter() - started
    result["peak_mib"] = round(_peak_rss_mib(), 1)
    result["pid"] = os.getpid()
    return result


def _worker_main(conn: Connection) -> None:
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle; it stops the workers
    while True:
        try:
            cell = conn.recv()
        except EOFError:
            return
        if cell is None:
            return
        conn.send(execute_cell(cell))


# --- in the parent ---------------------------------------------------------------------

@dataclass
class _Worker:
    process: mp.Process
    conn: Connection
    cell: tuple[Any, dict] | None = None  # (tag, cell) in flight
    deadline: float = math.inf
    started: float = 0.0
    group: Any = None  # the group of the last cell it took


class WorkerPool:
    """``jobs`` worker processes; :meth:`run` yields (tag, result) as cells finish."""

    def __init__(self, jobs: int = 1, threads: int = 1):
        self.jobs = max(1, jobs)
        self.threads = threads
        self._context = mp.get_context("spawn")  # fork is unsafe with BLAS/torch threads
        self._workers: list[_Worker] = []

    def __enter__(self) -> "WorkerPool":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _spawn(self) -> _Worker:
        parent, child = self._context.Pipe()
        saved = {k: os.environ.get(k) for k in thread_environment(self.threads)}
        os.environ.update(thread_environment(self.threads))  # children read these before importing BLAS
        try:
            process = self._context.Process(target=_worker_main, args=(child,), daemon=True)
            process.start()
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value
        child.close()
        return _Worker(process, parent)

    def _kill(self, worker: _Worker) -> None:
        worker.process.terminate()
        worker.process.join(_KILL_GRACE_S)
        if worker.process.is_alive():
            worker.process.kill()
            worker.process.join()
        worker.conn.close()

    def run(self, cells: Iterable[tuple[Any, dict]]) -> Iterator[tuple[Any, dict]]:
        """Run (tag, cell) pairs; yield (tag, result) in completion order."""
        pending = list(cells)
        while len(self._workers) < min(self.jobs, len(pending)):
            self._workers.append(self._spawn())
        busy: list[_Worker] = []
        while pending or busy:
            for worker in self._workers:
                if worker.cell is None and pending:
                    tag, cell = pending.pop(self._next_for(worker, pending))
                    worker.group = cell.get("group")
                    worker.cell, worker.started = (tag, cell), time.monotonic()
                    worker.deadline = worker.started + float(cell["timeout_s"])
                    worker.conn.send(cell)
                    busy.append(worker)
            now = time.monotonic()
            ready = wait([w.conn for w in busy], timeout=max(0.0, min(w.deadline for w in busy) - now))
            for worker in list(busy):
                tag, cell = worker.cell
                result = None
                if worker.conn in ready:
                    try:
                        result = worker.conn.recv()
                    except (EOFError, OSError):
                        code = worker.process.exitcode
                        worker.process.join(_KILL_GRACE_S)
                        code = worker.process.exitcode if code is None else code
                        result = _lost(worker, f"the worker process died (exit code {code}); out of memory or a crash in native code")
                        self._replace(worker)
                elif time.monotonic() >= worker.deadline:
                    result = _lost(worker, f"killed after the {cell['timeout_s']:g} s timeout", status="timed-out")
                    self._replace(worker)
                if result is not None:
                    worker.cell, worker.deadline = None, math.inf
                    busy.remove(worker)
                    yield tag, result

    def _next_for(self, worker: _Worker, pending: list[tuple[Any, dict]]) -> int:
        """Index of the pending cell this worker should take next.

        Cells of one ``group`` (a seed and method, whose training a task may cache in the
        worker) stay on the worker that started the group; otherwise a worker takes the
        first cell of a group no other worker holds, and only then any cell.
        """
        groups = [c.get("group") for _, c in pending]
        if worker.group is not None and worker.group in groups:
            return groups.index(worker.group)
        held = {w.group for w in self._workers if w is not worker}
        return next((i for i, g in enumerate(groups) if g is None or g not in held), 0)

    def _replace(self, worker: _Worker) -> None:
        self._kill(worker)
        index = self._workers.index(worker)
        self._workers[index] = self._spawn()
        worker.cell = None

    def close(self) -> None:
        for worker in self._workers:
            try:
                worker.conn.send(None)
            except (OSError, BrokenPipeError):
                pass
        for worker in self._workers:
            worker.process.join(_KILL_GRACE_S)
            if worker.process.is_alive():
                self._kill(worker)
        self._workers = []


def _lost(worker: _Worker, message: str, status: str = "failed") -> dict:
    return {"status": status, "metrics": {}, "error": message, "device": None,
            "wall_s": time.monotonic() - worker.started, "peak_mib": None}
