"""Helpers the benchmark modules share: fixed instances, and GPU synchronisation for torch kernels."""
from __future__ import annotations

import os
import time
from functools import lru_cache

DEVICE_VARIABLE = "HARNESS_BENCH_DEVICE"


class CpuKernel:
    """Timing settings of the single-threaded CPU kernels; a benchmark class derives from it.

    The clock is this process's CPU time, not wall time: on a shared machine other
    processes stretch wall time by up to 1.7× from one minute to the next, while the CPU
    time a kernel needs moves by a few per cent (see docs/tracking.md). A kernel that waits on
    anything else (a GPU, a worker process, I/O) must keep asv's default wall clock.
    Samples: at least 5 per process (asv runs two), at most 20, stopping after 10 s.
    """

    timer = time.process_time
    repeat = (5, 20, 10.0)


_resolved_device: dict[str, str] = {}


def torch_device() -> str:
    """The device a torch kernel benchmark runs on: ``$HARNESS_BENCH_DEVICE``, else CUDA when present, else CPU."""
    if "device" not in _resolved_device:
        if os.environ.get(DEVICE_VARIABLE):
            _resolved_device["device"] = os.environ[DEVICE_VARIABLE]
        else:
            import torch

            _resolved_device["device"] = "cuda" if torch.cuda.is_available() else "cpu"
    return _resolved_device["device"]


def device_clock() -> float:
    """Wall time when the torch kernels run on a GPU (the work is not this process's CPU time), else CPU time."""
    if _resolved_device.get("device", "cpu").startswith("cuda"):
        return time.perf_counter()
    return time.process_time()


class TorchKernel:
    """Timing settings of the torch kernels; a benchmark class derives from it and calls
    :meth:`prepare` first in its ``setup`` and :func:`synchronize` last in every ``time_*``.

    On a GPU the clock is wall time, stopped after :func:`synchronize`; on the CPU it is the
    process's CPU time with one torch thread (the cdfsl spec's ``threads: 1``), for the
    reason :class:`CpuKernel` gives.
    """

    timer = staticmethod(device_clock)
    repeat = (5, 20, 10.0)

    def prepare(self) -> str:
        import torch

        device = torch_device()
        if device == "cpu":
            torch.set_num_threads(1)
        torch.manual_seed(0)
        return device


def synchronize(device) -> None:
    """Wait for the GPU's queued work, so that a ``time_*`` benchmark's clock covers it.

    CUDA kernels launch asynchronously: a timed function that ends without this returns
    before the work is done and asv records the launch, not the kernel. Call it last in
    every ``time_*`` method of a torch kernel. On the CPU it does nothing and never
    imports torch.
    """
    if str(device).startswith("cuda"):
        import torch

        torch.cuda.synchronize(device)


def context(seed: int = 0, dataset: str = "bench"):
    from harness import Context

    return Context(seed=seed, split="test", dataset=dataset)


@lru_cache(maxsize=None)
def sbm_instance(n: int, q: float = 0.15):
    """The signed-Laplacian spec's SBM (p = 0.2) at ``n`` vertices, built once per process."""
    from harness.tasks.graph.constrained_clustering import two_block_sbm

    return two_block_sbm(context(dataset=f"sbm-n{n}"), n=n, p=0.2, q=q)


@lru_cache(maxsize=None)
def cc_instance(n: int, constraints: int = 2, noise: float = 0.3):
    """One planted constrained correlation clustering instance, built once per process."""
    from harness.tasks.graph.correlation_clustering import planted_partition

    batch = planted_partition(context(dataset=f"cc-n{n}"), n=n, noise=noise, constraints=constraints, instances=1)
    return batch.instances[0]
