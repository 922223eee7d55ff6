"""Torch code of the sparse-GP methods (float64 throughout): the shared kernel and likelihood,
the collapsed bound's common part, the SGPR predictive, the whitened SVGP model, the training loop.

Every model starts from the task's initial hyper-parameters (``train.init``) and inducing
inputs (``train.inducing``, k-means on the training inputs) and is trained to its plateau by the
task's rule (:func:`harness.tasks.gp.plateau.train_to_plateau`): the full-batch bounds (the
collapsed ones and the exact GP) by L-BFGS, as GP practice trains them (GPflow's Scipy optimiser,
Titsias 2009, Bui et al.'s Snelson demo), the minibatch ones by Adam at ``train.lr``.
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
    """What the training loop needs of a model: its parameters, a loss per step, its bound, predictions, and its
    optimiser: ``"lbfgs"`` for a deterministic full-batch objective, ``"adam"`` for a minibatch one."""

    optimiser = "lbfgs"

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


class UncollapsedTrainable(Trainable):
    """Whitened SVGP (Hensman et al. 2013; 2015) with a per-point correction of the ELBO, minibatches of
    ``train.batch_size``, in plain torch (the algebra of GPflow's and gpytorch's whitened SVGP; a test holds it equal
    to gpytorch's ``VariationalStrategy`` and ``VariationalELBO``).

    u = L v with K_uu + jitter·I = L Lᵀ and q(v) = N(m, S), S = L_S L_Sᵀ (L_S lower triangular, its diagonal kept
    positive by softplus). For a point x_i with a_i = L⁻¹ k_u(x_i): q(f_i) = N(a_iᵀm, d_i + a_iᵀ S a_i), where
    d_i = k_ii − a_iᵀa_i; per point E_q log N(y_i | f_i, σ²) = −½ log 2πσ² − [(y_i − a_iᵀm)² + d_i + a_iᵀSa_i]/(2σ²),
    plus correction(d_i, σ²); KL[q(v) || N(0, I)] = ½ (tr S + mᵀm − M − log det S). The objective per training
    point is mean_B[...] − KL/N, the minibatch estimate of the full bound divided by N. q(v) starts at the prior
    (m = 0, S = I), as gpytorch's and GPflow's do.
    """

    optimiser = "adam"

    def __init__(self, train, correction, *, jitter: float, generator_seed: int):
        self.x, self.y = tensor(train.x), tensor(train.y)
        self.kernel = make_kernel(self.x.shape[1], train.init)
        self.likelihood = make_likelihood(train.init)
        self.z = torch.nn.Parameter(tensor(train.inducing).clone())
        m = self.z.shape[0]
        self.q_mean = torch.nn.Parameter(torch.zeros(m, dtype=DTYPE))
        # L_S = tril(raw, −1) + diag(softplus(raw_diag)); softplus(raw_diag) = 1 at the start (S = I)
        self.q_raw = torch.nn.Parameter(torch.zeros(m, m, dtype=DTYPE))
        self.q_raw_diag = torch.nn.Parameter(torch.full((m,), math.log(math.expm1(1.0)), dtype=DTYPE))
        self.correction, self.jitter = correction, jitter
        self.batch_size = min(int(train.batch_size), self.x.shape[0])
        self.generator = torch.Generator().manual_seed(generator_seed)
        self._order, self._next = None, 0

    def parameters(self):
        return [*self.kernel.parameters(), *self.likelihood.parameters(), self.z, self.q_mean, self.q_raw,
                self.q_raw_diag]

    def q_chol(self) -> torch.Tensor:
        return torch.tril(self.q_raw, -1) + torch.diag(torch.nn.functional.softplus(self.q_raw_diag))

    def _batch(self) -> torch.Tensor:
        n = self.x.shape[0]
        if self._order is None or self._next + self.batch_size > n:
            self._order, self._next = torch.randperm(n, generator=self.generator), 0  # epochs without replacement
        index = self._order[self._next:self._next + self.batch_size]
        self._next += self.batch_size
        return index

    def point_terms(self, x, y, chol=None) -> torch.Tensor:
        """E_q log N(y_i | f_i, σ²) + correction(d_i, σ²) for each row."""
        noise = self.likelihood.noise.squeeze()
        chol = chol_kuu(self.kernel, self.z, self.jitter) if chol is None else chol
        a = torch.linalg.solve_triangular(chol, self.kernel(self.z, x).to_dense(), upper=False)  # (M, B)
        d = (self.kernel(x, diag=True) - a.square().sum(0)).clamp_min(0.0)
        mean = a.T @ self.q_mean
        r = (self.q_chol().T @ a).square().sum(0)
        expected = -0.5 * (LOG_2PI + torch.log(noise)) - 0.5 * ((y - mean).square() + d + r) / noise
        return expected + self.correction(d, noise)

    def kl(self) -> torch.Tensor:
        chol_s = self.q_chol()
        m = self.q_mean.shape[0]
        return 0.5 * (chol_s.square().sum() + self.q_mean @ self.q_mean - m
                      - 2.0 * torch.log(torch.diagonal(chol_s)).sum())

    def objective_per_point(self, index=None) -> torch.Tensor:
        n = self.x.shape[0]
        chol = chol_kuu(self.kernel, self.z, self.jitter)
        if index is None:
            total = sum(self.point_terms(self.x[i:i + 4096], self.y[i:i + 4096], chol).sum() for i in range(0, n, 4096))
            return (total - self.kl()) / n
        return self.point_terms(self.x[index], self.y[index], chol).mean() - self.kl() / n

    def step_loss(self):
        return -self.objective_per_point(self._batch())

    def bound(self):
        with torch.no_grad():
            return float(self.objective_per_point())

    def optimal_q(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The collapsed optimum of q(v) at the current hyper-parameters, whitened: m = B⁻¹Ay/σ, S = B⁻¹ (its L_S)."""
        with torch.no_grad():
            noise = self.likelihood.noise.squeeze()
            terms = collapsed_terms(self.kernel, self.z, self.x, self.y, noise, self.jitter)
            mean = torch.linalg.solve_triangular(terms.chol_b.T, terms.c.unsqueeze(-1), upper=True).squeeze(-1)
            return mean, torch.linalg.cholesky(torch.cholesky_inverse(terms.chol_b))

    def set_q(self, mean, chol_s) -> None:
        with torch.no_grad():
            self.q_mean.copy_(mean)
            self.q_raw.copy_(torch.tril(chol_s, -1))
            diag = torch.diagonal(chol_s)
            self.q_raw_diag.copy_(diag + torch.log(-torch.expm1(-diag)))  # softplus⁻¹

    def bound_at_init(self):
        saved = (self.q_mean.detach().clone(), self.q_chol().detach().clone())
        self.set_q(*self.optimal_q())
        value = self.bound()
        self.set_q(*saved)  # training starts from the prior q(v), as SVGP's does
        return value

    def predict(self, x_new):
        with torch.no_grad():
            x_new = tensor(x_new)
            chol = chol_kuu(self.kernel, self.z, self.jitter)
            a = torch.linalg.solve_triangular(chol, self.kernel(self.z, x_new).to_dense(), upper=False)
            mean = a.T @ self.q_mean
            var = self.kernel(x_new, diag=True) - a.square().sum(0) + (self.q_chol().T @ a).square().sum(0)
        return mean.numpy(), var.clamp_min(0.0).numpy()


@dataclass
class FittedGP:
    """What a method of ``gp.regression`` returns: its final and initial bound per training point, the learned
    noise variance, its training curve (the bound at 10 fractions of the steps it ran) and the predictive of f
    (mean, marginal variance) at any inputs."""

    bound: float
    initial_bound: float
    noise_variance: float
    training: object  # harness.tasks.training.TrainingLog
    trainable: Trainable

    def predict(self, x_new) -> tuple[np.ndarray, np.ndarray]:
        with self.trainable.settings():
            return self.trainable.predict(x_new)


def train_model(method, train, context) -> FittedGP:
    """Build the method's model, record its bound at the shared initialisation, train it to its plateau, return it."""
    from harness.tasks.gp.plateau import adam_to_plateau, lbfgs_to_plateau

    model = method.build(train, context)
    with model.settings():
        initial = model.bound_at_init()
        if model.optimiser == "lbfgs":
            log = lbfgs_to_plateau(model.parameters(), model.step_loss, model.bound,
                                   max_steps=int(train.lbfgs_iterations))
        else:
            log = adam_to_plateau(model.parameters(), model.step_loss, model.bound, lr=train.lr,
                                  max_steps=int(train.iterations))
        fitted = FittedGP(log.final, initial, model.noise_variance(), log, model)
    return fitted
