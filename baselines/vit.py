"""The plain Vision Transformer baseline of ``fewshot.cdfsl``: cross-entropy on the source, ProtoNet on its features.

The network, its training and its features are :class:`components.vit.ViTLearner`, shared
with ReCIT; this module adds the baseline's test-time probe of the paper's phenomenon.
Importing it imports no torch (``harness validate`` reads the parameter names).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from components.vit import ViTLearner

if TYPE_CHECKING:
    import torch


class ViTProtoNet(ViTLearner):
    """Plain ViT: cross-entropy on the source classes, then frozen CLS features for ProtoNet.

    Parameters
    ----------
    arch, lr, weight_decay, backbone_lr_scale, translate, scale, flip, lr_schedule, weights, embed_batch
        As for :class:`components.vit.ViTLearner`.
    test_shuffle : bool
        The test-time probe of the paper's phenomenon: :meth:`embed` shuffles each image's
        patch tokens (one random permutation per image) and adds the positional embedding in
        the original order. Training is unchanged, so the task reuses the plain model.
    """

    # Parameters that change only :meth:`embed`: the task's cache of source-trained models ignores them.
    after_source_params = ("test_shuffle", "embed_batch")

    def __init__(self, *, arch: str = "tiny", lr: float = 1e-3, weight_decay: float = 0.01,
                 backbone_lr_scale: float = 1.0, translate: float = 0.1, flip: bool = False,
                 weights: str | None = None, test_shuffle: bool = False, embed_batch: int = 256,
                 scale: float = 0.0, lr_schedule: str = "constant"):
        super().__init__(arch=arch, lr=lr, weight_decay=weight_decay, backbone_lr_scale=backbone_lr_scale,
                         translate=translate, flip=flip, weights=weights, embed_batch=embed_batch, scale=scale,
                         lr_schedule=lr_schedule)
        self.test_shuffle = test_shuffle

    def _embed_tokens(self, tokens: "torch.Tensor", generator: "torch.Generator") -> "torch.Tensor":
        """With ``test_shuffle``, each image's patch tokens in an order of their own (positions stay put)."""
        import torch

        if not self.test_shuffle:
            return tokens
        perm = torch.argsort(torch.rand(tokens.shape[:2], generator=generator), dim=1).to(tokens.device)
        return tokens.gather(1, perm[:, :, None].expand_as(tokens))
