"""Gridded TNP: Ashman, Diaconu, Langezaal, Weller & Turner, "Gridded Transformer Neural Processes for
Spatio-Temporal Data" (ICML 2025).

Unstructured context points are encoded onto a grid of pseudo-tokens (each node cross-attends to the points nearest
to it), the grid is processed by Swin-style windowed attention, and each target cross-attends to its k nearest grid
tokens after every layer, so inference costs O(Nc + M·w² + Nt·k) instead of a full TNP's O(Nc² + Nc·Nt):

* :class:`GriddedTNP`: the non-equivariant model (Fourier features of the absolute position in every token);
* :class:`GriddedTETNP`: the translation-equivariant form (positions only through relative-position kernels).

Torch-free at import; the networks are in ``_model.py``.
"""
from implementations.gridded_tnp._method import GriddedTETNP, GriddedTNP

__all__ = ["GriddedTETNP", "GriddedTNP"]
