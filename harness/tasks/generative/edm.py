"""EDM-preconditioned denoisers on flat vectors (Karras et al., 2022): the network, its denoising loss, the
per-sample weighted error that DDO's log-ratio reads, and the deterministic Heun sampler.

The task's own model and sampler (the reference it pretrains, the sampler it scores every method with); methods
import the loss pieces from here. Imports torch at module level: imported only inside functions.

Preconditioning, for data of standard deviation σ_d and noise level σ::

    D(x; σ) = c_skip(σ)·x + c_out(σ)·F(c_in(σ)·x, c_noise(σ))
    c_skip = σ_d² / (σ² + σ_d²),  c_out = σ·σ_d / √(σ² + σ_d²),  c_in = 1 / √(σ² + σ_d²),  c_noise = ln(σ) / 4

and the loss weight λ(σ) = 1 / c_out(σ)², so that λ(σ)·‖D − x‖² = ‖F − F_target‖² has unit scale at every σ.
Training draws ln σ ~ N(P_mean, P_std²) (EDM's CIFAR-10 values −1.2 and 1.2 by default).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn


@dataclass(frozen=True)
class NoiseSchedule:
    """The training noise levels (log-normal) and the sampler's (ρ-spaced from σ_max down to σ_min, then 0)."""

    p_mean: float = -1.2
    p_std: float = 1.2
    sigma_min: float = 0.002
    sigma_max: float = 80.0
    rho: float = 7.0

    def draw(self, count: int, generator: torch.Generator) -> torch.Tensor:
        """(count, 1) training noise levels."""
        return torch.exp(self.p_mean + self.p_std * torch.randn(count, 1, generator=generator))

    def sampling_levels(self, steps: int) -> torch.Tensor:
        """The ``steps`` + 1 levels of the sampler, decreasing to 0 (EDM's eq. 5)."""
        i = torch.arange(steps, dtype=torch.float64)
        low, high = self.sigma_min ** (1 / self.rho), self.sigma_max ** (1 / self.rho)
        levels = (high + i / max(steps - 1, 1) * (low - high)) ** self.rho
        return torch.cat([levels, torch.zeros(1, dtype=torch.float64)])


class SigmaEmbedding(nn.Module):
    """Sinusoidal features of c_noise = ln(σ)/4 at ``size`` / 2 fixed frequencies."""

    def __init__(self, size: int):
        super().__init__()
        half = size // 2
        self.register_buffer("frequencies", torch.exp(torch.linspace(0.0, math.log(1000.0), half)))

    def forward(self, c_noise: torch.Tensor) -> torch.Tensor:
        angles = c_noise * self.frequencies
        return torch.cat([torch.sin(angles), torch.cos(angles)], dim=-1)


class EDMDenoiser(nn.Module):
    """D(x; σ) for x of shape (B, dim) and σ of shape (B, 1): an MLP F of ``depth`` hidden layers of ``width`` SiLU
    units on [c_in·x, embedding(c_noise)], preconditioned as in EDM. Small on purpose: the tasks that use it set the
    capacity below what the data needs, so that maximum likelihood covers the modes and smears between them."""

    def __init__(self, dim: int, sigma_data: float, width: int = 64, depth: int = 2, embedding: int = 16):
        super().__init__()
        self.dim, self.sigma_data = dim, float(sigma_data)
        self.embed = SigmaEmbedding(embedding)
        layers: list[nn.Module] = []
        size = dim + embedding
        for _ in range(depth):
            layers += [nn.Linear(size, width), nn.SiLU()]
            size = width
        layers.append(nn.Linear(size, dim))
        self.net = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor, sigma: torch.Tensor) -> torch.Tensor:
        sd2 = self.sigma_data**2
        c_skip = sd2 / (sigma**2 + sd2)
        c_out = sigma * self.sigma_data / torch.sqrt(sigma**2 + sd2)
        c_in = 1 / torch.sqrt(sigma**2 + sd2)
        features = torch.cat([c_in * x, self.embed(torch.log(sigma) / 4)], dim=-1)
        return c_skip * x + c_out * self.net(features)


def loss_weight(sigma: torch.Tensor, sigma_data: float) -> torch.Tensor:
    """λ(σ) = (σ² + σ_d²) / (σ·σ_d)² = 1 / c_out²."""
    return (sigma**2 + sigma_data**2) / (sigma * sigma_data) ** 2


def weighted_error(denoiser, x: torch.Tensor, sigma: torch.Tensor, noise: torch.Tensor) -> torch.Tensor:
    """(B,) λ(σ)·‖D(x + σ·n; σ) − x‖², summed over the dimensions: the per-sample denoising error whose negative
    is, up to terms that do not depend on the model, a one-sample estimate of the ELBO (DDO's log-ratio proxy)."""
    denoised = denoiser(x + sigma * noise, sigma)
    return (loss_weight(sigma, denoiser.sigma_data) * (denoised - x).square()).sum(dim=-1)


def denoising_loss(denoiser, x: torch.Tensor, sigma: torch.Tensor, noise: torch.Tensor) -> torch.Tensor:
    """The EDM training loss: :func:`weighted_error` averaged over the batch and the dimensions."""
    return weighted_error(denoiser, x, sigma, noise).mean() / x.shape[-1]


@torch.no_grad()
def heun_sample(denoise, start: torch.Tensor, levels: torch.Tensor) -> torch.Tensor:
    """Integrate the probability-flow ODE dx/dσ = (x − D(x; σ)) / σ from x = ``start`` · levels[0] down to σ = 0
    with Heun's second-order steps (Euler on the last step to 0): EDM's deterministic sampler (Algorithm 1).
    ``denoise(x, sigma)`` takes σ of shape (B, 1)."""
    levels = levels.to(start.dtype).to(start.device)
    x = start * levels[0]
    ones = torch.ones(start.shape[0], 1, dtype=start.dtype, device=start.device)
    for current, following in zip(levels[:-1], levels[1:]):
        slope = (x - denoise(x, current * ones)) / current
        proposal = x + (following - current) * slope
        if following > 0:
            slope_next = (proposal - denoise(proposal, following * ones)) / following
            x = x + (following - current) * 0.5 * (slope + slope_next)
        else:
            x = proposal
    return x
