"""The networks of ``spatial.expression``: STFlow's kNN spatial transformer, shared by STFlow and the baselines that
are "the same network" (the one-shot regressor, the compute-matched iterative regressor), and the full-attention
transformer over all spots of a slide.

Imports torch at module level: only the methods' ``fit`` imports it. Every network maps one slide's spot features
``features`` (N, D), the current expression ``expression`` (N, G = its ``genes``) (the flow's state Y^t, the
previous pass's output, or zeros), a scalar time ``t`` and the task's kNN graph of the slide
(:class:`harness.tasks.spatial.slides.SlideGraph`: neighbours, offsets, centred coordinates) to a prediction of the
clean expression (N, G).

* :func:`frame_averaged_edges`: STFlow's E(2)-invariant edge input. Per spot, the PCA frame of its neighbours'
  offsets (centre, 2 × 2 covariance, eigenvectors), its 2² sign flips, the *centred* offsets projected into each
  frame with the offset's length, through one MLP and averaged over the four frames: invariant to rotating,
  reflecting or translating the slide (a test pins it). ``frame_averaging=False`` feeds the raw offsets instead
  (the ablation: equivariant to nothing but translation);
* :class:`SpatialTransformer`: the input token Linear(features) + MLP(time embedding); blocks of local attention
  whose per-head logit is an MLP of [q_i, k_j, e_ij, Y_j − Y_i] (neighbours' expression differences are how
  cell-cell interaction enters), softmax over the k neighbours, the message Σ a v_j beside Σ a e_ij, residual and
  layer norm, a SwiGLU feed-forward, and a per-block expression head (Linear-GELU-LayerNorm-Linear) whose output is
  the next block's expression; the prediction is the mean over blocks, as upstream's;
* :class:`FullAttentionTransformer`: tokens Linear(features) + a sinusoidal embedding of the absolute (slide
  centred) coordinates, standard pre-norm transformer blocks whose attention over all N spots is written out as
  softmax(QKᵀ/√d)V, so that the N × N matrix is materialised, as a naive global-attention slide model's is (torch's
  fused CPU kernel would not hold it); a one-shot regressor (it ignores ``expression`` and ``t``).

Choices the paper note leaves open, fixed here: no output ReLU (upstream's ``non_negative`` argument crashes at
construction; the fork that runs drops it); no dropout (the training loop selects checkpoints by validation
Pearson instead); time is embedded as sinusoids of 1000·t through an MLP (upstream's sinusoid of t in [0, 1] with
period up to 10⁴ barely varies, the note's pitfall).
"""
from __future__ import annotations

import math
import torch
from torch import nn
from torch.nn import functional as F


def frames(offsets: torch.Tensor) -> torch.Tensor:
    """(N, 4, 2, 2): per spot the eigenvectors of its neighbours' offset covariance, as columns, under the four sign
    flips (frame averaging over E(2) needs every frame the PCA cannot tell apart)."""
    centred = offsets - offsets.mean(1, keepdim=True)
    covariance = centred.transpose(1, 2) @ centred / offsets.shape[1]
    _, vectors = torch.linalg.eigh(covariance.double())
    vectors = vectors.float()
    signs = torch.tensor([[1.0, 1.0], [1.0, -1.0], [-1.0, 1.0], [-1.0, -1.0]], device=offsets.device)
    return vectors[:, None, :, :] * signs[None, :, None, :]


def frame_averaged_edges(offsets: torch.Tensor, edge_mlp: nn.Module, frame_averaging: bool = True) -> torch.Tensor:
    """(N, k, P) edge features: the mean over the four frames of edge_mlp([centred offset in the frame, ‖offset‖]),
    or, without frame averaging, edge_mlp([raw offset, ‖offset‖])."""
    length = offsets.norm(dim=-1, keepdim=True)
    if not frame_averaging:
        return edge_mlp(torch.cat([offsets, length], -1))
    centred = offsets - offsets.mean(1, keepdim=True)
    projected = torch.einsum("nkd,nfde->nfke", centred, frames(offsets))  # (N, 4, k, 2)
    inputs = torch.cat([projected, length[:, None].expand(-1, 4, -1, -1)], -1)
    return edge_mlp(inputs).mean(1)


