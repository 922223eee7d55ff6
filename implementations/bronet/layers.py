"""Block Reflector Orthogonal layers (Lai et al., ICML 2025): dense and FFT convolution (imports torch at its top).

W = I − 2·V (VᵀV + δI)⁻¹ Vᵀ for a rank-n parameter V (n < m): orthogonal, symmetric, an
involution, no iteration. δ is the small ridge, ``ridge``·mean(diag VᵀV) (1e-5 as in
LipConvNet). The convolution builds one such reflector per frequency of the zero-padded
grid and applies it to the input's spectrum (pad → per-frequency unitary → crop).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from components.lipschitz_torch import (
    CachedWeight,
    batched_product,
    batched_solve,
    fft_conv_apply,
    frequency_batch,
    rank_from_ratio,
)


def block_reflector(v: torch.Tensor, ridge: float = 1e-5) -> torch.Tensor:
    """I − 2 V (VᴴV + δI)⁻¹ Vᴴ for V (..., m, n), batched over the leading dimensions (real or complex)."""
    m, n = v.shape[-2:]
    gram = v.mH @ v
    diag = gram.diagonal(dim1=-2, dim2=-1).real
    delta = ridge * diag.mean(dim=-1, keepdim=True).clamp_min(torch.finfo(diag.dtype).tiny)
    eye_n = torch.eye(n, dtype=v.dtype, device=v.device)
    x = torch.linalg.solve(gram + delta[..., None] * eye_n, v.mH)  # (..., n, m)
    return torch.eye(m, dtype=v.dtype, device=v.device) - 2.0 * (v @ x)


class BROLinear(CachedWeight):
    """y = W[:out, :in] x + b with W the m×m block reflector, m = max(in, out).

    Rank n = rank_from_ratio(m, rank_ratio) when in = out, else min(in, out) (BRONet's rule).
    A slice of an orthogonal matrix has orthonormal rows or columns: the layer is 1-Lipschitz.
    """

    def __init__(self, features_in: int, features_out: int, *, rank_ratio: float = 0.5, ridge: float = 1e-5,
                 generator: torch.Generator | None = None):
        super().__init__()
        m = max(features_in, features_out)
        n = rank_from_ratio(m, rank_ratio) if features_in == features_out else min(features_in, features_out)
        n = min(n, m - 1)
        self.features_in, self.features_out, self.ridge = features_in, features_out, ridge
        self.v = nn.Parameter(torch.randn(m, n, generator=generator) / m ** 0.5)
        self.bias = nn.Parameter(torch.zeros(features_out))

    def compute_weight(self):
        return block_reflector(self.v, self.ridge)[: self.features_out, : self.features_in]

    def forward(self, x):
        return F.linear(x, self.weight(), self.bias)


class BROConv2dStride2(nn.Module):
    """BRO's stride-2 convolution: pixel-unshuffle (b, c, 2h, 2w) → (b, 4c, h, w), an orthogonal
    permutation, then :class:`BROConv2d` on the 4c channels."""

    lipschitz_bound = 1.0

    def __init__(self, channels: int, kernel_size: int = 3, **bro):
        super().__init__()
        self.conv = BROConv2d(4 * channels, kernel_size, **bro)

    def forward(self, x):
        return self.conv(F.pixel_unshuffle(x, 2))


class BROConv2d(CachedWeight):
    """The BRO convolution, c → c channels, k×k kernel V of rank n, same output size, via the FFT.

    Zero-pad by k//2 (N = H + 2·(k//2)); Ṽ = rfft2(V, s=(N, N)) gives a c×n matrix per
    frequency; W̃ = I − 2 Ṽ (ṼᴴṼ + δI)⁻¹ Ṽᴴ with one batched solve over the F = N·(N//2+1)
    frequencies. Training applies it as the low-rank update z̃ = x̃ − 2 Ṽ (X x̃), X = (ṼᴴṼ +
    δI)⁻¹Ṽᴴ (n×c per frequency, cheaper than the c×c product for n < c/2); evaluation caches
    the c×c unitary W̃ per frequency for the grid size it met. Initialised identity-like
    (ones on the first n channel pairs at the centre tap, LipConvNet) plus small noise
    drawn from ``generator`` so that each seed draws its own network.
    """

    def __init__(self, channels: int, kernel_size: int = 3, *, rank_ratio: float = 0.5, ridge: float = 1e-5,
                 init_noise: float = 0.05, generator: torch.Generator | None = None):
        super().__init__()
        n = rank_from_ratio(channels, rank_ratio)
        v = torch.randn(channels, n, kernel_size, kernel_size, generator=generator) * init_noise
        v[torch.arange(n), torch.arange(n), kernel_size // 2, kernel_size // 2] += 1.0
        self.v = nn.Parameter(v)
        self.bias = nn.Parameter(torch.zeros(channels))
        self.channels, self.kernel_size, self.rank, self.ridge = channels, kernel_size, n, ridge
        self.padding = kernel_size // 2
        self._size = None

    def spectrum(self, size: int):
        """(Ṽ (F, c, n), Ṽᴴ, ṼᴴṼ + δI): the per-frequency factors of W̃ on the size×size grid."""
        vf = frequency_batch(self.v, size)
        # a physical conjugate: a lazily conjugated operand makes bmm loop over the frequencies one by one
        vh = torch.conj_physical(vf).mT
        gram = batched_product(vh, vf)
        delta = self.ridge * gram.diagonal(dim1=-2, dim2=-1).real.mean(dim=-1, keepdim=True)
        eye = torch.eye(self.rank, dtype=vf.dtype, device=vf.device)
        return vf, vh, gram + delta[..., None] * eye

    def factors(self, size: int):
        """(Ṽ (F, c, n), X (F, n, c)): W̃ = I − 2ṼX on the size×size grid, X = (ṼᴴṼ + δI)⁻¹Ṽᴴ."""
        vf, vh, gram = self.spectrum(size)
        return vf, torch.linalg.solve(gram, vh)

    def compute_weight(self):
        vf, vh, gram = self.spectrum(self._size)
        eye = torch.eye(self.channels, dtype=vf.dtype, device=vf.device)
        return eye - 2.0 * batched_product(vf, batched_solve(gram, vh.contiguous()))

    def unitary(self, size: int):
        """The per-frequency unitary matrices W̃ (F, c, c) on the size×size padded grid."""
        self._size = size
        return self.compute_weight()

    def forward(self, x):
        size = x.shape[-1] + 2 * self.padding
        if self.training and x.shape[0] <= 2 * self.channels:
            vf, vh, gram = self.spectrum(size)
            # z̃ = x̃ − 2Ṽ (ṼᴴṼ + δI)⁻¹ Ṽᴴx̃: one batched solve with the batch as right-hand sides, no c×c matrix
            z = fft_conv_apply(
                x, lambda xf: xf - 2.0 * batched_product(vf, batched_solve(gram, batched_product(vh, xf))), self.padding)
        elif self.training:
            # a batch much larger than the width: forming W̃ (F, c, c) once costs fewer flops than the low-rank update
            self._size = size
            w = self.compute_weight()
            z = fft_conv_apply(x, lambda xf: batched_product(w, xf), self.padding)
        else:
            if self._size != size:
                self._cache, self._size = None, size
            w = self.weight()
            z = fft_conv_apply(x, lambda xf: w @ xf, self.padding)
        return z + self.bias[:, None, None]
