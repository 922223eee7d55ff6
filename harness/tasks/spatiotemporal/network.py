"""The backbone of ``spatiotemporal.crossdomain``: a small Graph WaveNet (Wu et al., IJCAI 2019), which every arm
trains (torch at import: the task imports this module inside its functions).

:class:`GraphWaveNet` maps a window of ``inputs`` steps on N sensors (the value and the time of day as sine and
cosine) to the next ``horizon`` values of every sensor. Its layers, as Graph WaveNet's: a 1 × 1 start convolution;
blocks of a gated dilated temporal convolution (tanh filter times sigmoid gate, kernel 2, dilations 1, 2, 4, ...)
followed (but in the last block) by a graph convolution over the fixed diffusion matrix and an adaptive adjacency softmax(relu(E₁E₂ᵀ))
learnt from two node embeddings, with dropout on the graph convolution's input (the dropout SynEVO's elastic
container sets per group), a residual connection and a skip connection; the summed skips through two 1 × 1
convolutions to the horizon. Every dropout of the network is one :class:`torch.nn.Dropout`, found by
:func:`set_dropout`.
"""
from __future__ import annotations

import torch
from torch import nn

FEATURES = 3  # the value, sin and cos of the time of day


class GraphWaveNet(nn.Module):
    """Channels-last throughout ((B, N, T, hidden) tensors, each 1 × k convolution a :class:`torch.nn.Linear` over
    the concatenated taps, the filter and the gate one linear map): the same function as Graph WaveNet's
    convolutions, about twice as fast on a CPU at this size."""

    def __init__(self, nodes: int, diffusion: torch.Tensor, inputs: int, horizon: int, hidden: int = 16,
                 blocks: int = 3, node_dim: int = 8):
        super().__init__()
        receptive = 2 ** blocks  # kernel 2, dilations 1, 2, ..., 2^(blocks-1): 2^blocks - 1 steps back
        if inputs < receptive:
            raise ValueError(f"GraphWaveNet: {inputs} input steps is fewer than the {receptive} that {blocks} "
                             "blocks of kernel 2 read")
        self.hidden = hidden
        self.register_buffer("diffusion", diffusion.float())
        self.start = nn.Linear(FEATURES, hidden)
        self.temporal = nn.ModuleList(nn.Linear(2 * hidden, 2 * hidden) for _ in range(blocks))  # filter and gate
        # the last block's output reaches the end through its skip only (as Graph WaveNet's): no graph convolution
        self.graph = nn.ModuleList(nn.Linear(3 * hidden, hidden) for _ in range(blocks - 1))
        self.skips = nn.ModuleList(nn.Linear(hidden, hidden) for _ in range(blocks))
        self.source_embedding = nn.Parameter(torch.randn(nodes, node_dim) / node_dim ** 0.5)
        self.target_embedding = nn.Parameter(torch.randn(nodes, node_dim) / node_dim ** 0.5)
        self.dropout = nn.Dropout(0.0)
        self.end = nn.Sequential(nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, horizon))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(B, inputs, N, FEATURES) → (B, horizon, N)."""
        h = self.start(x.transpose(1, 2))  # (B, N, T, hidden)
        batch, nodes = h.shape[:2]
        adaptive = torch.softmax(torch.relu(self.source_embedding @ self.target_embedding.T), dim=1)
        supports = torch.cat([self.diffusion, adaptive])  # (2N, N): both graphs in one product
        skip = None
        for block, (temporal, skip_linear) in enumerate(zip(self.temporal, self.skips)):
            dilation = 2 ** block
            residual = h
            filt, gate = temporal(torch.cat([h[:, :, :-dilation], h[:, :, dilation:]], dim=-1)).chunk(2, dim=-1)
            z = torch.tanh(filt) * torch.sigmoid(gate)  # (B, N, T - dilation, hidden)
            last = skip_linear(z[:, :, -1])
            skip = last if skip is None else skip + last
            if block == len(self.graph):
                break
            z = self.dropout(z)
            steps = z.shape[2]
            diffused = (supports @ z.reshape(batch, nodes, -1)).reshape(batch, 2, nodes, steps, self.hidden)
            mixed = torch.cat([z, diffused[:, 0], diffused[:, 1]], dim=-1)
            h = self.graph[block](mixed) + residual[:, :, -steps:]
        return self.end(skip).transpose(1, 2)  # (B, horizon, N)


def set_dropout(network: nn.Module, p: float) -> None:
    """Set the drop probability of every :class:`torch.nn.Dropout` of ``network`` (SynEVO's per-group p)."""
    if not 0 <= p < 1:
        raise ValueError(f"dropout p = {p}: expected a probability in [0, 1)")
    for module in network.modules():
        if isinstance(module, nn.Dropout):
            module.p = float(p)
