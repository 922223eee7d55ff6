"""The raw-pixel reference of ``fewshot.cdfsl``: ProtoNet on the episode images' own pixels, no training.

A sanity row: a learned backbone that does not beat it on a target has learned nothing
that transfers there, and a target where it sits at chance tests nothing.
"""
from __future__ import annotations

import numpy as np


class RawPixelProtoNet:
    """ProtoNet on flattened raw pixels, scaled to [0, 1]; the source domain is never used.

    :meth:`embed` returns each image's pixels as one vector; the task's protocol then
    L2-normalises them, centres them on the episode's support mean and scores prototypes,
    as for every other method. :meth:`fit_source` learns nothing: it keeps only the source
    images' shape (the task's cache of source trainings needs one fitted attribute), and
    :meth:`embed` checks that the target images have the same channels and size.
    """

    def fit_source(self, source, context) -> None:
        self.image_shape_ = tuple(int(d) for d in source.images.shape[1:])
        return None

    def embed(self, images: np.ndarray) -> np.ndarray:
        images = np.asarray(images)
        if images.ndim != 4:
            raise ValueError(f"RawPixelProtoNet.embed: images must be (N, C, H, W); got shape {images.shape}")
        return images.reshape(images.shape[0], -1).astype(np.float32) / 255.0
