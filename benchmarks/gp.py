"""Torch kernels of the tight-sgp spec: one forward + backward of a collapsed bound, float64, N = 2000, M = 64,
D = 8 (the issue's size; its reference, gpytorch's own SGPR marginal log-likelihood at 2 CPU threads: median
16.5 ms). The new bound must cost no more than gpytorch's Titsias bound: both are O(NM²), the new one adds a
log1p per point. torch is imported in ``setup`` only."""
from __future__ import annotations

from benchmarks._common import TorchKernel, synchronize


def _training_set(n: int, m: int, dim: int):
    import numpy as np

    from harness.tasks.gp.regression import INIT, TrainingSet

    rng = np.random.default_rng(0)
    x = rng.uniform(-2, 2, size=(n, dim))
    y = np.sin(x).sum(1) + 0.1 * rng.standard_normal(n)
    z = x[rng.choice(n, m, replace=False)]
    return TrainingSet(x, (y - y.mean()) / y.std(), z, dict(INIT), 1, 0.01, n)


def _model(bound: str, train):
    from components.sparse_gp_torch import CollapsedTrainable, titsias_regulariser

    if bound == "titsias-gpytorch":
        from baselines.gp_models import GpytorchSGPRTrainable

        return GpytorchSGPRTrainable(train, jitter=1e-6)
    if bound == "tight":
        from implementations.tight_sgp import tight_regulariser

        return CollapsedTrainable(train, tight_regulariser, jitter=1e-6)
    return CollapsedTrainable(train, titsias_regulariser, jitter=1e-6)  # Titsias's formula in the same code path


class CollapsedBound(TorchKernel):
    """Forward + backward of a collapsed bound (kernel, noise and Z all require gradients), N = 2000, M = 64, D = 8."""

    params = (["tight", "titsias-gpytorch", "titsias-formula"], [1, 2])
    param_names = ["bound", "threads"]
    version = "1"

    def setup(self, bound, threads):
        import torch

        self.device = self.prepare()
        if self.device != "cpu":
            raise NotImplementedError("the collapsed bounds run on the CPU here")  # asv: skipped
        torch.set_num_threads(threads)
        self.model = _model(bound, _training_set(2000, 64, 8))
        self.settings = self.model.settings
        self.parameters = self.model.parameters()

    def time_forward_backward(self, bound, threads):
        for p in self.parameters:
            p.grad = None
        with self.settings():
            self.model.step_loss().backward()
        synchronize(self.device)


class MinibatchBound(TorchKernel):
    """One Adam step's forward + backward of a minibatch bound (whitened SVGP in plain torch, and the new bound's
    uncollapsed form, which adds a log1p per point), N = 2000, M = 64, D = 8, batches of 256: the two must cost
    the same (Bui et al.: "the same computational cost")."""

    params = (["svgp", "svgp-tight"], [1, 2])
    param_names = ["bound", "threads"]
    version = "1"

    def setup(self, bound, threads):
        import torch

        from baselines.gp import SVGP
        from harness.tasks.base import Context
        from implementations.tight_sgp import TightSVGP

        self.device = self.prepare()
        if self.device != "cpu":
            raise NotImplementedError("the minibatch bounds run on the CPU here")  # asv: skipped
        torch.set_num_threads(threads)
        train = _training_set(2000, 64, 8)
        train = type(train)(train.x, train.y, train.inducing, train.init, 1, 0.01, 256)
        method = TightSVGP() if bound == "svgp-tight" else SVGP()
        self.model = method.build(train, Context(seed=0))
        self.settings = self.model.settings
        self.parameters = self.model.parameters()

    def time_forward_backward(self, bound, threads):
        for p in self.parameters:
            p.grad = None
        with self.settings():
            self.model.step_loss().backward()
        synchronize(self.device)
