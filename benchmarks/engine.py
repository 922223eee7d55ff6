"""The engine's own cost per cell: a round trip through :class:`harness.executors.LocalExecutor`.

The cell is as small as a real one gets (constrained Pivot on one 6-node instance), and
repeats the same (dataset, seed), so the worker's data and reference caches answer and
what remains is the engine: pickling the payload, the pipe, the registry, building the
method, checking and returning the metrics.
"""
from __future__ import annotations

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
