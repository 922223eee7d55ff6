"""One cell, evaluated inside a worker process: :func:`execute_cell`.

A cell is a plain dict (see :func:`harness.plan.Cell.payload`); its result is a plain
dict with ``status`` (ok, failed, timed-out, skipped), ``metrics``, ``error``,
``wall_s``, ``peak_mib``, ``peak_gpu_mib`` and ``device``. The executors of
:mod:`harness.executors` send cells to workers that call it.
"""
from __future__ import annotations

import functools
import math
import os
import socket
import time
import traceback
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, Callable

from harness.tasks.base import WorkerCache


# --- inside a worker -------------------------------------------------------------------

_data_cache = WorkerCache(16)  # every dataset of a seed, since cells run seed → method → dataset


class _PeakRss:
    """This process's peak resident memory (Linux's VmHWM), reset per cell so each peak is its cell's alone.

    The two /proc files stay open for the worker's life and are read with ``pread``: opening and parsing
    them as text for every cell was a fifth of a worker's cost per no-op cell.
    """

    def __init__(self):
        self._status: int | None = None
        self._clear: int | None = None
        self._opened = False

    def _open(self) -> None:
        self._opened = True
        try:
            self._status = os.open("/proc/self/status", os.O_RDONLY)
            self._clear = os.open("/proc/self/clear_refs", os.O_WRONLY)
        except OSError:  # not Linux, or /proc is not mounted: getrusage's peak, which is never reset
            pass

    def reset(self) -> bool:
        if not self._opened:
            self._open()
        if self._clear is None:
            return False
        try:  # writing 5 resets VmHWM
            os.write(self._clear, b"5")
            return True
        except OSError:
            return False

    def mib(self) -> float:
        if not self._opened:
            self._open()
        if self._status is not None:
            try:
                status = os.pread(self._status, 16384, 0)
                start = status.index(b"VmHWM:") + 6
                return int(status[start:status.index(b"kB", start)]) / 1024
            except (OSError, ValueError):
                pass
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


_peak_rss = _PeakRss()


@functools.cache
def _host() -> str:
    return socket.gethostname()


def _seed_everything(seed: int) -> None:
    import random

    import numpy as np

    random.seed(seed)
    np.random.seed(seed % 2**32)


def startup_key(cell: dict[str, Any]) -> tuple:
    """What a cell imports before it begins (its task, loader and method): a worker that has not yet begun a cell
    of this key tells its parent when it begins (:data:`CELL_STARTED`), the parent computes the same key to
    expect it (:class:`harness.executors.LocalExecutor`)."""
    return cell["task"], cell["dataset_name"], cell["method_name"], cell["device"]


