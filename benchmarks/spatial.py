"""Torch kernels of the stflow spec (one thread, float32): one forward pass of STFlow's denoiser (the kNN spatial
transformer, width 32, 4 blocks, k = 8, frame-averaged edges) on a slide of 500 and of 4,000 spots, against the
full-attention transformer of the same width and depth (its N × N weights materialised), and one STFlow training
step (forward, backward, Adam) on a 500-spot crop. The kNN graph is built in ``setup``. torch is imported in
``setup`` only."""
from __future__ import annotations

from benchmarks._common import TorchKernel, synchronize

SPOTS = [500, 4000]
FEATURES, GENES = 32, 20


def _slide(spots: int, device: str):
    import numpy as np
    import torch

    from harness.tasks.spatial.expression import hex_spots
    from harness.tasks.spatial.slides import SlideGraph

    generator = torch.Generator().manual_seed(0)
    graph = SlideGraph.build(hex_spots(np.random.default_rng(0), spots), 8, device)
    features = torch.randn(spots, FEATURES, generator=generator).to(device)
    state = torch.randn(spots, GENES, generator=generator).to(device)
    return graph, features, state


class DenoiserForward(TorchKernel):
    """One forward pass (no gradients) of STFlow's local denoiser and of the full-attention transformer."""

    params = (SPOTS, ["local", "full"])
    param_names = ["spots", "attention"]
    version = "1"

    def setup(self, spots, attention):
        from components.spatial_transformer_torch import FullAttentionTransformer, SpatialTransformer

        self.device = self.prepare()
        self.graph, self.features, self.state = _slide(spots, self.device)
        network = SpatialTransformer if attention == "local" else FullAttentionTransformer
        self.network = network(FEATURES, GENES).to(self.device).eval().requires_grad_(False)

    def time_forward(self, spots, attention):
        self.network(self.features, self.state, 0.5, self.graph)
        synchronize(self.device)


class FlowMatchingStep(TorchKernel):
    """One STFlow training step on a 500-spot crop: the ZINB prior draw, the forward pass, backward and Adam."""

    version = "1"

    def setup(self):
        import torch

        from components.spatial_transformer_torch import SpatialTransformer

        self.device = self.prepare()
        self.graph, self.features, self.target = _slide(500, self.device)
        self.network = SpatialTransformer(FEATURES, GENES).to(self.device)
        self.optimizer = torch.optim.Adam(self.network.parameters(), lr=5e-4)
        self.generator = torch.Generator().manual_seed(0)
        self.crop = type("Crop", (), {"features": self.features, "expression": self.target, "graph": self.graph})

    def time_step(self):
        from implementations.stflow import flow_matching_loss

        loss = flow_matching_loss(self.network, self.crop, self.generator, "zinb")
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.optimizer.step()
        synchronize(self.device)
