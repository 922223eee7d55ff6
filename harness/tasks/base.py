"""What the engine hands a task, and the one exception a dataset loader raises.

Kept free of heavy imports: the CLI imports this module when it validates specs.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

SPLITS = ("train", "val", "test")


class DataUnavailable(Exception):
    """Raised by a dataset loader whose data (a local folder, a GPU) is not there.

    The engine records the cell as ``skipped`` with this message instead of failing it.
    """


@dataclass(frozen=True)
class Context:
    """Everything about a cell that is not the method's own hyper-parameters.

    ``split`` is ``val`` while tuning and ``test`` for the leaderboard. Generated data
    must derive its randomness from :meth:`rng` so that validation and test instances
    come from disjoint streams and every method sees identical data.
    """

    seed: int
    split: str = "test"
    dataset: str = ""
    device: str = "cpu"
    threads: int = 1
    data_dir: Path | None = None
    precision: str = "fp32"  # the spec's hardware.precision: fp32, fp64, bf16 or fp16

    def rng(self, *purpose: str):
        """A NumPy generator for ``purpose`` (e.g. ``"data"`` or ``"method"``).

        The stream depends on the seed, the split, the dataset id and the purpose, so
        the data drawn for a (dataset, seed, split) is the same for every method, and
        the validation split never shares a stream with the test split.
        """
        import numpy as np

        words = [self.split, self.dataset, *purpose]
        digest = hashlib.sha256("\x1f".join(words).encode()).digest()
        entropy = [int(self.seed), *(int.from_bytes(digest[i : i + 4], "little") for i in range(0, 16, 4))]
        return np.random.default_rng(np.random.SeedSequence(entropy))


class WorkerCache:
    """A small least-recently-used cache that lives as long as the worker process.

    Cells of one seed and method run on one worker (see :mod:`harness.execute`), so data
    and source training kept here are reused by the cells that follow, never shared
    across processes. Values must not be mutated by whoever gets them.
    """

    def __init__(self, size: int):
        from collections import OrderedDict

        self.size = size
        self._items: OrderedDict = OrderedDict()

    def __contains__(self, key) -> bool:
        return key in self._items

    def clear(self) -> None:
        self._items.clear()

    def get_or_build(self, key, build):
        if key in self._items:
            self._items.move_to_end(key)
            return self._items[key]
        value = build()
        self._items[key] = value
        if len(self._items) > self.size:
            self._items.popitem(last=False)
        return value


def source_training_key(method) -> tuple:
    """What a method's source training depends on among its own settings.

    Its class and constructor parameters, less those it lists in ``after_source_params``
    (settings that act only after source training, such as test-time probes or target
    fine-tuning), so methods that differ only there share one training.
    """
    import inspect

    cls = type(method)
    after = set(getattr(cls, "after_source_params", ()))
    names = [p.name for p in inspect.signature(cls.__init__).parameters.values()
             if p.name != "self" and p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD) and p.name not in after]
    return (cls.__module__, cls.__qualname__, tuple((name, repr(getattr(method, name, None))) for name in sorted(names)))
