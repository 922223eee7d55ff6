"""The Lipschitz layers BRO is compared with (imports torch at its top): Cayley, SOC, AOL, unconstrained.

* Cayley (Trockman & Kolter 2021): W = (I + A)⁻¹(I − A) with A skew-symmetric; the
  convolution does it per frequency of the zero-padded grid (A = Ṽ − Ṽᴴ), one batched
  solve over the frequencies, in the same pad → unitary → crop frame as BRO's;
* SOC (Singla & Feizi 2021): the dense layer is exp(A − Aᵀ) (``torch.matrix_exp``); the
  convolution is the truncated series Σ_{k≤T} Aᵏx/k! of the skew-symmetric convolution
  A = conv_K − conv_Kᵀ, K scaled so that ‖A‖ ≤ 1 (a Schur-test bound), applied as one
  convolution per term with the skew filter K − flip(Kᵀ); its guaranteed bound is then
  1 + Σ_{k>T} 1/k!;
* AOL (Prach & Lampert 2022): W·diag(Σⱼ|WᵀW|ᵢⱼ)^(-1/2), for the convolution with the
  kernel of CᵀC;
* unconstrained ``nn.Linear`` / ``nn.Conv2d``: no bound.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from components.lipschitz_torch import CachedWeight, batched_product, batched_solve, fft_conv_apply, frequency_batch


def _skew(p: torch.Tensor) -> torch.Tensor:
    return p - p.mT


def cayley(a: torch.Tensor) -> torch.Tensor:
    """(I + A)⁻¹(I − A) for skew-symmetric (skew-Hermitian) A, batched over leading dimensions."""
    eye = torch.eye(a.shape[-1], dtype=a.dtype, device=a.device)
    if a.dim() == 2:
        return torch.linalg.solve(eye + a, eye - a)
    # per frequency: the same batched solve as BRO's (one thread, physically conjugated backward)
    return batched_solve(eye + a, (eye - a).contiguous())


class CayleyLinear(CachedWeight):
    """y = W[:out, :in] x + b, W = Cayley(P − Pᵀ) of an m×m parameter, m = max(in, out)."""

    def __init__(self, features_in: int, features_out: int, *, generator: torch.Generator | None = None):
        super().__init__()
        m = max(features_in, features_out)
        self.features_in, self.features_out = features_in, features_out
        self.p = nn.Parameter(torch.randn(m, m, generator=generator) / m)
        self.bias = nn.Parameter(torch.zeros(features_out))

    def compute_weight(self):
        return cayley(_skew(self.p))[: self.features_out, : self.features_in]

    def forward(self, x):
        return F.linear(x, self.weight(), self.bias)


class CayleyConv2d(CachedWeight):
    """The Cayley convolution c → c per frequency of the zero-padded grid: W̃ = (I + Ã)⁻¹(I − Ã), Ã = Ṽ − Ṽᴴ."""

    def __init__(self, channels: int, kernel_size: int = 3, *, generator: torch.Generator | None = None):
        super().__init__()
        self.kernel = nn.Parameter(torch.randn(channels, channels, kernel_size, kernel_size, generator=generator)
                                   / (channels * kernel_size**2))
        self.bias = nn.Parameter(torch.zeros(channels))
        self.padding = kernel_size // 2
        self._size = None

    def compute_weight(self):
        vf = frequency_batch(self.kernel, self._size)
        return cayley(vf - vf.mH)

    def forward(self, x):
        size = x.shape[-1] + 2 * self.padding
        if self._size != size:
            self._cache, self._size = None, size
        w = self.weight()
        # the same batched, physically conjugated per-frequency product as BRO's (a fair comparison)
        return fft_conv_apply(x, lambda xf: batched_product(w, xf), self.padding) + self.bias[:, None, None]


class SOCLinear(CachedWeight):
    """y = W[:out, :in] x + b, W = exp(P − Pᵀ) (matrix exponential, orthogonal to float precision)."""

    def __init__(self, features_in: int, features_out: int, *, generator: torch.Generator | None = None):
        super().__init__()
        m = max(features_in, features_out)
        self.features_in, self.features_out = features_in, features_out
        self.p = nn.Parameter(torch.randn(m, m, generator=generator) / m)
        self.bias = nn.Parameter(torch.zeros(features_out))

    def compute_weight(self):
        return torch.linalg.matrix_exp(_skew(self.p))[: self.features_out, : self.features_in]

    def forward(self, x):
        return F.linear(x, self.weight(), self.bias)


def series_tail(terms: int) -> float:
    """Σ_{k>terms} 1/k!: how far the truncated exponential of an A with ‖A‖ ≤ 1 can exceed norm 1."""
    return max(0.0, math.e - sum(1.0 / math.factorial(k) for k in range(terms + 1)))


class SOCConv2d(CachedWeight):
    """Skew-orthogonal convolution: Σ_{k≤T} Aᵏx/k!, A = conv_K − conv_Kᵀ (zero padding, same size).

    K is divided by max(1, 2b), b = √(max_o Σ|K_o··| · max_i Σ|K_·i·|) ≥ ‖conv_K‖, so ‖A‖ ≤ 1.
    conv_Kᵀ (the transposed convolution) is the convolution with K's channels swapped and its
    taps flipped, so A is one convolution whose filter S = K − flip(Kᵀ) is skew (Sᵀ flipped = −S):
    the weight is S, and each term costs one convolution rather than a convolution and a transposed one.
    T = ``train_terms`` in training, ``eval_terms`` (12) at evaluation: 5 powers of A after the identity, as
    SOC's and BRONet's public codes train (SOC's ``train_terms = 5``; BRONet's 6 counts the identity);
    the bound it guarantees is 1 + Σ_{k>T} 1/k!.
    """

    def __init__(self, channels: int, kernel_size: int = 3, *, train_terms: int = 5, eval_terms: int = 12,
                 generator: torch.Generator | None = None):
        super().__init__()
        if kernel_size % 2 == 0:
            raise ValueError(f"SOC's same-size convolution needs an odd kernel_size; got {kernel_size}")
        self.kernel = nn.Parameter(torch.randn(channels, channels, kernel_size, kernel_size, generator=generator)
                                   / (channels * kernel_size**2))
        self.bias = nn.Parameter(torch.zeros(channels))
        self.padding, self.train_terms, self.eval_terms = kernel_size // 2, int(train_terms), int(eval_terms)

    @property
    def lipschitz_bound(self) -> float:
        return 1.0 + series_tail(self.train_terms if self.training else self.eval_terms)

    def compute_weight(self):
        """The skew filter S of A = conv_S, from the scaled kernel."""
        k = self.kernel
        bound = torch.sqrt(k.abs().sum(dim=(1, 2, 3)).max() * k.abs().sum(dim=(0, 2, 3)).max())
        k = k / torch.clamp(2.0 * bound, min=1.0)
        return k - k.transpose(0, 1).flip(2, 3)

    def forward(self, x):
        skew = self.weight()
        terms = self.train_terms if self.training else self.eval_terms
        out, term = x, x
        for i in range(1, terms + 1):
            term = F.conv2d(term, skew / i, padding=self.padding)  # the 1/i on the small filter, not the activation
            out = out + term
        return out + self.bias[:, None, None]


class AOLLinear(CachedWeight):
    """y = P·diag(d) x + b, dᵢ = (Σⱼ|PᵀP|ᵢⱼ)^(-1/2): 1-Lipschitz for any P (AOL's rescaling)."""

    def __init__(self, features_in: int, features_out: int, *, generator: torch.Generator | None = None):
        super().__init__()
        self.p = nn.Parameter(torch.randn(features_out, features_in, generator=generator) / math.sqrt(features_in))
        self.bias = nn.Parameter(torch.zeros(features_out))

    def compute_weight(self):
        d = (self.p.mT @ self.p).abs().sum(dim=1).clamp_min(1e-12).rsqrt()
        return self.p * d[None, :]

    def forward(self, x):
        return F.linear(x, self.weight(), self.bias)


class AOLConv2d(CachedWeight):
    """AOL's convolution: K·dᵢ per input channel, dᵢ = (Σⱼ,ₛ|Mᵢⱼₛ|)^(-1/2), M the kernel of CᵀC."""

    def __init__(self, channels: int, kernel_size: int = 3, *, generator: torch.Generator | None = None):
        super().__init__()
        self.kernel = nn.Parameter(torch.randn(channels, channels, kernel_size, kernel_size, generator=generator)
                                   / (channels * kernel_size))
        self.bias = nn.Parameter(torch.zeros(channels))
        self.padding = kernel_size // 2

    def compute_weight(self):
        kt = self.kernel.transpose(0, 1)
        gram = F.conv2d(kt, kt, padding=self.kernel.shape[-1] - 1)  # (c_in, c_in, 2k−1, 2k−1)
        d = gram.abs().sum(dim=(1, 2, 3)).clamp_min(1e-12).rsqrt()
        return self.kernel * d[None, :, None, None]

    def forward(self, x):
        return F.conv2d(x, self.weight(), self.bias, padding=self.padding)


class PlainLinear(nn.Linear):
    """An unconstrained dense layer: it guarantees no bound."""

    lipschitz_bound = None


class PlainConv2d(nn.Conv2d):
    """An unconstrained c → c convolution, same size: it guarantees no bound."""

    lipschitz_bound = None

    def __init__(self, channels: int, kernel_size: int = 3):
        super().__init__(channels, channels, kernel_size, padding=kernel_size // 2)