def time_embedding(t: torch.Tensor, dim: int) -> torch.Tensor:
    """Sinusoids of 1000·t at periods log-spaced up to 10⁴ (1000·t: a t in [0, 1] then turns the phases)."""
    half = dim // 2
    frequencies = torch.exp(-math.log(10000.0) * torch.arange(half, device=t.device) / half)
    angles = 1000.0 * t.reshape(-1, 1) * frequencies
    return torch.cat([angles.sin(), angles.cos()], -1)


class SwiGLU(nn.Module):
    def __init__(self, dim: int, ratio: int = 4):
        super().__init__()
        self.up = nn.Linear(dim, 2 * ratio * dim)
        self.down = nn.Linear(ratio * dim, dim)

    def forward(self, x):
        a, b = self.up(x).chunk(2, -1)
        return self.down(F.silu(a) * b)


class ExpressionHead(nn.Module):
    """STFlow's per-block gene update: Linear-GELU-LayerNorm-Linear (no dropout, no output ReLU)."""

    def __init__(self, dim: int, genes: int):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(dim, dim), nn.GELU(), nn.LayerNorm(dim), nn.Linear(dim, genes))

    def forward(self, h):
        return self.net(h)


class LocalAttentionBlock(nn.Module):
    """One spatial-transformer block on the kNN graph (see the module's docstring)."""

    def __init__(self, dim: int, edge_dim: int, genes: int, heads: int):
        super().__init__()
        if dim % heads:
            raise ValueError(f"width {dim} is not a multiple of heads {heads}")
        self.heads = heads
        self.q, self.k, self.v = nn.Linear(dim, dim), nn.Linear(dim, dim), nn.Linear(dim, dim)
        # the logit MLP's first layer on [q_i, k_j, e_ij, Y_j − Y_i], split by input: its q and k parts are computed
        # once a spot instead of once an edge (the same function, a third of the cost)
        self.logit_q, self.logit_k = nn.Linear(dim, dim), nn.Linear(dim, dim, bias=False)
        self.logit_e, self.logit_y = nn.Linear(edge_dim, dim, bias=False), nn.Linear(genes, dim, bias=False)
        self.logit = nn.Sequential(nn.SiLU(), nn.Linear(dim, heads))
        self.out = nn.Sequential(nn.Linear(dim + edge_dim, dim), nn.SiLU(), nn.Linear(dim, dim))
        self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.feed_forward = SwiGLU(dim)
        self.head = ExpressionHead(dim, genes)

    def forward(self, h, expression, edges, graph):
        n, k = graph.neighbours.shape
        j = graph.neighbours
        difference = expression[j] - expression[:, None, :]
        hidden = (self.logit_q(self.q(h))[:, None, :] + self.logit_k(self.k(h))[j] + self.logit_e(edges)
                  + self.logit_y(difference))
        logits = self.logit(hidden)  # (N, k, heads)
        weights = logits.softmax(1)
        values = self.v(h)[j].reshape(n, k, self.heads, -1)
        message = (weights[..., None] * values).sum(1).reshape(n, -1)
        edge_message = (weights.mean(-1, keepdim=True) * edges).sum(1)
        h = self.norm1(h + self.out(torch.cat([message, edge_message], -1)))
        h = self.norm2(h + self.feed_forward(h))
        return h, self.head(h)


