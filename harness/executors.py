"""Where cells run: one small interface, :class:`Executor`, and its implementations.

The orchestrator (:mod:`harness.runner`) only submits cells and collects results as
they complete; it never knows whether they run in local processes or on a cluster. A
cell is the plain dict of :meth:`harness.plan.Cell.payload` and its result the plain dict
of :func:`harness.execute.execute_cell`; every cell is a pure function of its payload,
so any backend can run it and results merge by key.

Here: the interface and ``local``, a pool of reused worker processes with a hard timeout per
cell (:class:`LocalExecutor`). Through submitit (:mod:`harness.cluster`, which builds on
these): ``slurm`` (job arrays on a SLURM cluster) and ``local-submitit`` (submitit's local
processes: the same code path as ``slurm``, which the tests run for real). A new backend
subclasses :class:`Executor` and registers by name in :data:`harness.backends.EXECUTORS`.
"""
from __future__ import annotations

import abc
import math
import multiprocessing as mp
import os
import selectors
import time
from collections import deque
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any, Iterable, Iterator

from harness.execute import CELL_STARTED, _worker_main, startup_key
from harness.hardware import thread_environment

_KILL_GRACE_S = 2.0
# A cell's timeout counts from when its worker begins the timed part (after the worker process started and the
# cell's task, loader and method modules are imported). Until a worker says it began (CELL_STARTED), its start-up
# is held to this limit instead (or to the cell's timeout, if longer): a worker stuck importing is still killed.
STARTUP_LIMIT_S = 300.0


class Executor(abc.ABC):
    """Runs cells somewhere; hands back each result once, in completion order."""

    # the most cells the orchestrator keeps submitted and not yet handed back, or None: every cell at once
    # (a backend that plans over the whole wave, as the cluster's packing of jobs does)
    window: int | None = None

    @abc.abstractmethod
    def submit(self, tag: Any, cell: dict[str, Any]) -> None:
        """Queue ``cell``; its result comes back from :meth:`wait` with ``tag``."""

    @abc.abstractmethod
    def wait(self, timeout: float | None = None) -> list[tuple[Any, dict[str, Any]]]:
        """Block until at least one submitted cell finished (or ``timeout`` seconds passed).

        Returns every (tag, result) finished since the last call; an empty list when the
        timeout passed first or nothing is outstanding.
        """

    @property
    @abc.abstractmethod
    def outstanding(self) -> int:
        """Cells submitted and not yet handed back."""

    def running(self) -> list[tuple[Any, float]]:
        """(tag, start in ``time.monotonic()`` seconds) of each cell now running, for progress
        output; a backend that cannot tell returns an empty list."""
        return []

    def close(self) -> None:
        """Stop the workers; cells still outstanding are abandoned."""

    def run(self, cells: Iterable[tuple[Any, dict[str, Any]]]) -> Iterator[tuple[Any, dict[str, Any]]]:
        """Submit every (tag, cell) and yield (tag, result) as they complete."""
        for tag, cell in cells:
            self.submit(tag, cell)
        while self.outstanding:
            yield from self.wait()

    def __enter__(self) -> "Executor":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


# --- local worker processes ------------------------------------------------------------

@dataclass
class _Worker:
    process: mp.Process
    conn: Connection
    slot: int  # its index in the pool: picks its GPU when workers are pinned
    # (tag, cell, sent at) in flight, in the order sent: the first runs, the next waits in the pipe, so the
    # worker begins it while the parent records the first
    queue: deque = field(default_factory=deque)
    deadline: float = math.inf  # of the first cell in the queue: its start-up's, then its timeout's
    started: float = 0.0  # when the worker began the first cell's timed part (or the cell became first, until then)
    # the start-up keys (execute.startup_key) of the cells it began: a cell of a new key imports first, and the
    # worker says when its timed part begins; any other begins the moment the cell before it is back
    begun: set = field(default_factory=set)
    starting: bool = False  # the first cell's worker has not yet said it began the timed part
    group: Any = None  # the group of the last cell it took


