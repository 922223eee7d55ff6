"""Baselines of ``np.regression``: the full-attention TNP, the pseudo-token TNP and the ConvCNP. Torch-free at import;
the networks are in ``baselines/neural_processes_torch.py``."""
from __future__ import annotations


class FullTNP:
    """TNP-D (Nguyen & Grover, 2022): context self-attention over all pairs, targets cross-attend to the context."""

    def __init__(self, dim: int = 64, heads: int = 4, ffn: int = 128, layers: int = 3):
        self.dim, self.heads, self.ffn, self.layers = dim, heads, ffn, layers

    def build(self, problem):
        from baselines.neural_processes_torch import FullTNP as Model

        return Model(problem.x_dim, problem.domain_width, self.dim, self.heads, self.ffn, self.layers)


class PseudoTokenTNP:
    """PT-TNP, Perceiver-style: ``latents`` learned pseudo-tokens read the context, self-attend, and are read by the
    targets, every layer."""

    def __init__(self, dim: int = 64, heads: int = 4, ffn: int = 128, layers: int = 3, latents: int = 64):
        self.dim, self.heads, self.ffn, self.layers, self.latents = dim, heads, ffn, layers, latents

    def build(self, problem):
        from baselines.neural_processes_torch import PseudoTokenTNP as Model

        return Model(problem.x_dim, problem.domain_width, self.dim, self.heads, self.ffn, self.layers, self.latents)


class ConvCNP:
    """ConvCNP (Gordon et al., 2020): SetConv onto a grid of nodes ``spacing`` apart over the task's fixed square, a
    residual CNN, SetConv to the targets."""

    def __init__(self, channels: int = 32, layers: int = 5, spacing: float = 0.25):
        self.channels, self.layers, self.spacing = channels, layers, spacing

    def build(self, problem):
        from baselines.neural_processes_torch import ConvCNP as Model
        from components.grids import nodes_per_side

        grid = nodes_per_side(problem.domain, self.spacing, 1, type(self).__name__)
        return Model(problem.x_dim, problem.domain, self.channels, self.layers, grid)
