"""What a machine offers a cell: CPU name, visible GPUs, thread limits, package versions, git commit.

Framework-neutral: nothing here imports torch (see :mod:`harness.frameworks`). This module probes the
machine it runs on; reading the device descriptions stored in results is :mod:`harness.devices`'.
"""
from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

# platform and subprocess are imported where a probe needs them: a run with nothing to do probes nothing but its
# cores (their imports were a twentieth of it)

THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS")
VERSIONED_PACKAGES = ("harness", "numpy", "scipy", "scikit-learn", "optuna", "pandas", "torch")


class DeviceUnavailable(Exception):
    """The spec or the command line asked for a device this machine does not have."""


@lru_cache(maxsize=1)
def cpu_name() -> str:
    """The CPU's model name and, where ``/proc/cpuinfo`` gives them, its family and model numbers and its widest
    vector instruction set: ``"AMD EPYC (family 25 model 1, AVX2)"``. Virtual machines report generic names
    ("AMD EPYC", "Intel(R) Xeon(R) Processor") for CPU generations whose BLAS and torch kernels differ (an AVX2
    Zen 3 and an AVX-512 one gave other quick-profile numbers from the same code), and ``harness regress``
    compares rows of one device class exactly, so the class must name what decides the arithmetic."""
    import platform

    try:
        return cpu_name_of(Path("/proc/cpuinfo").read_text())
    except (OSError, ValueError):
        return platform.processor() or platform.machine()


def cpu_name_of(cpuinfo: str) -> str:
    """:func:`cpu_name` from the text of ``/proc/cpuinfo`` (its first processor); ValueError without a model name."""
    fields: dict[str, str] = {}
    for line in cpuinfo.splitlines():
        if not line.strip():
            if fields:
                break  # the first processor's block is enough: a machine's cores are alike
            continue
        key, _, value = line.partition(":")
        fields.setdefault(key.strip(), value.strip())
    if not fields.get("model name"):
        raise ValueError("no model name in /proc/cpuinfo")
    flags = set(fields.get("flags", "").split())
    isa = next((name for flag, name in (("avx512f", "AVX-512"), ("avx2", "AVX2"), ("avx", "AVX"), ("sse2", "SSE2"))
                if flag in flags), None)
    where = [f"family {fields['cpu family']} model {fields['model']}"] if "cpu family" in fields and "model" in fields else []
    notes = ", ".join(where + ([isa] if isa else []))
    return f"{fields['model name']} ({notes})" if notes else fields["model name"]


def cpu_description() -> str:
    return f"cpu: {cpu_name()} ({os.cpu_count()} cores)"


def usable_cpus() -> int:
    """Cores this process may run on (its affinity mask, which containers and ``taskset`` narrow)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def auto_jobs(threads: int, gpus: list[str]) -> int:
    """Worker processes for ``--jobs auto``: one per GPU when the cells use GPUs, else as
    many as the usable cores hold at ``threads`` each."""
    if gpus:
        return len(gpus)
    return max(1, usable_cpus() // max(1, threads))


def plan_jobs(requested: int | str, threads: int, gpus: list[str]) -> tuple[int, str | None]:
    """The local pool's worker processes for ``--jobs`` (a number or ``auto``), and a line for people or None.

    Cells that use GPUs get at most one worker per GPU (worker *i* sees GPU *i mod #GPUs*: more workers would
    share GPUs, each holding its own copy of the model, and run out of memory or wait on each other). CPU
    workers are not capped, only warned about when ``requested × threads`` exceeds the usable cores: the
    results are the same for every ``--jobs``, and more workers than cores is sometimes meant (cells that wait
    on a disk or sleep); on a busy machine it slows every cell and can push them past their timeouts."""
    if requested == "auto":
        return auto_jobs(threads, gpus), None
    jobs = int(requested)
    if gpus:
        if jobs <= len(gpus):
            return jobs, None
        return len(gpus), (f"--jobs {jobs}: the cells use GPUs and {len(gpus)} GPUs are visible, so "
                           f"{len(gpus)} worker processes start, one per GPU")
    cores, threads = usable_cpus(), max(1, threads)
    if jobs * threads <= cores:
        return jobs, None
    each = f" of {threads} threads each ({jobs * threads} threads)" if threads > 1 else ""
    return jobs, (f"--jobs {jobs}: up to {jobs} worker processes{each} will share {cores} usable cores; "
                  f"the results are the same, each cell runs slower and nearer its timeout "
                  f"(--jobs auto starts {auto_jobs(threads, [])})")


def visible_gpus() -> list[str]:
    """Ids of the GPUs this process may use, without importing a framework.

    ``CUDA_VISIBLE_DEVICES`` when set (an empty value hides every GPU), else one id per
    line of ``nvidia-smi -L``; none when neither says there is a GPU.
    """
    import subprocess

    pinned = os.environ.get("CUDA_VISIBLE_DEVICES")
    if pinned is not None:
        return [d.strip() for d in pinned.split(",") if d.strip() and d.strip() != "-1"]
    try:
        listing = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=10, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    return [str(i) for i, line in enumerate(l for l in listing.splitlines() if l.startswith("GPU "))]


def package_versions() -> dict[str, str]:
    import platform
    from importlib import metadata  # a tenth of a run with nothing to do, which records no versions

    versions = {"python": platform.python_version()}
    for name in VERSIONED_PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return versions


def git_commit(where: Path, ignore: Path | None = None) -> str:
    """The commit of the repository holding ``where``, with ``+dirty`` for uncommitted changes.

    Changes under ``ignore`` (the results root a run writes into) do not count: a run's own
    output is not a change to the code that produced it.
    """
    import subprocess

    try:
        def git(*args: str) -> str:
            return subprocess.run(
                ["git", *args], cwd=where, capture_output=True, text=True, timeout=10, check=True
            ).stdout.strip()

        commit = git("rev-parse", "--short=12", "HEAD")
        top = Path(git("rev-parse", "--show-toplevel")).resolve()
        inside = ignore is not None and Path(ignore).resolve().is_relative_to(top)
        excluded = [f":(exclude){Path(ignore).resolve()}"] if inside else []
        dirty = git("status", "--porcelain", "--untracked-files=no", "--", ":/", *excluded)
        return commit + ("+dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def thread_environment(threads: int) -> dict[str, str]:
    return {name: str(threads) for name in THREAD_VARIABLES}