class LocalExecutor(Executor):
    """``jobs`` worker processes on this machine, started once and reused.

    The engine's cost per cell is a pipe round trip, and a worker never waits for it: each
    holds one cell ahead (:data:`AHEAD`), which it begins while the parent records the one
    before. A worker whose cell passes its ``timeout_s``, counted from when the worker begins
    the cell (a new worker's start-up is not part of it), is killed and replaced (the cell is
    ``timed-out``); one that dies is replaced too (the cell is ``failed``); the cell it held
    ahead goes back to the queue, unrun. A worker's start-up (the process, and the imports of a cell whose task,
    loader and method it has not begun before) is not part of the timeout but held to :data:`STARTUP_LIMIT_S`
    (a worker stuck there is killed the same way, its cell ``timed-out``). With ``gpus`` (ids), worker *i* sees only GPU
    ``gpus[i % len(gpus)]`` through ``CUDA_VISIBLE_DEVICES``: with as many workers as
    GPUs, never two workers on one GPU.

    Pending cells wait in one queue per ``group`` (a seed × method, whose training a task may
    cache in the worker), so choosing a worker's next cell costs the same at 10 cells and at
    a million.
    """

    AHEAD = 1  # cells sent to a worker beyond the one it runs
    window = 10_000  # submitted and not back: enough that no worker waits, few enough not to hold a sweep's payloads

    def __init__(self, jobs: int = 1, threads: int = 1, gpus: list[str] | None = None, **_: Any):
        self.jobs = max(1, jobs)
        self.threads = threads
        self.gpus = list(gpus or [])
        self._context = mp.get_context("spawn")  # fork is unsafe with BLAS/torch threads
        self._workers: list[_Worker] = []
        # group → its pending (tag, cell), in submission order; the groups in the order of their oldest cell
        self._pending: dict[Any, deque] = {}
        self._pending_count = 0
        self._busy: list[_Worker] = []
        # the busy workers' pipes, registered while busy: one epoll set for the pool's life, where
        # multiprocessing's wait() and Connection.poll() built a selector per call (the most of the parent's
        # cost per cell with no-op cells)
        self._selector = selectors.DefaultSelector()
        self._ungrouped = 0  # a cell without a group is a group of its own

    # the interface ---------------------------------------------------------------------

    def submit(self, tag: Any, cell: dict[str, Any]) -> None:
        self._put(tag, cell, front=False)

    @property
    def outstanding(self) -> int:
        return self._pending_count + sum(len(w.queue) for w in self._busy)

    def running(self) -> list[tuple[Any, float]]:
        return [(w.queue[0][0], w.started) for w in self._busy if w.queue]

    def wait(self, timeout: float | None = None) -> list[tuple[Any, dict[str, Any]]]:
        give_up = math.inf if timeout is None else time.monotonic() + timeout
        while self.outstanding:
            self._dispatch()
            now = time.monotonic()
            until = min([w.deadline for w in self._busy] + [give_up])
            events = self._selector.select(max(0.0, until - now) if until < math.inf else None)
            finished = self._collect({key.data.slot for key, _ in events})
            if finished or time.monotonic() >= give_up:
                return finished
        return []

    def close(self) -> None:
        for worker in self._busy:
            self._selector.unregister(worker.conn)
        for worker in self._workers:
            try:
                worker.conn.send(None)
            except (OSError, BrokenPipeError):
                pass
        for worker in self._workers:
            worker.process.join(_KILL_GRACE_S)
            if worker.process.is_alive():
                self._kill(worker)
        self._workers, self._busy, self._pending, self._pending_count = [], [], {}, 0
        self._selector.close()
        self._selector = selectors.DefaultSelector()  # a closed pool may be used again

    # pending cells ---------------------------------------------------------------------

    def _put(self, tag: Any, cell: dict[str, Any], front: bool) -> None:
        group = cell.get("group")
        if group is None:
            group = ("ungrouped", self._ungrouped)
            self._ungrouped += 1
        queue = self._pending.get(group)
        if queue is None:
            queue = self._pending[group] = deque()
            if front:  # a cell handed back unrun goes before every other group
                self._pending = {group: queue, **{g: q for g, q in self._pending.items() if g != group}}
        (queue.appendleft if front else queue.append)((tag, cell))
        self._pending_count += 1

    def _take(self, worker: _Worker) -> tuple[Any, dict[str, Any]]:
        """The pending cell this worker should take next.

        Cells of one ``group`` (a seed and method, whose training a task may cache in the
        worker) stay on the worker that started the group; otherwise a worker takes the
        oldest cell of a group no other worker holds, and only then any cell.
        """
        group = worker.group if worker.group in self._pending else None
        if group is None:
            held = {w.group for w in self._workers if w is not worker}
            # at most one held group per other worker is skipped: the cost is the pool's size, not the queue's
            group = next((g for g in self._pending if g not in held), next(iter(self._pending)))
        queue = self._pending[group]
        item = queue.popleft()
        if not queue:
            del self._pending[group]
        self._pending_count -= 1
        return item

    # workers ---------------------------------------------------------------------------

    def _environment(self, slot: int) -> dict[str, str]:
        env = thread_environment(self.threads)
        # string hashing is salted per process unless fixed: a method that iterates a set of names (causal-learn's
        # FCI over its separating sets) then counts its work differently from run to run, and `harness regress`
        # flags a move that no code caused. A seed the user sets is kept.
        env["PYTHONHASHSEED"] = os.environ.get("PYTHONHASHSEED", "0")
        if self.gpus:
            env["CUDA_VISIBLE_DEVICES"] = self.gpus[slot % len(self.gpus)]
        return env

    def _spawn(self, slot: int) -> _Worker:
        parent, child = self._context.Pipe()
        env = self._environment(slot)
        saved = {k: os.environ.get(k) for k in env}
        os.environ.update(env)  # children read these before importing BLAS or CUDA
        try:
            process = self._context.Process(target=_worker_main, args=(child, os.getpid()), daemon=True)
            process.start()
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value
        child.close()
        return _Worker(process, parent, slot)

    def _dispatch(self) -> None:
        idle = sum(not w.queue for w in self._workers)
        while len(self._workers) < self.jobs and self._pending_count > idle:
            self._workers.append(self._spawn(len(self._workers)))
            idle += 1
        # first a cell for every idle worker, then one ahead for each: never two queued where a worker idles
        for depth in range(1 + self.AHEAD):
            for worker in self._workers:
                if len(worker.queue) == depth and self._pending_count:
                    tag, cell = self._take(worker)
                    worker.group = cell.get("group")
                    now = time.monotonic()
                    worker.queue.append((tag, cell, now))
                    if depth == 0:
                        self._begin_head(worker, now)
                        self._busy.append(worker)
                        self._selector.register(worker.conn, selectors.EVENT_READ, worker)
                    worker.conn.send(cell)

    def _begin_head(self, worker: _Worker, sent: float) -> None:
        """The first cell of the queue, begun now (sent to an idle worker, or the one before it is back).

        A cell of a start-up key the worker has not begun yet imports first (in a new worker, after the process
        starts): until the worker says its timed part began, the deadline is the start-up limit's.
        """
        worker.started = sent
        cell = worker.queue[0][1]
        key = startup_key(cell)
        worker.starting = key not in worker.begun  # the worker keeps the same set, in the same order
        worker.begun.add(key)
        timeout = float(cell["timeout_s"])
        worker.deadline = sent + (max(STARTUP_LIMIT_S, timeout) if worker.starting else timeout)

    def _collect(self, ready: set[int]) -> list[tuple[Any, dict[str, Any]]]:
        """One message from each worker whose pipe is readable (``ready``: their slots); the lost ones."""
        finished = []
        for worker in list(self._busy):
            if worker.slot in ready:
                try:
                    message = worker.conn.recv()
                    if message == CELL_STARTED:  # the cell's start-up is done: its timeout runs from now
                        worker.starting = False
                        worker.started = time.monotonic()
                        worker.deadline = worker.started + float(worker.queue[0][1]["timeout_s"])
                    else:
                        tag = worker.queue.popleft()[0]
                        finished.append((tag, message))
                        if worker.queue:  # the worker began the cell held ahead as it sent this result
                            self._begin_head(worker, time.monotonic())
                except (EOFError, OSError):
                    code = worker.process.exitcode
                    worker.process.join(_KILL_GRACE_S)
                    code = worker.process.exitcode if code is None else code
                    finished.append(self._lose(worker, f"the worker process died (exit code {code}); out of memory "
                                                       "or a crash in native code"))
                    continue
            elif worker.queue and time.monotonic() >= worker.deadline:
                timeout = worker.queue[0][1]["timeout_s"]
                if worker.starting:
                    message = (f"killed after {max(STARTUP_LIMIT_S, timeout):g} s of start-up (the worker process, "
                               f"the imports of the task, loader and method) without beginning the cell")
                else:
                    message = f"killed after the {timeout:g} s timeout"
                finished.append(self._lose(worker, message, status="timed-out"))
                continue
            if not worker.queue:
                worker.deadline = math.inf
                self._idle(worker)
        return finished

    def _idle(self, worker: _Worker) -> None:
        self._busy.remove(worker)
        self._selector.unregister(worker.conn)

    def _lose(self, worker: _Worker, message: str, status: str = "failed") -> tuple[Any, dict[str, Any]]:
        """The worker's running cell is lost (``status``, ``message``); the cells it held ahead go back unrun."""
        tag = worker.queue[0][0]
        result = _lost(worker, message, status)
        for ahead_tag, ahead_cell, _ in reversed(list(worker.queue)[1:]):
            self._put(ahead_tag, ahead_cell, front=True)
        worker.queue.clear()
        worker.deadline = math.inf
        self._idle(worker)
        self._replace(worker)
        return tag, result

    def _kill(self, worker: _Worker) -> None:
        worker.process.terminate()
        worker.process.join(_KILL_GRACE_S)
        if worker.process.is_alive():
            worker.process.kill()
            worker.process.join()
        worker.conn.close()

    def _replace(self, worker: _Worker) -> None:
        self._kill(worker)
        index = self._workers.index(worker)
        self._workers[index] = self._spawn(worker.slot)


def _lost(worker: _Worker, message: str, status: str = "failed") -> dict:
    """The result of a cell whose worker was killed or died; ``wall_s`` counts its timed part, as its timeout does
    (none when it was lost in its start-up)."""
    wall_s = 0.0 if worker.starting else time.monotonic() - worker.started
    return {"status": status, "metrics": {}, "error": message, "device": None, "wall_s": wall_s, "peak_mib": None}
