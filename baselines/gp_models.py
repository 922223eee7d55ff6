"""gpytorch models of the baselines of ``gp.regression``: the exact GP and Titsias's SGPR (``InducingPointKernel``)."""
from __future__ import annotations

import gpytorch
import torch

from components.sparse_gp_torch import (
    DTYPE,
    Trainable,
    collapsed_terms,
    make_kernel,
    make_likelihood,
    sgpr_predict,
    tensor,
)


class _ExactModel(gpytorch.models.ExactGP):
    def __init__(self, x, y, likelihood, kernel):
        super().__init__(x, y, likelihood)
        self.mean_module = gpytorch.means.ZeroMean()
        self.covar_module = kernel

    def forward(self, x):
        return gpytorch.distributions.MultivariateNormal(self.mean_module(x), self.covar_module(x))


class _GpytorchTrainable(Trainable):
    """A gpytorch ``ExactGP`` trained on ``ExactMarginalLogLikelihood`` (already per training point, added loss terms in)."""

    def __init__(self, train, kernel, likelihood):
        self.x, self.y = tensor(train.x), tensor(train.y)
        self.likelihood = likelihood
        self.model = _ExactModel(self.x, self.y, self.likelihood, kernel).to(DTYPE)
        self.mll = gpytorch.mlls.ExactMarginalLogLikelihood(self.likelihood, self.model)

    def parameters(self):
        return list(self.model.parameters())  # the likelihood is a submodule of the model

    def objective(self) -> torch.Tensor:
        self.model.train()
        self.likelihood.train()
        return self.mll(self.model(self.x), self.y)

    def step_loss(self):
        return -self.objective()

    def bound(self):
        with torch.no_grad():
            return float(self.objective())


class ExactTrainable(_GpytorchTrainable):
    def __init__(self, train):
        super().__init__(train, make_kernel(train.x.shape[1], train.init), make_likelihood(train.init))

    def predict(self, x_new):
        self.model.eval()
        self.likelihood.eval()
        with torch.no_grad():
            q_f = self.model(tensor(x_new))
            return q_f.mean.numpy(), q_f.variance.clamp_min(0.0).numpy()


class GpytorchSGPRTrainable(_GpytorchTrainable):
    """``ScaleKernel(RBF)`` wrapped in gpytorch's ``InducingPointKernel`` (Z learned), Titsias's bound by its added loss term."""

    def __init__(self, train, *, jitter: float):
        self.jitter = jitter
        likelihood = make_likelihood(train.init)
        base = make_kernel(train.x.shape[1], train.init)
        kernel = gpytorch.kernels.InducingPointKernel(base, inducing_points=tensor(train.inducing).clone(),
                                                      likelihood=likelihood)
        super().__init__(train, kernel, likelihood)  # one likelihood: the kernel's added loss term reads its noise

    def settings(self):
        # gpytorch's own path for its low-rank covariance (Woodbury: O(NM²)); forcing Cholesky densifies it to N×N
        import contextlib

        return contextlib.nullcontext()

    def predict(self, x_new):
        kernel = self.model.covar_module
        with torch.no_grad():
            noise = self.likelihood.noise.squeeze()
            terms = collapsed_terms(kernel.base_kernel, kernel.inducing_points, self.x, self.y, noise, self.jitter)
            mean, var = sgpr_predict(kernel.base_kernel, kernel.inducing_points, terms, tensor(x_new))
        return mean.numpy(), var.numpy()
