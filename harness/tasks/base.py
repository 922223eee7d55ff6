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
