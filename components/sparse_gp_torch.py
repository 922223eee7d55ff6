"""Torch code of the sparse-GP methods (float64 throughout): the shared kernel and likelihood,
the collapsed bound's common part, the SGPR predictive, the whitened SVGP model, the training loop.

Every model starts from the task's initial hyper-parameters (``train.init``) and inducing
inputs (``train.inducing``, k-means on the training inputs), and is trained by Adam at
``train.lr`` for ``train.iterations`` steps: the same for every method.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import gpytorch
import numpy as np
import torch

DTYPE = torch.float64
LOG_2PI = math.log(2.0 * math.pi)


def exact_settings():
    """gpytorch without its iterative solvers: Cholesky at every size, exact log-determinants."""
    import contextlib

    stack = contextlib.ExitStack()
    stack.enter_context(gpytorch.settings.max_cholesky_size(10**9))
    stack.enter_context(gpytorch.settings.fast_computations(covar_root_decomposition=False, log_prob=False, solves=False))
    return stack


def make_kernel(dim: int, init: dict) -> gpytorch.kernels.ScaleKernel:
    """ARD squared-exponential kernel with the task's initial lengthscale and signal variance."""
    kernel = gpytorch.kernels.ScaleKernel(gpytorch.kernels.RBFKernel(ard_num_dims=dim)).to(DTYPE)
    kernel.base_kernel.lengthscale = torch.full((1, dim), float(init["lengthscale"]), dtype=DTYPE)
    kernel.outputscale = torch.tensor(float(init["outputscale"]), dtype=DTYPE)
    return kernel


def make_likelihood(init: dict) -> gpytorch.likelihoods.GaussianLikelihood:
    likelihood = gpytorch.likelihoods.GaussianLikelihood().to(DTYPE)
    likelihood.noise = torch.tensor(float(init["noise"]), dtype=DTYPE)
    return likelihood


def tensor(a) -> torch.Tensor:
    return torch.as_tensor(np.asarray(a), dtype=DTYPE)


def chol_kuu(kernel, z: torch.Tensor, jitter: float) -> torch.Tensor:
    kuu = kernel(z).to_dense()
    return torch.linalg.cholesky(kuu + jitter * torch.eye(z.shape[0], dtype=z.dtype))


def conditional_variance(kernel, z, x, jitter, chol=None) -> torch.Tensor:
    """d_i = k(x_i, x_i) − k_iu K_uu⁻¹ k_ui for each row of x, clamped at 0 (round-off gives tiny negatives)."""
    chol = chol_kuu(kernel, z, jitter) if chol is None else chol
    a = torch.linalg.solve_triangular(chol, kernel(z, x).to_dense(), upper=False)
    return (kernel(x, diag=True) - a.square().sum(0)).clamp_min(0.0)


@dataclass
class CollapsedTerms:
    """The pieces of log N(y | 0, Q + σ²I) (Titsias's DTC term), the diagonal d of K − Q, and what prediction reuses."""

    dtc: torch.Tensor  # log N(y | 0, Q_ff + σ²I)
    d: torch.Tensor  # (N,) diagonal of K_ff − Q_ff, ≥ 0
    chol: torch.Tensor  # L, K_uu + jitter·I = L Lᵀ
    chol_b: torch.Tensor  # L_B, I + A Aᵀ = L_B L_Bᵀ with A = L⁻¹ K_uf / σ
    c: torch.Tensor  # L_B⁻¹ A y / σ


def collapsed_terms(kernel, z, x, y, noise, jitter: float) -> CollapsedTerms:
    """O(NM²): one Cholesky of K_uu, one of B = I + AAᵀ, no N×N matrix."""
    n, m = x.shape[0], z.shape[0]
    chol = chol_kuu(kernel, z, jitter)
    sigma = noise.sqrt()
    a = torch.linalg.solve_triangular(chol, kernel(z, x).to_dense(), upper=False) / sigma  # (M, N)
    b = torch.eye(m, dtype=x.dtype) + a @ a.T
    chol_b = torch.linalg.cholesky(b)
    c = torch.linalg.solve_triangular(chol_b, (a @ y).unsqueeze(-1), upper=False).squeeze(-1) / sigma
    dtc = (-0.5 * n * LOG_2PI - torch.log(torch.diagonal(chol_b)).sum() - 0.5 * n * torch.log(noise)
           - 0.5 * (y @ y) / noise + 0.5 * (c @ c))
    d = (kernel(x, diag=True) - noise * a.square().sum(0)).clamp_min(0.0)
    return CollapsedTerms(dtc, d, chol, chol_b, c)


