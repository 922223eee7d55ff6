"""The executors by name (``harness run --executor``): :data:`EXECUTORS` and :func:`make_executor`.

Above both :mod:`harness.executors` (the interface and the local pool) and :mod:`harness.cluster`
(submitit's executors, built on them): submitit is imported only when a run asks for one of its
executors, so a run without a cluster never needs it installed, and the local pool only when it is made.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harness.executors import Executor


def _local(**options: Any) -> "Executor":
    from harness.executors import LocalExecutor  # imports the worker's module: only for a run with cells to run

    return LocalExecutor(**options)


def _submitit(backend: str):
    def make(**options: Any) -> "Executor":
        from harness.cluster import SubmititExecutor  # imports submitit: only for a run that asks for it

        return SubmititExecutor(backend=backend, **options)
    return make


# name → a callable that takes make_executor's keywords; each module loads only when its executor is asked for
EXECUTORS: dict[str, Any] = {"local": _local, "slurm": _submitit("slurm"), "local-submitit": _submitit("local")}
CLUSTER_EXECUTORS = ("slurm", "local-submitit")  # those that take a results folder and job resources


def make_executor(name: str, *, jobs: int, threads: int, gpus: list[str] | None = None, **options: Any) -> Executor:
    """The executor ``name`` (``harness run --executor``), sized for this run.

    ``options``: what a cluster executor needs besides (``folder``, the spec's results folder, and
    ``resources``, a :class:`harness.cluster.ClusterResources`); the local pool ignores them.
    """
    try:
        make = EXECUTORS[name]
    except KeyError:
        raise ValueError(f"unknown executor {name!r}; expected one of {', '.join(EXECUTORS)}") from None
    return make(jobs=jobs, threads=threads, gpus=gpus, **options)