class SpatialTransformer(nn.Module):
    """STFlow's denoiser: ``layers`` local-attention blocks of ``width`` on the kNN graph, frame-averaged edges."""

    def __init__(self, feature_dim: int, genes: int, width: int = 32, layers: int = 4, heads: int = 4,
                 frame_averaging: bool = True):
        super().__init__()
        self.genes, self.frame_averaging = genes, frame_averaging
        self.embed = nn.Linear(feature_dim, width)
        self.time = nn.Sequential(nn.Linear(width, width), nn.SiLU(), nn.Linear(width, width))
        self.edge = nn.Sequential(nn.Linear(3, width), nn.SiLU(), nn.Linear(width, width))
        self.blocks = nn.ModuleList(LocalAttentionBlock(width, width, genes, heads) for _ in range(layers))

    def forward(self, features, expression, t, graph):
        width = self.embed.out_features
        t = torch.as_tensor(t, dtype=features.dtype, device=features.device).reshape(1)
        h = self.embed(features) + self.time(time_embedding(t, width))
        edges = frame_averaged_edges(graph.offsets, self.edge, self.frame_averaging)
        outputs = []
        for block in self.blocks:
            h, expression = block(h, expression, edges, graph)
            outputs.append(expression)
        return torch.stack(outputs).mean(0)


def coordinate_embedding(coordinates: torch.Tensor, dim: int, longest: float) -> torch.Tensor:
    """Sinusoids of each coordinate at ``dim // 4`` wavelengths log-spaced from 1 to ``longest`` spot spacings."""
    count = dim // 4
    wavelengths = torch.logspace(0.0, math.log10(max(longest, 2.0)), count, device=coordinates.device)
    angles = 2 * math.pi * coordinates[..., None] / wavelengths  # (N, 2, count)
    return torch.cat([angles.sin(), angles.cos()], -1).reshape(len(coordinates), -1)


class FullAttentionBlock(nn.Module):
    """Pre-norm multi-head attention over every spot, the N × N weights materialised, then a SwiGLU feed-forward."""

    def __init__(self, dim: int, heads: int):
        super().__init__()
        if dim % heads:
            raise ValueError(f"width {dim} is not a multiple of heads {heads}")
        self.heads = heads
        self.qkv, self.out = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.feed_forward = SwiGLU(dim)

    def forward(self, h):
        n, dim = h.shape
        q, k, v = self.qkv(self.norm1(h)).reshape(n, 3, self.heads, dim // self.heads).permute(1, 2, 0, 3)
        weights = (q @ k.transpose(1, 2) / math.sqrt(dim // self.heads)).softmax(-1)  # (heads, N, N)
        h = h + self.out((weights @ v).transpose(0, 1).reshape(n, dim))
        return h + self.feed_forward(self.norm2(h))


class FullAttentionTransformer(nn.Module):
    """A one-shot slide regressor with global attention: Linear(features) + the coordinates' sinusoidal embedding,
    ``layers`` full-attention blocks, a linear read-out."""

    def __init__(self, feature_dim: int, genes: int, width: int = 32, layers: int = 4, heads: int = 4,
                 longest: float = 64.0):
        super().__init__()
        self.genes, self.longest = genes, longest
        self.embed = nn.Linear(feature_dim, width)
        self.position = nn.Linear(width // 4 * 4, width)
        self.blocks = nn.ModuleList(FullAttentionBlock(width, heads) for _ in range(layers))
        self.norm, self.readout = nn.LayerNorm(width), nn.Linear(width, genes)

    def forward(self, features, expression, t, graph):
        width = self.embed.out_features
        h = self.embed(features) + self.position(coordinate_embedding(graph.coordinates, width, self.longest))
        for block in self.blocks:
            h = block(h)
        return self.readout(self.norm(h))


class SpotMLP(nn.Module):
    """A per-spot regressor: features → expression through ``layers`` hidden layers of ``width`` (no neighbours)."""

    def __init__(self, feature_dim: int, genes: int, width: int = 128, layers: int = 2):
        super().__init__()
        self.genes = genes
        sizes = [feature_dim] + [width] * layers
        hidden = [m for a, b in zip(sizes, sizes[1:]) for m in (nn.Linear(a, b), nn.GELU())]
        self.net = nn.Sequential(*hidden, nn.Linear(sizes[-1], genes))

    def forward(self, features, expression, t, graph):
        return self.net(features)
