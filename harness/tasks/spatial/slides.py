"""What ``spatial.expression`` is made of: a :class:`Slide`, its kNN :class:`SlideGraph` (each spot's k nearest
other spots by a KD-tree, never an N × N distance matrix, and the offsets to them), the slide on the device with its
graph (:class:`SlideTensors`, what a network is called on), a dataset's slides (:class:`SlideData`) and the one
training plan of every network (:class:`TrainPlan`). Torch is imported inside the functions that need it.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np

from harness.tasks.base import DataError
from harness.tasks.parameters import count, positive


@dataclass(frozen=True)
class Slide:
    """One slide: ``coordinates`` (N, 2) in spot spacings, ``features`` (N, D), ``expression`` (N, G) log1p counts
    (what is scored; a method's predictor never sees a held-out slide's), and on simulated slides ``oracle`` (N, G),
    the simulator's E[log1p Y | latent mix]."""

    name: str
    coordinates: np.ndarray
    features: np.ndarray
    expression: np.ndarray
    oracle: np.ndarray | None = None

    @property
    def spots(self) -> int:
        return len(self.coordinates)

    def without_expression(self) -> "Slide":
        """The slide as a predictor sees it: no expression (the oracle stays, for the sanity row alone)."""
        return dataclasses.replace(self, expression=np.zeros((self.spots, 0), np.float32))


class SlideTensors:
    """A slide on the device, with its kNN graph (built once): what a network is called on."""

    def __init__(self, slide: Slide, neighbours: int, device: str):
        import torch

        self.slide = slide
        self.features = torch.as_tensor(slide.features, dtype=torch.float32, device=device)
        self.expression = torch.as_tensor(slide.expression, dtype=torch.float32, device=device)
        self.graph = SlideGraph.build(slide.coordinates, neighbours, device)

    @property
    def spots(self) -> int:
        return self.slide.spots


@dataclass(frozen=True)
class SlideGraph:
    """``neighbours`` (N, k) indices of each spot's k nearest other spots and ``offsets`` (N, k, 2) = c_j − c_i."""

    neighbours: Any  # torch tensors, on the slide's device
    offsets: Any
    coordinates: Any  # (N, 2), centred on the slide's mean

    @staticmethod
    def build(coordinates: np.ndarray, k: int, device: str = "cpu") -> "SlideGraph":
        import torch
        from scipy.spatial import cKDTree

        coordinates = np.asarray(coordinates, dtype=np.float64)
        n = len(coordinates)
        if n < 2:
            raise ValueError(f"a slide of {n} spot has no neighbours; at least 2 spots are needed")
        k = min(k, n - 1)
        _, index = cKDTree(coordinates).query(coordinates, k=k + 1)
        index = without_self(index, np.arange(n))
        centred = coordinates - coordinates.mean(0)
        offsets = coordinates[index] - coordinates[:, None, :]
        return SlideGraph(torch.as_tensor(index, dtype=torch.long, device=device),
                          torch.as_tensor(offsets, dtype=torch.float32, device=device),
                          torch.as_tensor(centred, dtype=torch.float32, device=device))

    @property
    def size(self) -> int:
        return self.neighbours.shape[0]


def without_self(index: np.ndarray, own: np.ndarray) -> np.ndarray:
    """The k + 1 nearest of each row less the row's own index (or its farthest, where duplicates hid the own one)."""
    keep = index != own[:, None]
    surplus = keep.sum(1) > index.shape[1] - 1
    keep[surplus, -1] = False
    return index[keep].reshape(len(index), index.shape[1] - 1)


def knn_index(coordinates: np.ndarray, k: int) -> np.ndarray:
    """(N, k) indices of each spot's k nearest other spots (a KD-tree, never an N × N distance matrix)."""
    from scipy.spatial import cKDTree

    k = min(k, len(coordinates) - 1)
    _, index = cKDTree(coordinates).query(coordinates, k=k + 1)
    return without_self(index, np.arange(len(coordinates)))


@dataclass(frozen=True)
class TrainPlan:
    """The one training of every network: Adam, crops, a plateau rule on the validation Pearson."""

    lr: float
    crops_per_step: int
    min_crop: float  # a crop keeps u·N spots, u ~ U[min_crop, 1]
    clip: float  # gradient norm
    every: int
    min_steps: int
    max_steps: int
    tolerance: float
    neighbours: int  # k of every kNN graph (the networks' and Moran's I)


@dataclass(frozen=True)
class SlideData:
    """A dataset: ``train``, ``validation`` and held-out ``test`` slides (the tuning split's own while tuning).
    ``training_key`` identifies what a training depends on (the training and validation slides and the plan), so
    cells that differ only in their held-out slides share one."""

    training_key: str
    genes: tuple[str, ...]
    train: tuple[Slide, ...]
    validation: tuple[Slide, ...]
    test: tuple[Slide, ...]
    plan: TrainPlan
    timing_repeats: int = 3  # timed predictions of the first held-out slide (not part of the training's key)

    @property
    def feature_dim(self) -> int:
        return self.train[0].features.shape[1]


# --------------------------------------------------------------------------- parameters


def train_plan(lr, crops_per_step, min_crop, clip, every, min_steps, max_steps, tolerance, neighbours) -> TrainPlan:
    plan = TrainPlan(positive("lr", lr), count("crops_per_step", crops_per_step), positive("min_crop", min_crop),
                     positive("clip", clip), count("every", every), count("min_steps", min_steps),
                     count("max_steps", max_steps), positive("tolerance", tolerance),
                     count("neighbours", neighbours, 2))
    if plan.min_crop > 1:
        raise DataError(f"min_crop = {min_crop}: expected a share of the slide's spots in (0, 1]")
    if plan.min_steps > plan.max_steps:
        raise DataError(f"min_steps = {min_steps} is above max_steps = {max_steps}: training stops at its plateau "
                        "between the two")
    return plan


