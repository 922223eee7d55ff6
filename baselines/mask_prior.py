"""The trivial answers of ``fewshot.cdfss``: masks that never look at the query image.

A segmenter that does not beat them on a target has learned nothing about the target's objects that their
position and size in the support masks do not already say; where they score high, a high mIoU says little.

* ``rule: support-mean``: foreground where at least half of the episode's support masks are foreground (the
  support's location prior; with one shot, the support mask itself);
* ``rule: all``: every pixel foreground (its IoU is the share of the image the object covers).

:meth:`embed` returns the images' pixels, mean-pooled to 8 × 8 per channel, so that the task's covariance
alignment of this row is that of the raw data itself: the reference a learned feature's alignment is read against.
"""
from __future__ import annotations

import numpy as np

RULES = ("support-mean", "all")
POOLED = 8


class MaskPrior:
    """A trivial few-shot segmenter: the support masks' majority vote, or the all-foreground mask."""

    after_source_params = ("rule",)

    def __init__(self, rule: str = "support-mean"):
        if rule not in RULES:
            raise ValueError(f"MaskPrior: rule = {rule!r}; expected one of {', '.join(RULES)}")
        self.rule = rule

    def fit_source(self, source, context) -> None:
        """Learns nothing; keeps the source images' shape (the task's source-training cache needs one attribute)."""
        self.image_shape_ = tuple(int(d) for d in source.images.shape[1:])
        return None

    def segment(self, support_images, support_masks, query_images, rng, context) -> np.ndarray:
        support_masks = np.asarray(support_masks, dtype=bool)
        episodes, queries = query_images.shape[:2]
        size = support_masks.shape[-2:]
        if self.rule == "all":
            return np.ones((episodes, queries, *size), dtype=bool)
        prior = support_masks.mean(axis=1) >= 0.5  # (E, H, W)
        return np.broadcast_to(prior[:, None], (episodes, queries, *size)).copy()

    def embed(self, images, context) -> np.ndarray:
        images = np.asarray(images, dtype=np.float64) / 255.0
        n, channels, height, width = images.shape
        rows, cols = (np.array_split(np.arange(k), min(POOLED, k)) for k in (height, width))
        pooled = np.stack([images[:, :, r[0]:r[-1] + 1, c[0]:c[-1] + 1].mean(axis=(2, 3)) for r in rows for c in cols],
                          axis=-1)  # (n, channels, blocks): the mean of each of the 8 × 8 near-equal blocks
        return pooled.reshape(n, -1)
