"""ReCIT (Yi, Zou, Li & Li, ICML 2025): disrupt image-token continuity while pre-training on the source."""
from __future__ import annotations

from typing import TYPE_CHECKING

from components.vit import ViTLearner, patch_tokens, position_embedding
from implementations.recit._frequency import amplitude_resample, greedy_groups, patch_similarity, patchify, shuffle_tokens

if TYPE_CHECKING:
    import torch


class ReCIT(ViTLearner):
    """The plain ViT's training with ReCIT's token perturbations; nothing is perturbed at test time.

    * Warm-up (``shuffle_warmup``, the first ``warmup_epochs`` epochs): each batch is resized
      to a random grid of n × n patches, n uniform in {g, …, round(g · warmup_max_scale)} for
      the data's grid g (the paper: 224 px / 16 = 14 up to 32, i.e. a scale of 2.29); its
      patch tokens get one random permutation shared by the batch, and the positional
      embedding is added in the original order (not removed).
    * Later epochs (``frequency``): the channel-FFT amplitude of every patch token is
      re-sampled from the statistics of greedy groups of similar pixel patches (cosine
      similarity of standardised patches above ``similarity``), see
      :func:`implementations.recit.amplitude_resample`.

    With ``frequency=False`` the epochs after the warm-up are plain; with
    ``shuffle_warmup=False`` every epoch uses the frequency module; with both off this is
    the plain ViT. Evaluation (features, ProtoNet) is the plain ViT's.

    Parameters
    ----------
    shuffle_warmup, frequency : bool
        The two modules (the ablations turn one off).
    warmup_epochs : int or None
        Epochs of patch-shuffle warm-up; ``None``: 20 % of the epochs, at least one (the
        paper note's CPU recipe; the paper itself uses 1 of 50).
    warmup_max_scale : float
        Largest warm-up grid relative to the data's grid.
    similarity : float
        Cosine threshold of the greedy grouping (the paper: 0.3).
    arch, lr, weight_decay, backbone_lr_scale, translate, scale, flip, lr_schedule, weights, embed_batch
        As for :class:`components.vit.ViTLearner` (the plain ViT's training, which the
        baseline :class:`baselines.vit.ViTProtoNet` runs unperturbed).
    """

    after_source_params = ("embed_batch",)

    def __init__(self, *, shuffle_warmup: bool = True, frequency: bool = True, warmup_epochs: int | None = None,
                 warmup_max_scale: float = 2.0, similarity: float = 0.3, arch: str = "tiny", lr: float = 1e-3,
                 weight_decay: float = 0.01, backbone_lr_scale: float = 1.0, translate: float = 0.1,
                 flip: bool = False, weights: str | None = None, embed_batch: int = 256, scale: float = 0.0,
                 lr_schedule: str = "constant"):
        super().__init__(arch=arch, lr=lr, weight_decay=weight_decay, backbone_lr_scale=backbone_lr_scale,
                         translate=translate, flip=flip, weights=weights, embed_batch=embed_batch, scale=scale,
                         lr_schedule=lr_schedule)
        self.shuffle_warmup = shuffle_warmup
        self.frequency = frequency
        self.warmup_epochs = warmup_epochs
        self.warmup_max_scale = warmup_max_scale
        self.similarity = similarity

    def _warmup_length(self) -> int:
        if not self.shuffle_warmup:
            return 0
        if self.warmup_epochs is not None:
            return int(self.warmup_epochs)
        return max(1, round(0.2 * self.epochs_))

    def _train_tokens(self, model, x: "torch.Tensor", epoch: int, generator: "torch.Generator"):
        import torch
        import torch.nn.functional as F

        patch = model.patch_size
        if epoch < self._warmup_length():
            grid = x.shape[-1] // patch
            largest = max(grid, int(round(grid * self.warmup_max_scale)))
            n = int(torch.randint(grid, largest + 1, (1,), generator=generator))
            if n != grid:
                x = F.interpolate(x, size=(n * patch, n * patch), mode="bilinear", align_corners=False)
            tokens, grid_shape = patch_tokens(model, x)
            return shuffle_tokens(tokens, generator), position_embedding(model, grid_shape)
        tokens, grid_shape = patch_tokens(model, x)
        if self.frequency:
            groups = greedy_groups(patch_similarity(patchify(x.float(), patch)), self.similarity)
            tokens = amplitude_resample(tokens, groups, generator)
        return tokens, position_embedding(model, grid_shape)
