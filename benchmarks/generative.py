"""Torch kernels of the ddo spec (one thread, float32): one DDO step (the four model passes, the backward pass
and the Adam update) on the 2-D reference denoiser (2 × 64), the digits' (3 × 256) and the binarised digits' causal
model (MADE, 1 × 16) at the spec's batch sizes, against one continued-maximum-likelihood step on the same batch (one
pass with gradients); one Heun sampling of 1,000 samples at the task's 32 steps, and one ancestral sampling of 1,000
binary digits (64 passes). torch is imported in ``setup`` only."""
from __future__ import annotations

from benchmarks._common import TorchKernel, synchronize

SHAPES = {"2-d": (2, 64, 2, 256), "digits": (64, 256, 3, 128), "binary": (64, 16, 1, 128)}  # dim, width, depth, batch
DENOISERS = ["2-d", "digits"]
FAMILY = {"2-d": "diffusion", "digits": "diffusion", "binary": "autoregressive"}


def _models_and_batches(shape: str, device: str):
    import copy

    import torch

    from harness.tasks.generative.causal import MADE
    from harness.tasks.generative.edm import EDMDenoiser, NoiseSchedule
    from harness.tasks.generative.finetune import Batch

    dim, width, depth, batch = SHAPES[shape]
    generator = torch.Generator().manual_seed(0)
    if FAMILY[shape] == "autoregressive":
        reference = MADE(dim, width, depth).to(device).eval().requires_grad_(False)

        def draw():
            return Batch(torch.bernoulli(torch.full((batch, dim), 0.3), generator=generator).to(device))
    else:
        reference = EDMDenoiser(dim, 1.0, width, depth).to(device).eval().requires_grad_(False)

        def draw():
            return Batch(torch.randn(batch, dim, generator=generator).to(device),
                         NoiseSchedule().draw(batch, generator).to(device),
                         torch.randn(batch, dim, generator=generator).to(device))
    model = copy.deepcopy(reference).requires_grad_(True)

    return reference, model, draw(), draw()


class FinetuneStep(TorchKernel):
    """One optimiser step of DDO (``ddo``) and of continued maximum likelihood (``mle``) on one batch."""

    params = (list(SHAPES), ["ddo", "mle"])
    param_names = ["shape", "loss"]
    version = "1"

    def setup(self, shape, loss):
        import torch

        from harness.tasks.generative.finetune import FAMILIES
        from implementations.ddo import ddo_loss

        self.device = self.prepare()
        self.reference, self.model, self.real, self.fake = _models_and_batches(shape, self.device)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=1e-4)
        family = FAMILIES[FAMILY[shape]]
        if loss == "ddo":
            self.loss = lambda: ddo_loss(self.model, self.reference, self.real, self.fake, 1.0, 0.3, family.nll)
        else:
            self.loss = lambda: family.loss(self.model, self.real)

    def time_step(self, shape, loss):
        value = self.loss()
        self.optimizer.zero_grad(set_to_none=True)
        value.backward()
        self.optimizer.step()
        synchronize(self.device)


class HeunSampling(TorchKernel):
    """1,000 samples of a reference by the task's Heun sampler (32 steps, 63 denoiser calls)."""

    params = (DENOISERS,)
    param_names = ["shape"]
    version = "1"

    def setup(self, shape):
        import torch

        from harness.tasks.generative.finetune import ODESampler

        self.device = self.prepare()
        reference, _, _, _ = _models_and_batches(shape, self.device)
        self.sampler = ODESampler(reference, SHAPES[shape][0], 32)
        self.generator = torch.Generator().manual_seed(0)

    def time_sample(self, shape):
        self.sampler.sample(1000, self.generator)
        synchronize(self.device)


class AncestralSampling(TorchKernel):
    """1,000 binary digits of the causal reference (MADE, 1 × 16), pixel by pixel (64 passes)."""

    version = "1"

    def setup(self):
        import torch

        from harness.tasks.generative.finetune import CausalSampler

        self.device = self.prepare()
        reference, _, _, _ = _models_and_batches("binary", self.device)
        self.sampler = CausalSampler(reference, SHAPES["binary"][0])
        self.generator = torch.Generator().manual_seed(0)

    def time_sample(self):
        self.sampler.sample(1000, self.generator)
        synchronize(self.device)
