"""What the engine needs from a task's numerical framework, behind one small adapter.

The engine itself is framework-neutral: it never calls torch. A task names its framework
(:attr:`harness.Task.framework`); the worker asks the adapter to resolve the device, seed
the framework, set its threads and measure the peak accelerator memory of each cell.
Torch is the one implemented; another framework (JAX, CuPy) is one more subclass here.
"""
from __future__ import annotations

import os
from typing import ClassVar

from harness.hardware import DeviceUnavailable, cpu_description


class Framework:
    """A task without an accelerator framework (NumPy, SciPy): CPU only, nothing to set up."""

    name: ClassVar[str | None] = None

    def resolve_device(self, requested: str) -> tuple[str, str]:
        """(device for the Context, human-readable description) for ``auto``, ``cpu`` or ``cuda``.

        A task without an accelerator runs on the CPU whatever was asked: importing a
        framework only to learn that no GPU is needed would cost every worker a second.
        """
        return "cpu", cpu_description()

    def prepare(self, seed: int, threads: int) -> None:
        """Seed the framework's global generators and set its thread count, before each cell."""

    def reset_peak_memory(self, device: str) -> None:
        """Forget the peak accelerator memory of earlier cells on this worker."""

    def peak_memory_mib(self, device: str) -> float | None:
        """Peak accelerator memory of this cell in MiB, or None on the CPU."""
        return None


class TorchFramework(Framework):
    name = "torch"

    def resolve_device(self, requested: str) -> tuple[str, str]:
        if requested == "cpu":
            return "cpu", cpu_description()
        import torch

        if torch.cuda.is_available():
            # a pinned worker sees only its own GPU (CUDA_VISIBLE_DEVICES), as cuda:0
            return "cuda", f"cuda: {torch.cuda.get_device_name(0)}" + _pinned_note()
        if requested == "cuda":
            raise DeviceUnavailable("this cell asks for CUDA (--device cuda or hardware.device: cuda), "
                                    "and no CUDA device is visible")
        return "cpu", cpu_description()

    def prepare(self, seed: int, threads: int) -> None:
        import torch

        torch.set_num_threads(threads)
        torch.manual_seed(seed)

    def reset_peak_memory(self, device: str) -> None:
        if device == "cuda":
            import torch

            torch.cuda.reset_peak_memory_stats()

    def peak_memory_mib(self, device: str) -> float | None:
        if device != "cuda":
            return None
        import torch

        return torch.cuda.max_memory_allocated() / 2**20


FRAMEWORKS: dict[str | None, type[Framework]] = {None: Framework, "torch": TorchFramework}


def framework_of(task) -> Framework:
    try:
        return FRAMEWORKS[task.framework]()
    except KeyError:
        known = ", ".join(repr(k) for k in FRAMEWORKS)
        raise ValueError(f"task {task.name!r} names framework {task.framework!r}; the engine knows {known}") from None


def _pinned_note() -> str:
    pinned = os.environ.get("CUDA_VISIBLE_DEVICES")
    return f" (GPU {pinned})" if pinned else ""
