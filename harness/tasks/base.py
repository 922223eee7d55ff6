"""The contract between the engine and a task: :class:`Task`, what it is handed
(:class:`Context`), the two exceptions a dataset loader raises (:class:`DataUnavailable`:
the data is not here; :class:`DataError`: it is here but unusable), and the worker-lifetime
caches a task may use (:class:`WorkerCache`, :class:`SourceTraining`).

Kept free of heavy imports: the CLI imports this module when it validates specs.
"""
from __future__ import annotations

import abc
import hashlib
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, ClassVar

SPLITS = ("train", "val", "test")


class DataUnavailable(Exception):
    """Raised by a dataset loader whose data (a local folder, a GPU) is not there.

    The engine records the cell as ``skipped`` with this message instead of failing it.
    """


class DataError(Exception):
    """Raised by a dataset loader whose data is there but cannot serve the protocol.

    Too few images in a class for the episodes, a file that does not decode, a mask whose
    size differs from its image's: the loader checks these before any training, and the
    message says it in the user's terms (the folder or file, what was found, what is needed
    and why). The engine records the cell as ``failed`` with this message; unlike
    :class:`DataUnavailable`, it is never a skip, because the user has something to fix.
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


class SourceTraining:
    """Train a method on a source domain once per worker; reuse it for the cells that follow.

    For tasks whose methods are trained on a source that does not depend on the cell's
    target dataset or split (cross-domain few-shot learning): cells of one seed and method
    run on one worker, so the targets that follow find the training here. A method keeps
    what it learns in public attributes ending in ``_`` (scikit-learn's convention); those
    are cached and set on the later instances, which must not write to them.

    The cache key is the method's :func:`source_training_key` (class and parameters, less
    its ``after_source_params``), the seed, the device, the precision and ``source_key``:
    whatever else the training depends on (the source data's identity, the budget).
    """

    def __init__(self, size: int):
        self._cache = WorkerCache(size)

    def clear(self) -> None:
        """Forget every cached training (tests start from an empty cache)."""
        self._cache.clear()

    def fit(self, method, context: "Context", source_key: tuple, train: Callable[[], float | None]) -> float:
        """Call ``train()`` (which fits ``method``) unless this training is cached; return train_s.

        ``train`` may return the seconds of a part of the training it reused from a cache of
        the method's own; they are added, so train_s is always the training's full cost.
        """
        def build() -> tuple[dict[str, Any], float]:
            started = time.perf_counter()
            reused_s = train()
            seconds = time.perf_counter() - started + float(reused_s or 0.0)
            fitted = {k: v for k, v in vars(method).items() if k.endswith("_") and not k.startswith("_")}
            if not fitted:
                raise TypeError(f"{type(method).__name__} kept nothing from its source training in a public "
                                "attribute ending in '_' (e.g. model_), so the training cannot be reused")
            return fitted, seconds

        key = (source_training_key(method), context.seed, context.device, context.precision, *source_key)
        fitted, seconds = self._cache.get_or_build(key, build)
        for name, value in fitted.items():
            setattr(method, name, value)
        return seconds


class Task(abc.ABC):
    """What a task is to the engine. Subclass it, set the class attributes, implement the two methods.

    For each cell the engine builds the dataset with its loader, ``loader(context, **params)``
    (cached per worker: every method of a seed gets the same object, which it must not
    change), builds the method from the spec's and the tuned parameters, ``Method(**params)``,
    and calls :meth:`evaluate`. The task alone sees the labels: it hands the method only what
    its :attr:`protocol` allows, and computes every metric itself.

    Class attributes:

    * ``name``: the registered name, ``family.task``;
    * ``version``: bump it when the protocol changes what a number means (cells are also
      keyed by a fingerprint of the task's and the method's source, see :mod:`harness.code`);
    * ``metrics``: every metric :meth:`evaluate` returns, each declared with its goal and
      unit in the family's catalogue;
    * ``protocol``: the :class:`typing.Protocol` its methods implement (the conformance test
      checks every registered method against it);
    * ``framework``: ``"torch"`` when methods use torch: the engine then seeds torch, sets its
      threads, resolves ``hardware.device`` and measures GPU memory; ``None`` (CPU only) else.

    :meth:`chance` is optional: the value a metric takes at chance, where the protocol fixes one.
    """

    name: ClassVar[str]
    version: ClassVar[str] = "1"
    metrics: ClassVar[tuple[str, ...]]
    protocol: ClassVar[type]
    framework: ClassVar[str | None] = None

    @abc.abstractmethod
    def evaluate(self, method: Any, data: Any, context: Context) -> dict[str, float]:
        """Run ``method`` on ``data`` under ``context``; return every metric of :attr:`metrics`.

        Values must be finite numbers (the engine fails a cell that returns NaN or inf). A task that
        also measures series (an error per round, a loss per epoch) returns an :class:`Evaluation`
        with its :class:`Curve` s; they are kept in the cell's ``runs.jsonl`` row under ``curves``
        and plotted on the leaderboard, each beside its ``theory`` when the task gives one.
        Raise :class:`DataUnavailable` when the cell cannot run here (it is then skipped).
        Data the protocol cannot use is the loader's to reject, with :class:`DataError`,
        so that a cell fails before any training rather than after it.
        """

    def chance(self, dataset: str, params: dict[str, Any]) -> dict[str, float]:
        """The value of each metric at chance on the loader ``dataset`` with ``params``: ``{}`` where none is meaningful.

        Only where the protocol alone fixes it (1/N for N-way accuracy, 0 for the adjusted
        Rand index), never a number measured on the data. A run writes it into its results
        folder (``chance.json``); the leaderboard marks it and does not rank a dataset on
        which every method's 95% interval of the primary metric contains it.
        """
        return {}

    @abc.abstractmethod
    def tiny(self, workdir: Path) -> dict[str, dict[str, Any]]:
        """Parameters of every dataset of this task at a size that runs in seconds.

        The conformance test runs every registered method on each. ``workdir`` is an empty
        folder (pytest's ``tmp_path``) where a loader that reads files finds a miniature
        written by this method.
        """
