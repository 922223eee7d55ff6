"""Building blocks of the neural processes of ``np.regression``: embeddings, attention, the predictive head, grids.

Imports torch at module level: only the methods' ``build`` imports it. Every model here maps a batch of tasks
(xc (B, Nc, Dx), yc (B, Nc, 1), xt (B, Nt, Dx)) to the predictive mean and standard deviation (B, Nt, 1), and
all share the same pieces, so that a difference between two of them is the difference of their architectures:

* :class:`FourierEmbedding`: sin/cos features of each input coordinate at wavelengths log-spaced from
  ``min_wavelength`` to the domain's width, then one linear layer (the repository's GP embedding, scaled down);
* :class:`Attention`: multi-head attention through ``scaled_dot_product_attention``, with an optional additive
  bias on the logits (the translation-equivariant models' relative-position kernel) and a key mask;
* :class:`SelfAttentionBlock` and :class:`CrossAttentionBlock`: pre-norm residual attention plus feed-forward;
* :func:`gaussian_head`: σ = √(softplus(raw) + floor²) (the repository uses √softplus(raw) with no floor; a
  small one keeps early training from log-likelihood blow-ups, as the paper note advises);
* :func:`square_centre`, :func:`grid_nodes`, :func:`nearest_node`: a regular G × G grid laid over the fixed square
  [low, high]² the task names (``ProblemShape.domain``), the same for training and every evaluation set, as the
  paper's grids are. A set shifted away from the training square is then read on grid nodes training never
  filled: a model that reads positions only through differences (the TE models, ConvCNP) is equivariant to shifts
  by whole grid steps and nearly so otherwise, a model that embeds absolute positions meets positions it never saw.
  (Before issue 29 the grid was centred on each task's inputs, which made every grid model equivariant by
  construction and the shifted test weak.)
"""
from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

MIN_STD = 1e-3


class FourierEmbedding(nn.Module):
    """x (…, dx) → (…, dim): per coordinate, sin and cos at ``wavelengths`` log-spaced wavelengths, then linear."""

    def __init__(self, x_dim: int, dim: int, domain_width: float, wavelengths: int = 16, min_wavelength: float = 0.05):
        super().__init__()
        lam = torch.logspace(math.log10(min_wavelength), math.log10(2 * domain_width), wavelengths)
        self.register_buffer("frequencies", 2 * math.pi / lam)
        self.linear = nn.Linear(2 * wavelengths * x_dim, dim)

    def forward(self, x):
        phase = x[..., None] * self.frequencies  # (…, dx, W)
        return self.linear(torch.cat([phase.sin(), phase.cos()], -1).flatten(-2))


def mlp(d_in: int, d_hidden: int, d_out: int, layers: int = 2) -> nn.Sequential:
    """``layers`` linear layers with ReLU between them."""
    dims = [d_in] + [d_hidden] * (layers - 1) + [d_out]
    modules: list[nn.Module] = []
    for i in range(layers):
        modules.append(nn.Linear(dims[i], dims[i + 1]))
        if i < layers - 1:
            modules.append(nn.ReLU())
    return nn.Sequential(*modules)


class Attention(nn.Module):
    """Multi-head attention; ``bias`` (…, heads, Nq, Nk) is added to the logits, ``mask`` (…, Nk) keeps keys."""

    def __init__(self, dim: int, heads: int):
        super().__init__()
        if dim % heads:
            raise ValueError(f"embedding width {dim} is not a multiple of the {heads} heads")
        self.heads = heads
        self.q, self.k, self.v, self.out = (nn.Linear(dim, dim) for _ in range(4))

    def _split(self, x):
        return x.unflatten(-1, (self.heads, -1)).transpose(-3, -2)  # (…, heads, N, dh)

    def forward(self, q, kv, bias=None, mask=None, gather=None):
        """``gather``: (rows, index) picks each query's keys from ``kv`` after the projections, so a token that many
        queries read (a grid token in the k-NN decoder) is projected once."""
        attn_mask = bias
        if mask is not None:
            keep = mask[..., None, None, :]  # (…, 1, 1, Nk)
            if attn_mask is None:
                attn_mask = keep
            else:
                attn_mask = attn_mask.masked_fill(~keep, float("-inf"))
        k, v = self.k(kv), self.v(kv)
        if gather is not None:
            return self._gathered(q, k[gather], v[gather], bias)
        out = F.scaled_dot_product_attention(self._split(self.q(q)), self._split(k), self._split(v), attn_mask=attn_mask)
        return self.out(out.transpose(-3, -2).flatten(-2))


    def _gathered(self, q, k, v, bias):
        """One query per row (q (…, 1, D)) against its own few keys (…, K, D): elementwise products beat many tiny
        matrix products. ``bias`` (…, heads, 1, K)."""
        q = self.q(q).unflatten(-1, (self.heads, -1))  # (…, 1, H, dh)
        k, v = k.unflatten(-1, (self.heads, -1)), v.unflatten(-1, (self.heads, -1))  # (…, K, H, dh)
        logits = (q * k).sum(-1) / math.sqrt(q.shape[-1])  # (…, K, H)
        if bias is not None:
            logits = logits + bias[..., 0, :].transpose(-1, -2)
        weights = logits.softmax(-2)[..., None]
        return self.out((weights * v).sum(-3, keepdim=True).flatten(-2))


