"""The baselines of ``np.regression`` in torch: the full-attention TNP, the pseudo-token (Perceiver-style) TNP and
the ConvCNP. Imports torch at module level: only the methods' ``build`` (``baselines/neural_processes.py``) does.
"""
from __future__ import annotations

import math

import torch
from torch import nn

from components.neural_process_torch import (CrossAttentionBlock, FourierEmbedding, SelfAttentionBlock, gaussian_head,
                                             grid_nodes, mlp, square_centre, tokens_xy)


class FullTNP(nn.Module):
    """TNP-D: per layer the context tokens self-attend (all pairs: O(Nc²)) and the targets cross-attend to them."""

    def __init__(self, x_dim: int, domain_width: float, dim: int, heads: int, ffn: int, layers: int):
        super().__init__()
        self.embedding = FourierEmbedding(x_dim, dim, domain_width)
        self.token_encoder = mlp(dim + 2, dim, dim)
        self.context_layers = nn.ModuleList(SelfAttentionBlock(dim, heads, ffn) for _ in range(layers))
        self.target_layers = nn.ModuleList(CrossAttentionBlock(dim, heads, ffn) for _ in range(layers))
        self.head = mlp(dim, dim, 2)

    def forward(self, xc, yc, xt):
        context = tokens_xy(self.embedding, self.token_encoder, xc, yc)
        target = tokens_xy(self.embedding, self.token_encoder, xt)
        for self_attend, cross_attend in zip(self.context_layers, self.target_layers):
            context = self_attend(context)
            target = cross_attend(target, context)
        return gaussian_head(self.head(target))


class PseudoTokenTNP(nn.Module):
    """PT-TNP (Perceiver-style): per layer L learned latents cross-attend to the context tokens, self-attend, and the
    targets cross-attend to the latents: O(Nc · L)."""

    def __init__(self, x_dim: int, domain_width: float, dim: int, heads: int, ffn: int, layers: int, latents: int):
        super().__init__()
        self.embedding = FourierEmbedding(x_dim, dim, domain_width)
        self.token_encoder = mlp(dim + 2, dim, dim)
        self.latents = nn.Parameter(torch.randn(latents, dim) * 0.02)
        self.read = nn.ModuleList(CrossAttentionBlock(dim, heads, ffn) for _ in range(layers))
        self.process = nn.ModuleList(SelfAttentionBlock(dim, heads, ffn) for _ in range(layers))
        self.decode = nn.ModuleList(CrossAttentionBlock(dim, heads, ffn) for _ in range(layers))
        self.head = mlp(dim, dim, 2)

    def forward(self, xc, yc, xt):
        context = tokens_xy(self.embedding, self.token_encoder, xc, yc)
        target = tokens_xy(self.embedding, self.token_encoder, xt)
        latents = self.latents.expand(xc.shape[0], -1, -1)
        for read, process, decode in zip(self.read, self.process, self.decode):
            latents = process(read(latents, context))
            target = decode(target, latents)
        return gaussian_head(self.head(target))


class SetConv(nn.Module):
    """Σ_n exp(−½ Σ_d (a_d − b_{n,d})² / ℓ_d²) f_n with a learned lengthscale per input dimension."""

    def __init__(self, x_dim: int, lengthscale: float, normalise: bool = False):
        super().__init__()
        self.log_lengthscale = nn.Parameter(torch.full((x_dim,), math.log(lengthscale)))
        self.normalise = normalise

    def forward(self, at, points, values):  # (B, A, dx), (B, N, dx), (B, N, C) → (B, A, C)
        scale = self.log_lengthscale.exp()
        weights = torch.exp(-0.5 * torch.cdist(at / scale, points / scale, compute_mode="donot_use_mm_for_euclid_dist").square())
        if self.normalise:  # a weighted average: the output's scale does not grow with the grid's density
            weights = weights / (weights.sum(-1, keepdim=True) + 1e-6)
        return weights @ values


class ConvCNP(nn.Module):
    """SetConv onto a G × G grid (a density channel and the density-normalised y), a CNN of ``layers`` 5 × 5 convolutions
    with residual connections, SetConv back to the targets (its weights normalised to sum to one: unnormalised, the
    decoder's sum over the ~50 grid nodes within reach put the head's inputs in the hundreds at initialisation and
    training diverged on two seeds of three), a pointwise MLP head. Translation equivariant."""

    def __init__(self, x_dim: int, domain: tuple[float, float], channels: int, layers: int, grid: int, kernel: int = 5):
        super().__init__()
        if x_dim != 2:
            raise ValueError(f"the ConvCNP here is built for 2-D inputs (got {x_dim}-D)")
        self.grid, self.domain, self.width = grid, tuple(domain), float(domain[1] - domain[0])
        step = self.width / grid
        self.encode = SetConv(x_dim, 2 * step)
        self.decode = SetConv(x_dim, 2 * step, normalise=True)
        self.lift = nn.Conv2d(2, channels, 1)
        self.convs = nn.ModuleList(nn.Conv2d(channels, channels, kernel, padding=kernel // 2) for _ in range(layers))
        self.head = mlp(channels, channels, 2)

    def forward(self, xc, yc, xt):
        b = xc.shape[0]
        grid_x = grid_nodes(square_centre(self.domain, xc), self.grid, self.width)
        density_y = self.encode(grid_x, xc, torch.cat([torch.ones_like(yc), yc], -1))  # (B, M, 2)
        density = density_y[..., :1]
        features = torch.cat([density, density_y[..., 1:] / (density + 1e-6)], -1)
        h = self.lift(features.transpose(1, 2).reshape(b, 2, self.grid, self.grid))
        for conv in self.convs:
            h = h + conv(torch.relu(h))
        h = h.reshape(b, h.shape[1], -1).transpose(1, 2)  # (B, M, C)
        return gaussian_head(self.head(self.decode(xt, grid_x, h)))
