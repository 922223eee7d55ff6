"""Kernels of the cross-domain few-shot specs: a ViT training step, ReCIT's frequency module,
DFN's adapter step under SAM and SAM-SVN (torch, imported in ``setup`` only), and the task's
ProtoNet episode scoring (numpy).

Every kernel is imported from its package's public surface (``components.vit``,
``implementations.recit``, ``implementations.dfn``), never from a private module."""
from __future__ import annotations

from benchmarks._common import CpuKernel, TorchKernel, synchronize


class ViTStep(TorchKernel):
    """Forward and backward of the ViT backbone on a batch (the inner step of every source training)."""

    params = (["tiny", "vit-s16"], [32, 128])
    param_names = ["arch", "batch"]
    version = "1"

    def setup(self, arch, batch):
        import torch

        from components.vit import ARCHS, build_vit

        self.device = self.prepare()
        if arch == "vit-s16" and self.device == "cpu":
            raise NotImplementedError("the paper's ViT-S/16 is timed on a GPU only")  # asv: skipped
        size = ARCHS[arch]["img_size"]
        self.model = build_vit(arch).to(self.device)
        self.images = torch.randn(batch, 3, size, size, device=self.device)

    def _features(self):
        from components.vit import encode, patch_tokens, position_embedding

        tokens, grid = patch_tokens(self.model, self.images)
        return encode(self.model, tokens, position_embedding(self.model, grid))

    def time_forward_backward(self, arch, batch):
        self.model.zero_grad(set_to_none=True)
        self._features().square().mean().backward()
        synchronize(self.device)

    def time_forward(self, arch, batch):
        import torch

        with torch.no_grad():
            self._features()
        synchronize(self.device)


class ReCITFrequency(TorchKernel):
    """ReCIT's token perturbation: patch similarity, greedy grouping, amplitude resampling."""

    # (tokens per image, embedding width): the CPU-scale tiny ViT and the paper's ViT-S/16
    params = (["16x64", "196x384"], [32])
    param_names = ["tokens", "batch"]
    version = "1"

    def setup(self, tokens, batch):
        import torch

        from implementations.recit import greedy_groups, patch_similarity

        self.device = self.prepare()
        length, dim = (int(v) for v in tokens.split("x"))
        patch_pixels = 8 * 8 * 3 if length == 16 else 16 * 16 * 3
        self.patches = torch.rand(batch, length, patch_pixels, device=self.device)
        self.tokens = torch.randn(batch, length, dim, device=self.device)
        self.groups = greedy_groups(patch_similarity(self.patches), 0.3)
        self.generator = torch.Generator().manual_seed(0)

    def time_group(self, tokens, batch):
        from implementations.recit import greedy_groups, patch_similarity

        greedy_groups(patch_similarity(self.patches), 0.3)
        synchronize(self.device)

    def time_amplitude_resample(self, tokens, batch):
        from implementations.recit import amplitude_resample

        amplitude_resample(self.tokens, self.groups, self.generator)
        synchronize(self.device)


class DFNAdapterStep(TorchKernel):
    """DFN's adapter update, ``implementations.dfn.sam_step``: plain, SAM over the adapters,
    and SAM-SVN (an SVD per adapter), on three C×C adapters under a least-squares loss that
    stands in for the segmentation network, so that the step's own cost is what is timed."""

    params = (["none", "all", "svn"], [64, 256])
    param_names = ["sam", "channels"]
    version = "1"

    def setup(self, sam, channels):
        import torch

        self.device = self.prepare()
        levels, pixels = 3, 1024
        self.features = [torch.randn(pixels, channels, device=self.device) for _ in range(levels)]
        self.targets = [torch.randn(pixels, channels, device=self.device) for _ in range(levels)]
        self.adapters = [torch.eye(channels, device=self.device).requires_grad_() for _ in range(levels)]
        self.optimizer = torch.optim.SGD(self.adapters, lr=1e-3)

    def _loss(self):
        return sum(((f @ a - t) ** 2).mean() for f, a, t in zip(self.features, self.adapters, self.targets))

    def time_step(self, sam, channels):
        from implementations.dfn import sam_step

        sam_step(self._loss, self.adapters, self.adapters, sam, 0.05, self.optimizer)
        synchronize(self.device)


class ProtoNetScoring(CpuKernel):
    """The task's ProtoNet scoring of 600 five-way 5-shot episodes (15 queries) on a pool of 500 images:
    384-d features (ViT-S) and 3,072-d raw pixels, gathering each episode's features or from the pool's
    Gram matrix (the path the task takes for pools up to GRAM_POOL_LIMIT images)."""

    params = ([384, 3072], ["gather", "gram"])
    param_names = ["dim", "path"]
    version = "1"

    def setup(self, dim, path):
        import numpy as np

        from harness.tasks.fewshot.episodes import sample_episodes

        rng = np.random.default_rng(0)
        labels = np.repeat(np.arange(10), 50)
        self.features = rng.normal(size=(labels.size, dim)) + rng.normal(size=(10, dim))[labels]
        self.episodes = sample_episodes(labels, ways=5, shots=5, queries=15, episodes=600, rng=rng)

    def time_score(self, dim, path):
        from harness.tasks.fewshot.cdfsl import protonet_accuracy

        protonet_accuracy(self.features, self.episodes, gram=path == "gram")
