"""The gridded transformer neural process (Ashman et al., ICML 2025) in torch: pseudo-token grid encoder, Swin
processor, k-nearest-neighbour cross-attention decoder; with ``equivariant=True`` the translation-equivariant
form (Swin-TETNP), whose tokens carry only y and whose attention logits get a per-head kernel of the relative
position. Imports torch at module level: only :meth:`GriddedTNP.build` imports it.
"""
from __future__ import annotations

import torch
from torch import nn

from components.neural_process_torch import (CrossAttentionBlock, FourierEmbedding, SelfAttentionBlock, gaussian_head,
                                             grid_nodes, mlp, nearest_node, square_centre, tokens_xy)


class RelativeKernel(nn.Module):
    """Δx (…, dx) → a logit bias per head (…, heads): the TE models' attention kernel, an MLP of x_q − x_k."""

    def __init__(self, x_dim: int, heads: int, hidden: int = 32):
        super().__init__()
        self.net = mlp(x_dim, hidden, heads)

    def forward(self, delta):
        return self.net(delta)


class PseudoTokenGridEncoder(nn.Module):
    """PT-GE: every context point goes to its nearest grid node; node g's token u_g cross-attends to
    {u_g} ∪ {the tokens of its points}, padded to the fullest node (cost O(M · p_max), linear in Nc)."""

    def __init__(self, dim: int, heads: int, ffn: int, nodes: int, x_dim: int, equivariant: bool):
        super().__init__()
        # a token per node would tell nodes apart by position: the TE form shares one among all of them
        self.initial = nn.Parameter(torch.randn(1 if equivariant else nodes, dim) * 0.02)
        self.block = CrossAttentionBlock(dim, heads, ffn)
        self.kernel = RelativeKernel(x_dim, heads) if equivariant else None

    def forward(self, grid_tokens, grid_x, tokens, x, node):
        """grid_tokens (B, M, D) extra to ``initial``, grid_x (B, M, dx), tokens (B, N, D), x (B, N, dx), node (B, N)."""
        b, m, d = grid_tokens.shape
        n = tokens.shape[1]
        flat = (node + torch.arange(b, device=node.device)[:, None] * m).reshape(-1)
        order = torch.argsort(flat, stable=True)
        sorted_flat = flat[order]
        counts = torch.bincount(flat, minlength=b * m)
        p_max = int(counts.max())
        starts = torch.cumsum(counts, 0) - counts
        rank = torch.arange(b * n, device=node.device) - starts[sorted_flat]
        slots = tokens.new_zeros(b * m, p_max, d)
        slots[sorted_flat, rank] = tokens.reshape(b * n, d)[order]
        valid = torch.zeros(b * m, p_max, dtype=torch.bool, device=node.device)
        valid[sorted_flat, rank] = True
        query = (grid_tokens + self.initial).reshape(b * m, 1, d)
        keys = torch.cat([query, slots], 1)
        mask = torch.cat([valid.new_ones(b * m, 1), valid], 1)
        bias = None
        if self.kernel is not None:
            offsets = x.new_zeros(b * m, p_max, x.shape[-1])
            offsets[sorted_flat, rank] = (grid_x.reshape(b * m, -1)[sorted_flat] - x.reshape(b * n, -1)[order])
            logits = self.kernel(torch.cat([offsets.new_zeros(b * m, 1, x.shape[-1]), offsets], 1))  # (BM, 1+p, H)
            bias = logits.transpose(1, 2)[:, :, None, :]  # (BM, H, 1, 1+p)
        return self.block(query, keys, bias, mask).reshape(b, m, d)


def _shift_mask(size: int, window: int, shift: int):
    """Swin's mask for shifted windows: a token attends only to tokens of its own region of the unrolled grid.
    (windows, w², w²) booleans."""
    region = torch.zeros(size, size, dtype=torch.long)
    bounds = (slice(0, size - window), slice(size - window, size - shift), slice(size - shift, size))
    label = 0
    for rows in bounds:
        for cols in bounds:
            region[rows, cols] = label
            label += 1
    windows = _partition(region[None, :, :, None], window)[0, ..., 0]  # (nW, w²)
    return windows[:, :, None] == windows[:, None, :]


def _partition(x, window: int):
    """(B, G, G, D) → (B, nW, w², D): non-overlapping w × w windows."""
    b, g, _, d = x.shape
    n = g // window
    return x.reshape(b, n, window, n, window, d).permute(0, 1, 3, 2, 4, 5).reshape(b, n * n, window * window, d)


def _merge(x, size: int, window: int):
    b, _, _, d = x.shape
    n = size // window
    return x.reshape(b, n, n, window, window, d).permute(0, 1, 3, 2, 4, 5).reshape(b, size, size, d)


