"""Signed Laplacians for constrained graph clustering (Fabila Carrasco & Sun, ICML 2025): CC and CC++.

The Laplacians and eigensolvers it shares with the spectral baselines are in
:mod:`components.laplacians`.
"""
from implementations.signed_laplacian._method import SignedLaplacianClustering, cannot_link_operator

__all__ = ["SignedLaplacianClustering", "cannot_link_operator"]
