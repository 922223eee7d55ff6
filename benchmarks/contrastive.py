"""Torch kernels of the drrho-clip spec (one thread, float32): one training step (forward through both towers,
the loss, backward, Adam) of a batch of 256 pairs with DRRho-CLIP's loss (the frozen reference's forward included)
against its no-reference control, and JEST's selection of a batch of 256 from 1,280 candidates. torch is imported
in ``setup`` only."""
from __future__ import annotations

from benchmarks._common import TorchKernel, synchronize

BATCH, IMAGE_DIM, TEXT_DIM = 256, 32, 16


def _pairs(rows: int, device: str):
    import torch

    generator = torch.Generator().manual_seed(0)
    return (torch.randn(rows, IMAGE_DIM, generator=generator).to(device),
            torch.randn(rows, TEXT_DIM, generator=generator).to(device))


class ContrastiveStep(TorchKernel):
    """One training step of the target (width 64, 32-d embeddings) with DRRho-CLIP's loss or the control's."""

    params = (["drrho", "control"],)
    param_names = ["loss"]
    version = "1"

    def setup(self, loss):
        import torch

        from harness.tasks.contrastive.towers import TwoTower

        self.device = self.prepare()
        self.images, self.texts = _pairs(BATCH, self.device)
        self.network = TwoTower(IMAGE_DIM, TEXT_DIM, 64, 32).to(self.device)
        self.reference = TwoTower(IMAGE_DIM, TEXT_DIM, 32, 32).to(self.device).eval().requires_grad_(False)
        self.optimizer = torch.optim.Adam(self.network.parameters(), lr=1e-3)

    def time_step(self, loss):
        import torch

        from components.contrastive_torch import global_contrastive_loss

        shift = None
        if loss == "drrho":
            with torch.no_grad():
                shift = self.reference(self.images, self.texts)
        value = global_contrastive_loss(self.network(self.images, self.texts), 0.05, 1e-4, shift=shift)
        self.optimizer.zero_grad(set_to_none=True)
        value.backward()
        self.optimizer.step()
        synchronize(self.device)


class JESTSelection(TorchKernel):
    """JEST's choice of 256 pairs from 1,280 in 2 chunks (both networks' similarities of the super-batch included),
    on the default mixture's pairs with a briefly trained reference and learner (trained similarities spread over
    [-1, 1]: at scale 100 most exponents underflow, which random networks' similarities near 0 would not show)."""

    version = "1"

    def setup(self):
        import torch

        from baselines.contrastive import JEST
        from components.contrastive_torch import global_contrastive_loss
        from harness.tasks.base import Context
        from harness.tasks.contrastive import reference as cr

        self.device = self.prepare()
        context = Context(seed=0, dataset="paired-mixture")
        data = cr.paired_mixture(context, gain=3.0, pool=2000, reference_pairs=1000, selection=200, scoring=200,
                                 steps=100, every=100, reference_every=10, reference_min_steps=100,
                                 reference_max_steps=100)
        reference, _ = cr.pretrain_reference(data, context)
        session = cr.ContrastiveSession(data, reference, context)
        self.network = session.train(lambda batch: global_contrastive_loss(batch.s, 0.05, 1e-4)).to(self.device)
        reference.to(self.device)  # in place: the selector reads session.reference
        captured = {}
        session.train = lambda loss, parameters=(), select=None, candidates=1: captured.setdefault("select", select)
        JEST().fit(session)
        self.select = captured["select"]
        rows = slice(0, 5 * BATCH)
        self.images = torch.as_tensor(data.train_images[rows]).to(self.device)
        self.texts = torch.as_tensor(data.train_texts[rows]).to(self.device)

    def time_select(self):
        self.select(self.network, self.images, self.texts, BATCH)
        synchronize(self.device)
