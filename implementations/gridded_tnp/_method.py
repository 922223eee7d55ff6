"""The gridded TNP and its translation-equivariant form as methods of ``np.regression``."""
from __future__ import annotations


class GriddedTNP:
    """Swin-TNP with the pseudo-token grid encoder and the k-nearest-neighbour decoder (Ashman et al., ICML 2025).

    ``grid`` nodes per side over a square of the training domain's width centred on each task; ``window`` × ``window``
    Swin windows shifted by ``shift``; every target reads its ``neighbours`` nearest grid tokens after each layer."""

    equivariant = False

    def __init__(self, dim: int = 64, heads: int = 4, ffn: int = 128, layers: int = 3, grid: int = 16, window: int = 4,
                 shift: int = 2, neighbours: int = 9):
        self.dim, self.heads, self.ffn, self.layers = dim, heads, ffn, layers
        self.grid, self.window, self.shift, self.neighbours = grid, window, shift, neighbours

    def build(self, problem):
        from implementations.gridded_tnp._model import GriddedTNP as Model

        return Model(problem.x_dim, problem.domain_width, self.dim, self.heads, self.ffn, self.layers, self.grid,
                     self.window, self.shift, self.neighbours, self.equivariant)


class GriddedTETNP(GriddedTNP):
    """Swin-TETNP: the same architecture with tokens of y alone and a relative-position kernel on every attention's
    logits (grid encoder, processor windows, decoder): translation equivariant."""

    equivariant = True
