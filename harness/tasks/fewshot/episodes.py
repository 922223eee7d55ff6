"""Seeded N-way K-shot episode sampling, vectorised over episodes.

The task alone draws episodes, from a generator it derives from the cell's context, so
every method of a (dataset, seed, split) meets exactly the same episodes.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Episodes:
    """Indices into one pool of images (its ``labels`` array), for E episodes at once.

    ``support[e, c]`` holds the ``shots`` support images of way ``c`` of episode ``e`` and
    ``query[e, c]`` its ``queries`` query images; ``classes[e, c]`` is that way's label. A
    support image is never a query image of the same episode.
    """

    support: np.ndarray  # (E, ways, shots) int
    query: np.ndarray  # (E, ways, queries) int
    classes: np.ndarray  # (E, ways) labels

    @property
    def count(self) -> int:
        return int(self.support.shape[0])


def sample_episodes(labels: np.ndarray, *, ways: int, shots: int, queries: int, episodes: int,
                    rng: np.random.Generator) -> Episodes:
    """Draw ``episodes`` episodes of ``ways`` distinct classes, ``shots`` + ``queries`` images each.

    Classes are drawn uniformly without replacement per episode, and each way's images
    uniformly without replacement from its class.
    """
    labels = np.asarray(labels)
    classes, counts = np.unique(labels, return_counts=True)
    need = shots + queries
    if ways < 1 or shots < 1 or queries < 1 or episodes < 1:
        raise ValueError(f"ways={ways}, shots={shots}, queries={queries}, episodes={episodes}: all must be ≥ 1")
    if ways > classes.size:
        raise ValueError(f"{ways}-way episodes need {ways} classes; the pool has {classes.size}")
    if counts.min() < need:
        poor = classes[np.argmin(counts)]
        raise ValueError(f"class {poor} has {counts.min()} images; a {shots}-shot episode with {queries} queries "
                         f"per class needs {need}")
    # members[c, j]: the j-th image of class c (padded with -1 beyond the class's count)
    members = np.full((classes.size, counts.max()), -1, dtype=np.int64)
    order = np.argsort(labels, kind="stable")
    start = 0
    for c, count in enumerate(counts):
        members[c, :count] = order[start:start + count]
        start += count
    chosen = np.argsort(rng.random((episodes, classes.size)), axis=1)[:, :ways]  # (E, ways) class positions
    keys = rng.random((episodes, ways, counts.max()))
    keys[np.arange(counts.max())[None, None, :] >= counts[chosen][:, :, None]] = np.inf  # never pick padding
    picks = np.argsort(keys, axis=2)[:, :, :need]  # (E, ways, need) positions within each class
    images = members[chosen[:, :, None], picks]
    return Episodes(support=images[:, :, :shots], query=images[:, :, shots:], classes=classes[chosen])
