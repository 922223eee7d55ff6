"""The method side of ``robustness.certified`` that BRO and its baselines share: build a
network of one layer family, train it with the chosen loss, return it.

Torch-free at import (``harness validate`` reads the methods' parameter names); the torch
code is in :mod:`components.lipschitz_torch`, imported when a method fits.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harness.tasks.base import Context
    from harness.tasks.robustness.certified import TrainingSet

LA_DEFAULTS = {"la_temperature": 0.75, "la_offset": 2.0 * math.sqrt(2.0), "la_exponent": 5.0, "la_alpha": 0.25}


class LipschitzClassifier:
    """Base of the methods of ``robustness.certified``: a :class:`components.lipschitz_torch.LipschitzNet`
    of the family's layers, trained on the task's budget; :meth:`fit` returns the model.

    Common parameters: ``arch`` (dense | conv | lipconvnet), ``width``, ``depth``, ``channels``
    (conv, lipconvnet: the first stage's), ``stages`` (lipconvnet),
    ``head`` (lln | plain), ``loss`` (ce | ce-offset | la) and the loss's
    ``la_temperature`` T, ``la_offset`` ξ, ``la_exponent`` β and ``la_alpha`` α (LipConvNet's
    defaults, used by ``ce-offset`` too for T and ξ). A subclass provides :meth:`layers`.
    """

    certified = True

    def __init__(self, *, arch: str = "dense", width: int = 64, depth: int = 4, channels: int = 16, stages: int = 5,
                 head: str = "lln", loss: str = "la", la_temperature: float = 0.75,
                 la_offset: float = LA_DEFAULTS["la_offset"], la_exponent: float = 5.0, la_alpha: float = 0.25):
        self.arch, self.width, self.depth, self.channels, self.head = arch, int(width), int(depth), int(channels), head
        self.stages = int(stages)
        self.loss = loss
        self.la_temperature, self.la_offset = float(la_temperature), float(la_offset)
        self.la_exponent, self.la_alpha = float(la_exponent), float(la_alpha)

    def layers(self, generator) -> tuple[Any, Any]:
        """(dense(in, out), conv(channels) or None): factories of this family's layers, initialised from ``generator``."""
        raise NotImplementedError

    def build(self, input_shape: tuple[int, int, int], classes: int, generator):
        from components.lipschitz_torch import LipschitzNet

        dense, conv = self.layers(generator)
        return LipschitzNet(dense=dense, conv=conv, input_shape=input_shape, classes=classes, arch=self.arch,
                            width=self.width, depth=self.depth, channels=self.channels, stages=self.stages, head=self.head,
                            certified=self.certified, generator=generator)

    def fit(self, train: "TrainingSet", context: "Context"):
        """Train on ``train`` (images (n, c, h, w) in [0, 1], labels, the budget); return the model in eval mode."""
        import torch

        from components.lipschitz_torch import train_classifier

        seed = int(context.rng("method", "init").integers(2**62))
        generator = torch.Generator().manual_seed(seed)
        model = self.build(tuple(train.images.shape[1:]), train.classes, generator)
        return train_classifier(model, train.images, train.labels, epochs=train.epochs, batch_size=train.batch_size,
                                lr=train.lr, loss=self.loss, rng=context.rng("method", "batches"), device=context.device,
                                temperature=self.la_temperature, offset=self.la_offset, exponent=self.la_exponent,
                                alpha=self.la_alpha)
