"""Torch kernels of the synevo spec (one thread, float32): one training step of the task's Graph WaveNet (forward,
L1 loss, backward, Adam) on a batch of 32 windows of 12 steps on 20 sensors, and SynEVO's gate (numpy: the co-movement
distance of a group to three others on 24 day-aligned daily segments). torch is imported in ``setup`` only."""
from __future__ import annotations

from benchmarks._common import CpuKernel, TorchKernel, synchronize

NODES, INPUTS, HORIZON, BATCH = 20, 12, 3, 32


class GraphWaveNetStep(TorchKernel):
    """One training step of the backbone every arm of synevo trains, at hidden width 16 (the spec's) or 32."""

    params = ([16, 32],)
    param_names = ["hidden"]
    version = "1"

    def setup(self, hidden):
        import numpy as np
        import torch

        from harness.tasks.spatiotemporal.crossdomain import diffusion_matrix
        from harness.tasks.spatiotemporal.network import GraphWaveNet

        self.device = self.prepare()
        rng = np.random.default_rng(0)
        diffusion = torch.as_tensor(diffusion_matrix(rng.uniform(size=(NODES, 2)), 0.25))
        torch.manual_seed(0)
        self.network = GraphWaveNet(NODES, diffusion, INPUTS, HORIZON, hidden).to(self.device)
        self.optimizer = torch.optim.Adam(self.network.parameters(), lr=0.005)
        self.x = torch.randn(BATCH, INPUTS, NODES, 3).to(self.device)
        self.y = torch.randn(BATCH, HORIZON, NODES).to(self.device)

    def time_step(self, hidden):
        loss = (self.network(self.x) - self.y).abs().mean()
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.optimizer.step()
        synchronize(self.device)


class SynEVOGate(CpuKernel):
    """The gate's distances of one group to three admitted ones (24 days, 20 sensors, 48 slots, 8 features)."""

    version = "1"

    def setup(self):
        import numpy as np

        rng = np.random.default_rng(0)
        self.weight = rng.normal(size=(48, 8))
        self.groups = [rng.normal(size=(24, NODES, 48)) for _ in range(4)]

    def time_gate(self):
        from implementations.synevo.parts import co_movement_distance

        min(co_movement_distance(self.weight, self.groups[0], other) for other in self.groups[1:])
