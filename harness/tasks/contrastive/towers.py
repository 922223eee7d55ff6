"""The two-tower network of ``contrastive.reference`` and CLIP's loss, which the task trains its reference with and
the CLIP baseline trains its target with (torch at import: the task imports this module inside its functions).

* :class:`TwoTower`: an image tower and a text tower, each a one-hidden-layer ReLU MLP to a unit-norm embedding;
* :func:`clip_loss`: CLIP's symmetric InfoNCE at a logit scale;
* :func:`logsumexp` and :func:`log_softmax`, with the shifted exponents floored (see there), which every loss of the
  family uses.
"""
from __future__ import annotations

import torch
from torch import nn

EXP_FLOOR = -80.0  # e^-80 < 2e-35: nothing beside the largest term's e^0 = 1


def logsumexp(x: torch.Tensor, dim: int, keepdim: bool = False) -> torch.Tensor:
    """log Σ exp(x) along ``dim``, each exponent's argument x − max floored at :data:`EXP_FLOOR`. The floor changes
    the value by under 2e-35 relative, and keeps the CPU's vectorised exp off its slow path for arguments that
    underflow: at a logit scale of 100 most entries do, and torch.logsumexp and cross_entropy ran 20x slower."""
    top = x.amax(dim, keepdim=True).detach()
    value = (x - top).clamp(min=EXP_FLOOR).exp().sum(dim, keepdim=True).log() + top
    return value if keepdim else value.squeeze(dim)


def log_softmax(x: torch.Tensor, dim: int) -> torch.Tensor:
    return x - logsumexp(x, dim, keepdim=True)


class TwoTower(nn.Module):
    """``image_dim → width → embed`` and ``text_dim → width → embed`` ReLU MLPs, each output scaled to unit norm."""

    def __init__(self, image_dim: int, text_dim: int, width: int, embed: int):
        super().__init__()
        self.image_tower = nn.Sequential(nn.Linear(image_dim, width), nn.ReLU(), nn.Linear(width, embed))
        self.text_tower = nn.Sequential(nn.Linear(text_dim, width), nn.ReLU(), nn.Linear(width, embed))

    def embed_images(self, images: torch.Tensor) -> torch.Tensor:
        return nn.functional.normalize(self.image_tower(images), dim=-1)

    def embed_texts(self, texts: torch.Tensor) -> torch.Tensor:
        return nn.functional.normalize(self.text_tower(texts), dim=-1)

    def forward(self, images: torch.Tensor, texts: torch.Tensor) -> torch.Tensor:
        """(B, B) similarities of the batch's images to its texts."""
        return self.embed_images(images) @ self.embed_texts(texts).T


def clip_loss(s: torch.Tensor, logit_scale: torch.Tensor | float) -> torch.Tensor:
    """CLIP's loss: the mean of the image→text and text→image cross-entropies of ``logit_scale · s`` with the
    diagonal as the targets."""
    logits = s * logit_scale
    positive = torch.diagonal(logits)
    return 0.5 * ((logsumexp(logits, 1) - positive).mean() + (logsumexp(logits, 0) - positive).mean())
