"""The gridded TNP and its translation-equivariant form as methods of ``np.regression``."""
from __future__ import annotations


class GriddedTNP:
    """Swin-TNP with the pseudo-token grid encoder and the k-nearest-neighbour decoder (Ashman et al., ICML 2025).
    A grid of nodes ``spacing`` apart over the task's fixed square (``ProblemShape.domain``); ``window`` × ``window``
    Swin windows shifted by ``shift``; every target reads its ``neighbours`` nearest grid tokens after each layer."""

    equivariant = False

    def __init__(self, dim: int = 64, heads: int = 4, ffn: int = 128, layers: int = 3, spacing: float = 0.25,
                 window: int = 4, shift: int = 2, neighbours: int = 9):
        self.dim, self.heads, self.ffn, self.layers = dim, heads, ffn, layers
        self.spacing, self.window, self.shift, self.neighbours = spacing, window, shift, neighbours

    def build(self, problem):
        from components.grids import nodes_per_side
        from implementations.gridded_tnp._model import GriddedTNP as Model

        grid = nodes_per_side(problem.domain, self.spacing, self.window, type(self).__name__)
        return Model(problem.x_dim, problem.domain_width, problem.domain, self.dim, self.heads, self.ffn, self.layers,
                     grid, self.window, self.shift, self.neighbours, self.equivariant)


class GriddedTETNP(GriddedTNP):
    """Swin-TETNP: the same architecture with tokens of y alone and a relative-position kernel on every attention's
    logits (grid encoder, processor windows, decoder): translation equivariant."""

    equivariant = True
