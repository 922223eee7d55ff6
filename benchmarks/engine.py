"""The engine's own costs: per cell, and the fixed cost of a command with nothing new to run.

``WorkerPoolOverhead``: a round trip through :class:`harness.executors.LocalExecutor`. The cell is as
small as a real one gets (constrained Pivot on one 6-node instance), and repeats the same (dataset,
seed), so the worker's data and reference caches answer and what remains is the engine: pickling the
payload, the pipe, the registry, building the method, checking and returning the metrics.

``IdleRun``: ``harness run`` of a spec whose every cell is already in its results folder.
"""
from __future__ import annotations

import time
from pathlib import Path

CELLS_PER_CALL = 20
_pools: dict = {}


def _pool():
    """One warm worker per benchmark process: spawning it (about a second) is not the per-cell cost."""
    if "pool" not in _pools:
        from harness.executors import LocalExecutor

        pool = LocalExecutor(jobs=1, threads=1)
        list(pool.run([(0, _payload())]))  # the worker's imports and the instance's exact optimum
        _pools["pool"] = pool
    return _pools["pool"]


def _payload() -> dict:
    if "payload" not in _pools:
        from harness.plan import Cell
        from harness.spec.load import load_spec
        from harness.spec.model import DatasetEntry, MethodEntry

        spec = load_spec(Path(__file__).resolve().parents[1] / "specs" / "constrained-cc.yaml", "quick")
        dataset = DatasetEntry(id="bench-n6", name="planted-partition-cc", params={"n": 6, "instances": 1})
        method = MethodEntry(id="pivot", name="pivot", kind="baseline")
        _pools["payload"] = Cell(spec, dataset, method, 0, "test", {}, "cpu", 60.0).payload()
    return _pools["payload"]


class WorkerPoolOverhead:
    """20 (``CELLS_PER_CALL``) trivial cells through one warm worker process; wall time per call.

    Wall time, not CPU time: the cells run in the worker, and the round trip is the cost.
    """

    version = "1"
    repeat = (5, 20, 10.0)

    def setup(self):
        self.pool = _pool()
        self.payload = _payload()

    def time_cells(self):
        for _, result in self.pool.run((i, self.payload) for i in range(CELLS_PER_CALL)):
            if result["status"] != "ok":
                raise RuntimeError(f"the benchmark cell failed: {result.get('error')}")


class IdleRun:
    """``harness run`` with nothing new to run: constrained-cc at the quick profile into a copy of its committed
    results folder, every cell already there (docs/performance.md, "Fixed cost").

    Each call is a whole new process, as a user's command is: Python's start, the imports, checking the spec
    (read back from the cache once checked), planning, reading ``runs.jsonl``. ``time_idle_run`` is its wall time
    (the work runs in another process, so the clock is the wall); ``track_idle_run_cpu`` the CPU time of that
    process and those it starts (``git``), the median of 5 calls, the figure /usr/bin/time's user + sys gives.
    ``setup_cache`` runs it twice first: the pages are built once for this code and the cache filled.
    """

    timer = time.perf_counter
    number = 1
    repeat = (3, 7, 30.0)
    timeout = 300.0

    def setup_cache(self) -> str:
        import shutil
        import tempfile

        where = Path(tempfile.mkdtemp(prefix="harness-idle-"))
        shutil.copytree(_ROOT / "results" / "quick" / "constrained-cc", where / "out" / "constrained-cc")
        for _ in range(2):
            _idle_run(str(where))
        return str(where)

    def time_idle_run(self, where: str):
        _idle_run(where)

    def track_idle_run_cpu(self, where: str) -> float:
        import resource
        import statistics

        spent = []
        for _ in range(5):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            _idle_run(where)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            spent.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
        return statistics.median(spent)

    track_idle_run_cpu.unit = "seconds"


_ROOT = Path(__file__).resolve().parents[1]


def _idle_run(where: str) -> None:
    """The command, run from the repository root (its own ``harness``, the tree being measured), with the cache in
    ``where``."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "HARNESS_CACHE_DIR": os.path.join(where, "cache")}
    done = subprocess.run([sys.executable, "-m", "harness.cli", "run", "specs/constrained-cc.yaml", "--profile",
                           "quick", "--out", os.path.join(where, "out"), "--no-progress"], cwd=_ROOT, env=env,
                          capture_output=True, text=True)
    if done.returncode != 0 or "nothing new to run" not in done.stdout:
        raise RuntimeError(f"the idle run did something else (exit {done.returncode}): {done.stdout}{done.stderr}")