class SelfAttentionBlock(nn.Module):
    """Pre-norm: x + MHSA(LN x), then x + FFN(LN x)."""

    def __init__(self, dim: int, heads: int, ffn: int):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.attention = Attention(dim, heads)
        self.ffn = mlp(dim, ffn, dim)

    def forward(self, x, bias=None, mask=None):
        h = self.norm1(x)
        x = x + self.attention(h, h, bias, mask)
        return x + self.ffn(self.norm2(x))


class CrossAttentionBlock(nn.Module):
    """Pre-norm: q + MHCA(LN q, LN kv), then q + FFN(LN q)."""

    def __init__(self, dim: int, heads: int, ffn: int):
        super().__init__()
        self.norm_q, self.norm_kv, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.attention = Attention(dim, heads)
        self.ffn = mlp(dim, ffn, dim)

    def forward(self, q, kv, bias=None, mask=None, gather=None):
        q = q + self.attention(self.norm_q(q), self.norm_kv(kv), bias, mask, gather)
        return q + self.ffn(self.norm2(q))


def gaussian_head(raw):
    """(…, 2) → mean (…, 1), std (…, 1): σ = √(softplus(raw) + MIN_STD²). The floor inside the root keeps the
    gradient finite where softplus underflows to 0 (raw below about −88 in float32), which √softplus(raw) + MIN_STD
    does not: its derivative there is infinite and turns the step's gradient into NaN."""
    mean, pre = raw[..., :1], raw[..., 1:2]
    return mean, (F.softplus(pre) + MIN_STD**2).sqrt()


def tokens_xy(embedding: nn.Module, encoder: nn.Module, x, y=None):
    """Context tokens MLP([E(x), y, 0]); target tokens (``y`` None) MLP([E(x), 0, 1])."""
    e = embedding(x)
    if y is None:
        y, flag = torch.zeros_like(e[..., :1]), torch.ones_like(e[..., :1])
    else:
        flag = torch.zeros_like(y)
    return encoder(torch.cat([e, y, flag], -1))


def square_centre(domain: tuple[float, float], x):
    """(B, 2): the middle of the square [low, high]², once per task of the batch ``x`` (B, N, 2)."""
    return x.new_full((x.shape[0], x.shape[-1]), (domain[0] + domain[1]) / 2)


def grid_nodes(centre, size: int, width: float):
    """(B, size², 2) node positions of a size × size grid of width ``width`` centred on ``centre`` (B, 2); row-major."""
    step = width / size
    ticks = (torch.arange(size, dtype=centre.dtype, device=centre.device) + 0.5) * step - width / 2
    gx, gy = torch.meshgrid(ticks, ticks, indexing="ij")
    offsets = torch.stack([gx, gy], -1).reshape(-1, 2)
    return centre[:, None, :] + offsets


def nearest_node(x, centre, size: int, width: float):
    """(B, N) index of each point's nearest node of :func:`grid_nodes` (points beyond the grid go to its edge)."""
    step = width / size
    cell = torch.floor((x - centre[:, None, :] + width / 2) / step).long().clamp_(0, size - 1)
    return cell[..., 0] * size + cell[..., 1]


def parameter_count(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters() if p.requires_grad)