def sgpr_predict(kernel, z, terms: CollapsedTerms, x_new) -> tuple[torch.Tensor, torch.Tensor]:
    """The SGPR predictive of f at x_new: mean and marginal variance (Titsias 2009; GPflow's SGPR.predict_f)."""
    tmp1 = torch.linalg.solve_triangular(terms.chol, kernel(z, x_new).to_dense(), upper=False)
    tmp2 = torch.linalg.solve_triangular(terms.chol_b, tmp1, upper=False)
    mean = tmp2.T @ terms.c
    var = kernel(x_new, diag=True) + tmp2.square().sum(0) - tmp1.square().sum(0)
    return mean, var.clamp_min(0.0)


def titsias_regulariser(d, noise):
    """Titsias (2009): −Σ d_i / (2σ²)."""
    return -0.5 * d.sum() / noise


class Trainable:
    """What the training loop needs of a model: its parameters, a loss per step, its bound, predictions."""

    def parameters(self) -> list:
        raise NotImplementedError

    def step_loss(self) -> torch.Tensor:
        """The negative objective per training point, on this step's batch (the whole set for full-batch bounds)."""
        raise NotImplementedError

    def bound(self) -> float:
        """The objective on the whole training set, per point, at the current parameters."""
        raise NotImplementedError

    def bound_at_init(self) -> float:
        """:meth:`bound` before training (uncollapsed bounds: at their optimal q(u), so that every bound is a function
        of the shared hyper-parameters and inducing inputs alone)."""
        return self.bound()

    def predict(self, x_new) -> tuple[np.ndarray, np.ndarray]:
        raise NotImplementedError

    def noise_variance(self) -> float:
        return float(self.likelihood.noise.detach())

    def settings(self):
        """The gpytorch settings it runs under: Cholesky at every size (:func:`exact_settings`) unless it says otherwise."""
        return exact_settings()


class CollapsedTrainable(Trainable):
    """A collapsed bound log N(y | 0, Q + σ²I) + regulariser(d, σ²), with learned Z, kernel and noise."""

    def __init__(self, train, regulariser, *, jitter: float):
        self.x, self.y = tensor(train.x), tensor(train.y)
        self.kernel = make_kernel(self.x.shape[1], train.init)
        self.likelihood = make_likelihood(train.init)
        self.z = torch.nn.Parameter(tensor(train.inducing).clone())
        self.regulariser, self.jitter = regulariser, jitter

    def parameters(self):
        return [*self.kernel.parameters(), *self.likelihood.parameters(), self.z]

    def objective(self) -> torch.Tensor:
        noise = self.likelihood.noise.squeeze()
        terms = collapsed_terms(self.kernel, self.z, self.x, self.y, noise, self.jitter)
        return terms.dtc + self.regulariser(terms.d, noise)

    def step_loss(self):
        return -self.objective() / self.x.shape[0]

    def bound(self):
        with torch.no_grad():
            return float(self.objective()) / self.x.shape[0]

    def predict(self, x_new):
        with torch.no_grad():
            noise = self.likelihood.noise.squeeze()
            terms = collapsed_terms(self.kernel, self.z, self.x, self.y, noise, self.jitter)
            mean, var = sgpr_predict(self.kernel, self.z, terms, tensor(x_new))
        return mean.numpy(), var.numpy()


class _SVGPModel(gpytorch.models.ApproximateGP):
    def __init__(self, inducing: torch.Tensor, kernel, jitter: float):
        distribution = gpytorch.variational.CholeskyVariationalDistribution(inducing.shape[0], dtype=DTYPE)
        strategy = gpytorch.variational.VariationalStrategy(self, inducing, distribution, learn_inducing_locations=True,
                                                            jitter_val=jitter)
        super().__init__(strategy)
        self.mean_module = gpytorch.means.ZeroMean()
        self.covar_module = kernel

    def forward(self, x):
        return gpytorch.distributions.MultivariateNormal(self.mean_module(x), self.covar_module(x))


