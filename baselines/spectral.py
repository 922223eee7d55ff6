"""Spectral baselines for ``graph.constrained-clustering``: plain SC and Cucuringu et al. (2016).

Both use the same Laplacians and eigensolvers (:mod:`components.laplacians`) and the same
rounding (the task's) as the paper's method, so the comparison differs only in the eigenproblem.
"""
from __future__ import annotations

import numpy as np

from components.laplacians import (
    graph_laplacian,
    smallest_eigenpair_on_complement,
    smallest_generalized_eigenpairs,
    vertex_function,
)
from harness.tasks.graph.constrained_clustering import DEFAULT_MIN_SIDE_FRACTION, DEFAULT_ROUNDING, round_bipartition


def _require_two(n_clusters: int, method: str) -> None:
    if n_clusters != 2:
        raise ValueError(f"n_clusters={n_clusters}: {method} splits in two only")


class SpectralClustering:
    """Unconstrained spectral clustering: the Fiedler vector of G's normalised Laplacian.

    The eigenvector f of the second smallest eigenvalue of I − D^{-1/2} A D^{-1/2}, read as
    the vertex function D^{-1/2} f (Shi–Malik), is rounded by the task's shared rule. The
    cannot-link graph H is used only by the ``sweep`` rule to score threshold cuts, exactly
    as for the other methods.
    """

    def __init__(self, rounding: str = DEFAULT_ROUNDING, min_side_fraction: float = DEFAULT_MIN_SIDE_FRACTION):
        self.rounding = rounding
        self.min_side_fraction = min_side_fraction

    def embed(self, similarity, cannot_link, rng: np.random.Generator) -> np.ndarray:
        laplacian_g = graph_laplacian(similarity, "normalized")
        values, vectors = smallest_generalized_eigenpairs(laplacian_g, None, count=2)
        self.eigenvalue_, self.embedding_ = float(values[1]), vectors[:, 1]
        return vertex_function(self.embedding_, similarity)

    def fit_predict(self, similarity, cannot_link, n_clusters: int, rng: np.random.Generator) -> np.ndarray:
        _require_two(n_clusters, "SpectralClustering")
        vector = self.embed(similarity, cannot_link, rng)
        return round_bipartition(vector, similarity, cannot_link, self.rounding, self.min_side_fraction)


class CucuringuConstrainedSpectral:
    """Cucuringu, Koutis, Chawla, Miller & Peng (AISTATS 2016): L_G x = λ (L_H + (μ/n) L_K) x.

    L_G, L_H are combinatorial Laplacians and K is the complete "demand" graph, whose
    Laplacian n I − 11ᵀ makes the right-hand side definite on 1^⊥ even when H is
    disconnected. The problem is solved on 1^⊥ (the common kernel) and the eigenvector of
    the smallest eigenvalue is rounded by the task's shared rule.
    """

    def __init__(
        self, mu: float = 1.0, rounding: str = DEFAULT_ROUNDING, min_side_fraction: float = DEFAULT_MIN_SIDE_FRACTION
    ):
        self.mu = mu
        self.rounding = rounding
        self.min_side_fraction = min_side_fraction

    def embed(self, similarity, cannot_link, rng: np.random.Generator) -> np.ndarray:
        if self.mu < 0:
            raise ValueError(f"mu={self.mu}: the demand graph's weight must be non-negative")
        laplacian_g = graph_laplacian(similarity, "combinatorial")
        n = laplacian_g.shape[0]
        demand = (self.mu / n) * (n * np.eye(n) - np.ones((n, n)))
        right = graph_laplacian(cannot_link, "combinatorial") + demand
        constant = np.full((n, 1), 1.0 / np.sqrt(n))
        self.eigenvalue_, self.embedding_ = smallest_eigenpair_on_complement(laplacian_g, right, constant)
        return self.embedding_

    def fit_predict(self, similarity, cannot_link, n_clusters: int, rng: np.random.Generator) -> np.ndarray:
        _require_two(n_clusters, "CucuringuConstrainedSpectral")
        vector = self.embed(similarity, cannot_link, rng)
        return round_bipartition(vector, similarity, cannot_link, self.rounding, self.min_side_fraction)
