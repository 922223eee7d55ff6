"""The hardware class of a result row's ``device``: parsing the descriptions stored in results.

A worker records the device a cell ran on as a description (:func:`harness.hardware.cpu_description`,
``"cpu: <name> (<n> cores)"``, or the framework adapter's ``"cuda: <name> (GPU <i>)"``,
:mod:`harness.frameworks`). Reading results (leaderboards, claims, merges) groups rows by the class of
that description: it never probes the machine it runs on, so this module imports nothing of the harness.
"""
from __future__ import annotations

import re
from typing import Iterable

# the notes a device description ends with that say how much of the machine a worker had, not what it is:
# the CPU's core count (harness.hardware.cpu_description) and a pinned GPU's index (harness.frameworks)
_WORKER_NOTE = re.compile(r"\s*\((\d+ cores|GPU [^()]*)\)$")


def device_class(description: str | None) -> str | None:
    """The hardware class of a row's ``device``: its description less the trailing core-count or GPU-pin note.

    ``"cpu: Intel(R) Xeon(R) Processor (2 cores)"`` → ``"cpu: Intel(R) Xeon(R) Processor"``;
    ``"cuda: NVIDIA H200 (GPU 3)"`` → ``"cuda: NVIDIA H200"``; None (no device recorded) stays None.
    Two rows of one class ran on the same kind of hardware, so their timings compare.
    """
    if not description:
        return None
    return _WORKER_NOTE.sub("", description.strip()) or description.strip()


def several_classes(devices: Iterable[str | None]) -> bool:
    """Whether the device descriptions span more than one device class (rows without a device aside)."""
    return len({device_class(d) for d in devices} - {None}) > 1
