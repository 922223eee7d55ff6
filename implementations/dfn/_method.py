"""DFN + SAM-SVN for cross-domain few-shot segmentation (Tong et al., ICML 2025), at CPU scale.

No torch at module level: ``harness validate`` imports this module for parameter names.
"""
from __future__ import annotations

import hashlib
import time
from typing import TYPE_CHECKING, Any

import numpy as np

from harness.tasks.base import WorkerCache

if TYPE_CHECKING:
    from harness.tasks.base import Context
    from harness.tasks.fewshot.cdfss import SegmentationSet

ADAPTERS = ("none", "residual", "serial")
SAM_MODES = ("none", "all", "svn")
FINETUNE_TARGETS = ("adapters", "last-block")

# pre-trained frozen backbones, shared by every arm of a seed: key → (backbone, seconds it took)
_BACKBONES = WorkerCache(2)


def _fingerprint(*arrays: np.ndarray) -> str:
    digest = hashlib.blake2b(digest_size=16)
    for array in arrays:
        digest.update(repr((array.shape, str(array.dtype))).encode())
        digest.update(np.ascontiguousarray(array).data)
    return digest.hexdigest()


class DomainFeatureNavigator:
    """Frozen CNN backbone + prototype-cosine head, with the Domain Feature Navigator.

    Source stage: a 4-block CNN (``widths`` channels; 2×2 max-pool after the first three)
    is pre-trained on source classification (``backbone_epochs`` of cross-entropy), then
    frozen; it is trained once per seed and source and shared by every arm. Each episode's
    masked-average fg/bg prototypes give two cosine maps per backbone level (scaled by 10,
    as PANet does); a 3-layer conv decoder (``hidden`` channels, at 1/``decoder_stride`` of
    the image size) turns them into mask logits: a cheap stand-in for HSNet's 4-D
    correlation. The decoder and the adapters train jointly with BCE on source 1-shot
    episodes (``source_epochs`` passes over the source images as queries, Adam at
    ``source_lr``, ``source_batch`` episodes a step), the backbone frozen.

    ``adapter``: ``residual`` is the DFN, NF_l = F_l + α_l F_l with a zero-initialised 1×1
    conv α_l at each level of ``levels`` (the next block reads NF_l); ``serial`` replaces
    the feature, NF_l = α_l F_l (PyTorch's default init); ``none`` has no adapter.
    ``sam`` (source stage): ``svn`` perturbs only the adapters' singular values,
    α̂ = U(S + ε)Vᵀ with ε = ρ g_S/‖g_S‖, g_S = diag(Uᵀ ∂L/∂α V), takes every trainable
    gradient at α̂, restores α and steps; ``all`` is SAM on all adapter entries.

    Target stage, per episode and independently (the E episodes run batched, each with its
    own copy of the source adapters): ``finetune_steps`` Adam steps at ``finetune_lr`` on
    the adapters alone, the support shots predicting their own horizontal flips from the
    prototypes of all shots; then the query is segmented. ``drop_adapter_at_test`` removes
    the adapters (no fine-tuning) to test what the source stage alone gave the decoder.
    ``finetune``: what the target stage tunes, ``adapters`` (the DFN; nothing without an
    adapter) or ``last-block`` (with ``adapter='none'``: each episode's own copy of the
    backbone's last conv block, with the same steps, loss and learning-rate search as the
    adapters — the baseline that fine-tunes on the support without any adapter).

    What the source stage learns is ``state_`` (backbone, head, adapters), read-only from
    then on: the task's source-training cache hands the same tensors to later instances.
    """

    after_source_params = ("finetune", "finetune_steps", "finetune_lr", "drop_adapter_at_test", "episode_batch")

    def __init__(
        self,
        *,
        adapter: str = "residual",
        sam: str = "svn",
        rho: float = 0.5,
        levels: tuple[int, ...] = (3, 4),
        widths: tuple[int, ...] = (16, 32, 64, 64),
        hidden: int = 16,
        decoder_stride: int = 2,
        backbone_epochs: int = 2,
        backbone_lr: float = 1e-3,
        source_epochs: float = 10.0,
        source_batch: int = 32,
        source_lr: float = 1e-3,
        finetune: str = "adapters",
        finetune_steps: int = 30,
        finetune_lr: float = 1e-2,
        drop_adapter_at_test: bool = False,
        episode_batch: int = 128,
    ):
        self.adapter = adapter
        self.sam = sam
        self.rho = rho
        self.levels = levels
        self.widths = widths
        self.hidden = hidden
        self.decoder_stride = decoder_stride
        self.backbone_epochs = backbone_epochs
        self.backbone_lr = backbone_lr
        self.source_epochs = source_epochs
        self.source_batch = source_batch
        self.source_lr = source_lr
        self.finetune = finetune
        self.finetune_steps = finetune_steps
        self.finetune_lr = finetune_lr
        self.drop_adapter_at_test = drop_adapter_at_test
        self.episode_batch = episode_batch

    # ------------------------------------------------------------------ checks

    def _check(self) -> None:
        from implementations.dfn._net import DEPTH

        if self.adapter not in ADAPTERS:
            raise ValueError(f"adapter={self.adapter!r}; expected one of {ADAPTERS}")
        if self.sam not in SAM_MODES:
            raise ValueError(f"sam={self.sam!r}; expected one of {SAM_MODES}")
        if self.sam != "none" and self.adapter == "none":
            raise ValueError(f"sam={self.sam!r} perturbs the adapters; adapter='none' has none")
        if self.finetune not in FINETUNE_TARGETS:
            raise ValueError(f"finetune={self.finetune!r}; expected one of {FINETUNE_TARGETS}")
        if self.finetune == "last-block" and self.adapter != "none":
            raise ValueError(f"finetune='last-block' is the no-adapter baseline; adapter={self.adapter!r} needs finetune='adapters'")
        if len(self.widths) != DEPTH:
            raise ValueError(f"widths={list(self.widths)}: the backbone has {DEPTH} blocks")
        levels = list(self.levels)
        if not levels or len(set(levels)) != len(levels) or not all(1 <= int(level) <= DEPTH for level in levels):
            raise ValueError(f"levels={levels}: distinct backbone levels in 1..{DEPTH}")
        if self.rho < 0 or self.finetune_steps < 0 or self.finetune_lr < 0:
            raise ValueError("rho, finetune_steps and finetune_lr must be ≥ 0")

    @property
    def _first_level(self) -> int:
        """1-based level of the first adapter (or of the level before a fine-tuned last block): the backbone runs frozen up to it."""
        from implementations.dfn._net import DEPTH

        if self.finetune == "last-block":
            return DEPTH - 1
        return DEPTH if self.adapter == "none" else min(int(level) for level in self.levels)

    # ------------------------------------------------------------------ source stage

    def _pretrain_backbone(self, images: np.ndarray, labels: np.ndarray, n_classes: int, seed: int, device: str):
        import torch
        import torch.nn.functional as F

        from implementations.dfn import _net

        generator = torch.Generator().manual_seed(seed)
        order_rng = np.random.default_rng(seed)
        params = {k: v.to(device).requires_grad_(True) for k, v in _net.init_backbone(tuple(self.widths), n_classes, generator).items()}
        optimizer = torch.optim.Adam(params.values(), lr=self.backbone_lr)
        x_all = torch.as_tensor(images)
        y_all = torch.as_tensor(labels, dtype=torch.long)
        batch = 64
        for _ in range(self.backbone_epochs):
            order = order_rng.permutation(images.shape[0])
            for start in range(0, order.size, batch):
                index = torch.as_tensor(order[start : start + batch])
                x, y = x_all[index].to(device), y_all[index].to(device)
                if order_rng.random() < 0.5:  # horizontal flips: the shapes have no handedness to learn
                    x = x.flip(-1)
                features = _net.frozen_features(params, x, _net.DEPTH)[-1].mean(dim=(2, 3))
                loss = F.cross_entropy(F.linear(features, params["classifier.weight"], params["classifier.bias"]), y)
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                optimizer.step()
        return {k: v.detach() for k, v in params.items() if k.startswith("block")}

    def _backbone(self, images, labels, n_classes, seed, device, precision):
        """(frozen backbone, seconds reused): pre-trained once per seed and source, shared by every arm.

        The seconds are the original pre-training's when the backbone comes from the cache, else 0.
        """
        key = (tuple(self.widths), self.backbone_epochs, self.backbone_lr, seed, _fingerprint(images, labels),
               n_classes, device, precision)
        reused = key in _BACKBONES

        def pretrain():
            started = time.perf_counter()
            backbone = self._pretrain_backbone(images, labels, n_classes, seed, device)
            return backbone, time.perf_counter() - started

        backbone, seconds = _BACKBONES.get_or_build(key, pretrain)
        return backbone, (seconds if reused else 0.0)

    def _features(self, backbone, images: np.ndarray, device: str, precision: str):
        """Frozen features up to the first adapted level, for (n, 3, H, W) uint8 images, in chunks."""
        import torch

        from implementations.dfn import _net

        chunks = []
        with torch.no_grad(), _net.autocast(device, precision):
            for start in range(0, images.shape[0], 256):
                x = torch.as_tensor(images[start : start + 256]).to(device)
                chunks.append([f.float() for f in _net.frozen_features(backbone, x, self._first_level)])
        return [torch.cat(level) for level in zip(*chunks)]

    def fit_source(self, source: SegmentationSet, context: Context) -> float:
        """Pre-train (or reuse) the backbone, then train decoder and adapters on source episodes.

        Returns the original seconds of a backbone reused from this worker's cache (else 0).
        """
        import torch

        from implementations.dfn import _net

        self._check()
        images, masks, labels = source.images, source.masks, source.labels
        rng = context.rng("method", "source")
        device, precision = context.device, context.precision
        backbone_seed, model_seed = (int(s) for s in rng.integers(0, 2**62, size=2))
        n_classes = int(labels.max()) + 1
        # drawn first, so every arm of a seed shares the same frozen backbone (a paired comparison)
        backbone, reused_s = self._backbone(images, labels, n_classes, backbone_seed, device, precision)
        generator = torch.Generator().manual_seed(model_seed)
        head = {k: v.to(device).requires_grad_(True) for k, v in _net.init_head(_net.DEPTH, self.hidden, generator).items()}
        adapters = {}
        if self.adapter != "none":
            for level in sorted(int(level) for level in self.levels):
                weight = _net.init_adapter(self.adapter, self.widths[level - 1], generator)
                adapters[level] = weight.to(device).requires_grad_(True)
        frozen = self._features(backbone, images, device, precision)
        mask_all = torch.as_tensor(masks).to(device)
        size = tuple(masks.shape[1:])
        members = [np.flatnonzero(labels == c) for c in range(n_classes)]
        usable = np.array([c for c in range(n_classes) if members[c].size >= 2])
        optimizer = torch.optim.Adam([*head.values(), *adapters.values()], lr=self.source_lr)
        batch_rng = np.random.default_rng(model_seed)
        steps = int(np.ceil(self.source_epochs * labels.shape[0] / self.source_batch))
        for _ in range(steps):
            classes = batch_rng.choice(usable, self.source_batch)
            pairs = np.stack([batch_rng.choice(members[c], 2, replace=False) for c in classes])
            support, query = torch.as_tensor(pairs[:, 0]).to(device), torch.as_tensor(pairs[:, 1]).to(device)

            def loss_fn(support=support, query=query):
                with _net.autocast(device, precision):
                    logits = _net.episode_logits(backbone, head, adapters, self.adapter,
                                                 [f[support][:, None] for f in frozen], mask_all[support][:, None],
                                                 [f[query][:, None] for f in frozen], size, self.decoder_stride)
                return _net.episode_loss(logits.float(), mask_all[query][:, None]) / len(classes)

            _net.sam_step(loss_fn, [*head.values(), *adapters.values()], list(adapters.values()),
                          self.sam, float(self.rho), optimizer)
        # read-only from here on, shared with later instances through the task's cache
        self.state_ = {
            "backbone": backbone,
            "head": {k: v.detach() for k, v in head.items()},
            "adapters": {level: w.detach() for level, w in adapters.items()},
        }
        return reused_s

    # ------------------------------------------------------------------ target stage

    def _test_adapters(self) -> dict[int, Any]:
        return {} if self.drop_adapter_at_test else self.state_["adapters"]

    def segment(self, support_images: np.ndarray, support_masks: np.ndarray, query_images: np.ndarray,
                rng: np.random.Generator, context: Context):
        import torch

        self._check()  # an instance restored from the cache skipped fit_source's check of the target-stage parameters
        episodes, queries = query_images.shape[:2]
        size = tuple(support_masks.shape[2:])
        out = torch.empty((episodes, queries, *size))
        step = max(1, int(self.episode_batch))
        for start in range(0, episodes, step):
            part = slice(start, start + step)
            out[start : start + step] = self._segment_batch(support_images[part], support_masks[part],
                                                            query_images[part], context).float().cpu()
        return out

    def _segment_batch(self, support_images, support_masks, query_images, context):
        import torch

        from implementations.dfn import _net

        device, precision = context.device, context.precision
        backbone, head = self.state_["backbone"], self.state_["head"]
        e, k = support_images.shape[:2]
        q = query_images.shape[1]
        size = tuple(support_masks.shape[2:])

        def frozen(images, n):
            return [f.view(e, n, *f.shape[1:]) for f in self._features(backbone, images.reshape(-1, *images.shape[2:]), device, precision)]

        support = frozen(support_images, k)
        masks = torch.as_tensor(support_masks).to(device)
        adapters = self._test_adapters()
        last_block = self.finetune == "last-block"
        if (adapters or last_block) and self.finetune_steps > 0:
            # each shot, mirrored, is a query for the prototypes of all the shots
            flipped = frozen(support_images[..., ::-1].copy(), k)
            flipped_masks = masks.flip(-1)
            weights = {level: w.expand(e, *w.shape).clone().requires_grad_(True) for level, w in adapters.items()}
            # the last-block baseline: every episode tunes its own copy of the last block's conv
            blocks = {name: backbone[name].expand(e, *backbone[name].shape).clone().requires_grad_(True)
                      for name in (f"block{_net.DEPTH - 1}.weight", f"block{_net.DEPTH - 1}.bias")} if last_block else {}
            tuned_backbone = {**backbone, **blocks}
            optimizer = torch.optim.Adam([*weights.values(), *blocks.values()], lr=float(self.finetune_lr))
            # the levels that nothing tuned changes: the same maps every step
            frozen_levels = len(support) if last_block else self._first_level - 1
            with torch.no_grad(), _net.autocast(device, precision):
                fixed = _net.level_maps(support[:frozen_levels], masks, flipped[:frozen_levels])
            for _ in range(int(self.finetune_steps)):
                with _net.autocast(device, precision):
                    logits = _net.episode_logits(tuned_backbone, head, weights, self.adapter, support, masks, flipped,
                                                 size, self.decoder_stride, fixed_maps=fixed)
                loss = _net.episode_loss(logits.float(), flipped_masks)
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                optimizer.step()
            adapters = {level: w.detach() for level, w in weights.items()}
            backbone = {**backbone, **{name: w.detach() for name, w in blocks.items()}}
        query = frozen(query_images, q)
        with torch.no_grad(), _net.autocast(device, precision):
            return _net.episode_logits(backbone, head, adapters, self.adapter, support, masks, query, size, self.decoder_stride)

    def embed(self, images: np.ndarray, context: Context) -> np.ndarray:
        import torch

        from implementations.dfn import _net

        backbone = self.state_["backbone"]
        frozen = [f[None] for f in self._features(backbone, images, context.device, context.precision)]
        with torch.no_grad(), _net.autocast(context.device, context.precision):
            deepest = _net.adapted_features(backbone, frozen, self._test_adapters(), self.adapter)[-1]
        return deepest[0].float().mean(dim=(2, 3)).cpu().numpy()