class UncollapsedTrainable(Trainable):
    """Whitened SVGP (Hensman et al. 2013) with a per-point correction of the ELBO, minibatches of ``train.batch_size``.

    Per point: E_q log N(y_i | f_i, σ²) + correction(d_i, σ²); the whole objective per training
    point is mean_B[...] − KL/N, the minibatch estimate of the full bound divided by N.
    """

    def __init__(self, train, correction, *, jitter: float, generator_seed: int):
        self.x, self.y = tensor(train.x), tensor(train.y)
        self.model = _SVGPModel(tensor(train.inducing).clone(), make_kernel(self.x.shape[1], train.init), jitter).to(DTYPE)
        self.likelihood = make_likelihood(train.init)
        self.correction, self.jitter = correction, jitter
        self.batch_size = min(int(train.batch_size), self.x.shape[0])
        self.generator = torch.Generator().manual_seed(generator_seed)
        self._order, self._next = None, 0

    def parameters(self):
        return [*self.model.parameters(), *self.likelihood.parameters()]

    def _batch(self) -> torch.Tensor:
        n = self.x.shape[0]
        if self._order is None or self._next + self.batch_size > n:
            self._order, self._next = torch.randperm(n, generator=self.generator), 0  # epochs without replacement
        index = self._order[self._next:self._next + self.batch_size]
        self._next += self.batch_size
        return index

    def point_terms(self, x, y) -> torch.Tensor:
        """E_q log N(y_i | f_i, σ²) + correction(d_i, σ²) for each row (the q(f_i) variance holds d_i + r_i)."""
        noise = self.likelihood.noise.squeeze()
        q_f = self.model(x)
        expected = self.likelihood.expected_log_prob(y, q_f)
        strategy = self.model.variational_strategy
        d = conditional_variance(self.model.covar_module, strategy.inducing_points, x, self.jitter)
        return expected + self.correction(d, noise)

    def kl(self) -> torch.Tensor:
        return self.model.variational_strategy.kl_divergence()

    def objective_per_point(self, index=None) -> torch.Tensor:
        n = self.x.shape[0]
        if index is None:
            total = sum(self.point_terms(self.x[i:i + 4096], self.y[i:i + 4096]).sum() for i in range(0, n, 4096))
            return (total - self.kl()) / n
        return self.point_terms(self.x[index], self.y[index]).mean() - self.kl() / n

    def step_loss(self):
        self.model.train()
        return -self.objective_per_point(self._batch())

    def bound(self):
        self.model.train()
        with torch.no_grad():
            return float(self.objective_per_point())

    def set_optimal_q(self) -> None:
        """q(u) = the collapsed optimum at the current hyper-parameters, whitened: m = B⁻¹Ay/σ, S = B⁻¹."""
        with torch.no_grad():
            strategy = self.model.variational_strategy
            noise = self.likelihood.noise.squeeze()
            terms = collapsed_terms(self.model.covar_module, strategy.inducing_points, self.x, self.y, noise, self.jitter)
            b_inv = torch.cholesky_inverse(terms.chol_b)
            mean = torch.linalg.solve_triangular(terms.chol_b.T, terms.c.unsqueeze(-1), upper=True).squeeze(-1)
            distribution = strategy._variational_distribution
            distribution.variational_mean.copy_(mean)
            distribution.chol_variational_covar.copy_(torch.linalg.cholesky(b_inv))
            strategy.variational_params_initialized.fill_(1)  # else the first call resets q(u) to the prior

    def bound_at_init(self):
        strategy = self.model.variational_strategy
        saved = {k: v.clone() for k, v in strategy.state_dict().items()}
        self.set_optimal_q()
        value = self.bound()
        strategy.load_state_dict(saved)  # training starts from gpytorch's own initial q(u), as SVGP's does
        return value

    def predict(self, x_new):
        self.model.eval()
        with torch.no_grad():
            q_f = self.model(tensor(x_new))
            mean, var = q_f.mean, q_f.variance
        self.model.train()
        return mean.numpy(), var.clamp_min(0.0).numpy()


@dataclass
class FittedGP:
    """What a method of ``gp.regression`` returns: its final and initial bound per training point, the learned
    noise variance, and the predictive of f (mean, marginal variance) at any inputs."""

    bound: float
    initial_bound: float
    noise_variance: float
    trainable: Trainable

    def predict(self, x_new) -> tuple[np.ndarray, np.ndarray]:
        with self.trainable.settings():
            return self.trainable.predict(x_new)


def train_model(method, train, context) -> FittedGP:
    """Build the method's model, record its bound at the shared initialisation, train it with Adam, return it fitted."""
    model = method.build(train, context)
    with model.settings():
        initial = model.bound_at_init()
        optimizer = torch.optim.Adam(model.parameters(), lr=float(train.lr))
        for _ in range(int(train.iterations)):
            optimizer.zero_grad(set_to_none=True)
            loss = model.step_loss()
            loss.backward()
            optimizer.step()
        final = model.bound()
        fitted = FittedGP(final, initial, model.noise_variance(), model)
    return fitted