class SwinLayer(nn.Module):
    """One processor layer: the same MHSA block on w × w windows, then on windows shifted by ``shift`` (masked)."""

    def __init__(self, dim: int, heads: int, ffn: int, size: int, window: int, shift: int, step: float,
                 x_dim: int, equivariant: bool):
        super().__init__()
        self.size, self.window, self.shift = size, window, shift
        self.block = SelfAttentionBlock(dim, heads, ffn)
        self.register_buffer("shift_mask", _shift_mask(size, window, shift)[:, None], persistent=False)
        offsets = torch.stack(torch.meshgrid(torch.arange(window), torch.arange(window), indexing="ij"), -1)
        offsets = offsets.reshape(-1, 2).float() * step
        self.register_buffer("window_delta", offsets[:, None, :] - offsets[None, :, :], persistent=False)
        self.kernel = RelativeKernel(x_dim, heads) if equivariant else None

    def forward(self, grid):  # (B, G, G, D)
        bias = None
        if self.kernel is not None:
            bias = self.kernel(self.window_delta.to(grid.dtype)).permute(2, 0, 1)  # (H, w², w²)
        windows = self.block(_partition(grid, self.window), bias)
        grid = _merge(windows, self.size, self.window)
        rolled = torch.roll(grid, (-self.shift, -self.shift), (1, 2))
        shifted_bias = torch.zeros(self.shift_mask.shape, dtype=grid.dtype, device=grid.device).masked_fill(
            ~self.shift_mask, float("-inf"))
        if bias is not None:
            shifted_bias = shifted_bias + bias
        windows = self.block(_partition(rolled, self.window), shifted_bias)
        return torch.roll(_merge(windows, self.size, self.window), (self.shift, self.shift), (1, 2))


class GriddedTNP(nn.Module):
    """Tokens → PT-GE onto a G × G grid → ``layers`` × (Swin layer, then every target cross-attends to its k nearest
    grid tokens) → Gaussian head on the target tokens."""

    def __init__(self, x_dim: int, domain_width: float, domain: tuple[float, float], dim: int, heads: int, ffn: int,
                 layers: int, grid: int, window: int, shift: int, neighbours: int, equivariant: bool):
        super().__init__()
        if grid % window:
            raise ValueError(f"the Swin window {window} does not divide the grid of {grid} nodes per side")
        if x_dim != 2:
            raise ValueError(f"the gridded TNP here is built for 2-D inputs (got {x_dim}-D)")
        self.grid, self.domain, self.neighbours, self.equivariant = grid, tuple(domain), neighbours, equivariant
        self.width = float(domain[1] - domain[0])  # the grid's: domain_width (the training square's) sets the embedding
        if equivariant:
            self.context_encoder = mlp(1, dim, dim)
            self.target_token = nn.Parameter(torch.randn(dim) * 0.02)
            self.decoder_kernels = nn.ModuleList(RelativeKernel(x_dim, heads) for _ in range(layers))
        else:
            self.embedding = FourierEmbedding(x_dim, dim, domain_width)
            self.token_encoder = mlp(dim + 2, dim, dim)
            self.grid_position = nn.Linear(dim, dim)
        self.encoder = PseudoTokenGridEncoder(dim, heads, ffn, grid * grid, x_dim, equivariant)
        step = self.width / grid
        self.processor = nn.ModuleList(SwinLayer(dim, heads, ffn, grid, window, shift, step, x_dim, equivariant)
                                       for _ in range(layers))
        self.decoder = nn.ModuleList(CrossAttentionBlock(dim, heads, ffn) for _ in range(layers))
        self.head = mlp(dim, dim, 2)

    def forward(self, xc, yc, xt):
        b, nt = xt.shape[:2]
        centre = square_centre(self.domain, xc)
        grid_x = grid_nodes(centre, self.grid, self.width)  # (B, M, 2)
        if self.equivariant:
            context = self.context_encoder(yc)
            target = self.target_token.expand(b, nt, -1)
            grid_extra = grid_x.new_zeros(b, grid_x.shape[1], context.shape[-1])
        else:
            context = tokens_xy(self.embedding, self.token_encoder, xc, yc)
            target = tokens_xy(self.embedding, self.token_encoder, xt)
            grid_extra = self.grid_position(self.embedding(grid_x))
        tokens = self.encoder(grid_extra, grid_x, context, xc, nearest_node(xc, centre, self.grid, self.width))
        neighbours = torch.cdist(xt, grid_x, compute_mode="donot_use_mm_for_euclid_dist").topk(self.neighbours, largest=False).indices  # (B, Nt, k)
        rows = torch.arange(b, device=xt.device)[:, None, None]
        delta = xt[:, :, None, :] - grid_x[rows, neighbours]  # (B, Nt, k, 2)
        for i, (layer, decode) in enumerate(zip(self.processor, self.decoder)):
            tokens = layer(tokens.reshape(b, self.grid, self.grid, -1)).reshape(b, self.grid * self.grid, -1)
            bias = self.decoder_kernels[i](delta).permute(0, 1, 3, 2)[:, :, :, None, :] if self.equivariant else None
            target = decode(target[:, :, None, :], tokens, bias, gather=(rows, neighbours))[:, :, 0, :]
        return gaussian_head(self.head(target))