def execute_cell(cell: dict[str, Any], on_start: Callable[[], None] | None = None) -> dict[str, Any]:
    """Evaluate one cell in this process and return its result dict (never raises).

    First the start-up, outside the cell's timeout and its ``wall_s``: the registry, the task, the dataset
    loader's and the method's modules imported, the device resolved, the framework seeded and given its
    threads. Then ``on_start()`` (a worker tells its parent that the timed part begins) and the timed part:
    the data built (or taken from the worker's cache), the method constructed, the task's ``evaluate``.
    ``wall_s`` is the timed part's seconds, as its timeout counts them."""
    from harness.frameworks import framework_of
    from harness.hardware import DeviceUnavailable
    from harness.registry import RegistryError, default_registry
    from harness.tasks.base import Context, DataUnavailable
    from harness.tasks.evaluation import Evaluation, curve_record

    started = time.perf_counter()
    result: dict[str, Any] = {"status": "ok", "metrics": {}, "error": None, "device": None}
    _peak_rss.reset()
    device = "cpu"
    framework = None
    try:
        registry = default_registry()
        task = registry.load("tasks", cell["task"])
        loader = registry.load("datasets", cell["dataset_name"])
        method_class = registry.load("methods", cell["method_name"])
        framework = framework_of(task)
        device, result["device"] = framework.resolve_device(cell["device"])
        framework.reset_peak_memory(device)
        _seed_everything(cell["seed"])
        framework.prepare(cell["seed"], cell["threads"])
        if on_start is not None:
            on_start()
        started = time.perf_counter()  # the timed part: what the cell's timeout and wall_s count
        context = Context(
            seed=cell["seed"], split=cell["split"], dataset=cell["dataset_id"], device=device,
            threads=cell["threads"], data_dir=Path(cell["data_dir"]) if cell.get("data_dir") else None,
            precision=cell.get("precision", "fp32"),
        )
        data_key = (cell["dataset_name"], repr(sorted(cell["dataset_params"].items())), cell["seed"], cell["split"],
                    cell["dataset_id"], cell.get("data_dir"))
        data = _data_cache.get_or_build(data_key, lambda: loader(context, **cell["dataset_params"]))
        method = method_class(**cell["params"])
        metrics = task.evaluate(method, data, context)
        if isinstance(metrics, Evaluation):
            curves = {name: curve_record(name, curve) for name, curve in metrics.curves.items()}
            if curves:
                result["curves"] = curves
            metrics = metrics.metrics
        clean = {}
        for name, value in metrics.items():
            value = float(value)
            if not math.isfinite(value):
                raise ValueError(f"metric {name!r} is {value} (not a finite number)")
            clean[name] = value
        unlisted = registry.unlisted_metrics(cell["task"], clean)
        if unlisted:
            raise RegistryError(unlisted)
        result["metrics"] = clean
    except (DataUnavailable, DeviceUnavailable) as exc:
        result.update(status="skipped", error=str(exc))
    except Exception as exc:  # the cell failed; the run goes on
        result.update(status="failed", error=f"{type(exc).__name__}: {exc}",
                      traceback="".join(traceback.format_exc(limit=-6)))
    if framework is not None:
        try:
            result["peak_gpu_mib"] = framework.peak_memory_mib(device)
        except Exception:  # a broken accelerator must not hide the cell's own result
            result["peak_gpu_mib"] = None
    result["wall_s"] = time.perf_counter() - started
    result["peak_mib"] = round(_peak_rss.mib(), 1)
    result["pid"] = os.getpid()
    result["host"] = _host()  # provenance: results from several machines merge by key
    result.update(_load())  # how busy the machine was: a timing read at a load above its cores is not a benchmark's
    result["visible_gpus"] = os.environ.get("CUDA_VISIBLE_DEVICES")
    return result


def _load() -> dict[str, Any]:
    """The machine's load average over 1, 5 and 15 minutes when the cell ended, and the cores this process may use;
    nothing where the system has no load average."""
    try:
        load = os.getloadavg()
    except (OSError, AttributeError):
        return {}
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cores = os.cpu_count()
    return {"load_average": [round(value, 2) for value in load], "cores": cores}


CELL_STARTED = "started"  # a worker's message that its start-up for the cell is done and the timed part begins


def _die_with_parent() -> None:
    """Linux: have the kernel SIGKILL this worker when the process that started it dies, however it dies (a
    SIGKILL'd `harness run` cannot stop its workers itself, and one left computing kept 14 GB for minutes)."""
    import ctypes
    import signal

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux: the pipe's EOF still ends an idle worker
        return


def _worker_main(conn: Connection, parent_pid: int | None = None) -> None:
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle; it stops the workers
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    _die_with_parent()
    if parent_pid is not None and os.getppid() != parent_pid:
        return  # the parent died before the death signal was armed
    begun: set[tuple] = set()  # the start-up keys of the cells begun here: their modules are imported
    tell = functools.partial(conn.send, CELL_STARTED)
    while True:
        try:
            cell = conn.recv()
        except EOFError:
            return
        if cell is None:
            return
        # A cell of a key this worker has not begun yet (its first; a new method) may import for a while: it says
        # when its timed part begins. Any other begins the moment it is read, as the result before it is sent, and
        # the parent counts its timeout from that result, with no message per cell.
        key = startup_key(cell)
        fresh = key not in begun
        begun.add(key)
        conn.send(execute_cell(cell, tell if fresh else None))


