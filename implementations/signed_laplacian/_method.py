"""CC and CC++ (Fabila Carrasco & Sun, ICML 2025, Algorithm 1) as a task method."""
from __future__ import annotations

import numpy as np

from components.laplacians import (
    LAPLACIANS,
    degree_equalised_laplacians,
    graph_laplacian,
    laplacian_kernel_basis,
    one_vertex_per_component,
    smallest_eigenpair_on_complement,
    smallest_generalized_eigenpairs,
    vertex_function,
)
from harness.tasks.graph.constrained_clustering import DEFAULT_MIN_SIDE_FRACTION, DEFAULT_ROUNDING, round_bipartition

DEGREE_EQUALISED = "degree-equalised"
OPERATORS = (*LAPLACIANS, DEGREE_EQUALISED)


def cannot_link_operator(cannot_link, kind: str, epsilon: float, loop_vertices: np.ndarray) -> np.ndarray:
    """L_H' = L_H + ε Σ_v e_v e_vᵀ: H's Laplacian with a negative self-loop at each given vertex.

    With one loop in every connected component of H the result is positive definite
    (Lemma 3.4: its least eigenvalue is positive and at most λ2 of L_H).
    """
    operator = graph_laplacian(cannot_link, kind)
    operator[loop_vertices, loop_vertices] += epsilon
    return operator


class SignedLaplacianClustering:
    """Two-way constrained clustering from the generalised eigenproblem L_G f = λ L_H' f.

    Parameters
    ----------
    epsilon : float
        Weight ε of the negative self-loop(s) of CC++. Ignored when ``self_loop`` is False.
    self_loop : bool
        True: CC++, L_H' = L_H + ε e_v0 e_v0ᵀ with v0 drawn from ``rng`` (one loop per
        connected component of H), which makes L_H' positive definite; the eigenvector of the
        second smallest eigenvalue is used (the smallest, 0, belongs to G's kernel; if G is
        disconnected the second is 0 too and gives a component split, whose ratio is 0).
        False: CC, the problem restricted to f ⊥ ker(L_H) through an orthonormal basis of
        that complement, and the eigenvector of its smallest eigenvalue.
    laplacian : {"normalized", "degree-equalised", "combinatorial"}
        ``normalized``: each graph's own symmetric normalised Laplacian I − D^{-1/2} A D^{-1/2},
        G by G's degrees and H by H's (the per-graph operator, which the paper's SBM figure
        needs). ``degree-equalised``: Algorithm 1 as written: G scaled by c0 and given
        self-loops so that deg_G = deg_H, then both normalised by that one degree
        (:func:`components.laplacians.degree_equalised_laplacians`); the loop ε is added on that
        normalised scale, as for ``normalized``. ``combinatorial``: D − A for both, unscaled.
    rounding, min_side_fraction
        The task's shared rounding (:func:`harness.tasks.graph.constrained_clustering.round_bipartition`).

    Attributes
    ----------
    eigenvalue_, embedding_ : the eigenvalue and eigenvector that were rounded.
    loop_vertices_ : the vertices that got a loop (empty for CC).
    """

    def __init__(
        self,
        epsilon: float = 1e-2,
        self_loop: bool = True,
        laplacian: str = "normalized",
        rounding: str = DEFAULT_ROUNDING,
        min_side_fraction: float = DEFAULT_MIN_SIDE_FRACTION,
    ):
        self.epsilon = epsilon
        self.self_loop = self_loop
        self.laplacian = laplacian
        self.rounding = rounding
        self.min_side_fraction = min_side_fraction

    def embed(self, similarity, cannot_link, rng: np.random.Generator) -> np.ndarray:
        """The vector to round; also sets ``eigenvalue_``, ``embedding_`` (the eigenvector), ``loop_vertices_``.

        For the normalised operator this is D_G^{-1/2} f (see :func:`vertex_function`), for the
        degree-equalised one D_H^{-1/2} f (its one degree is H's), for the combinatorial one f.
        """
        if self.laplacian not in OPERATORS:
            raise ValueError(f"laplacian={self.laplacian!r} is unknown; expected one of {OPERATORS}")
        if self.self_loop and not self.epsilon > 0:
            raise ValueError(f"epsilon={self.epsilon}: the CC++ loop weight must be positive")
        # Δ_H of the equalised pencil is H's own normalised Laplacian: the same kernel and loop scale
        h_kind = "combinatorial" if self.laplacian == "combinatorial" else "normalized"
        if self.laplacian == DEGREE_EQUALISED:
            laplacian_g, _, degree, _ = degree_equalised_laplacians(similarity, cannot_link)
        else:
            laplacian_g = graph_laplacian(similarity, self.laplacian)
        if self.self_loop:
            self.loop_vertices_ = one_vertex_per_component(cannot_link, rng)
            operator_h = cannot_link_operator(cannot_link, h_kind, self.epsilon, self.loop_vertices_)
            values, vectors = smallest_generalized_eigenpairs(laplacian_g, operator_h, count=2)
            self.eigenvalue_, self.embedding_ = float(values[1]), vectors[:, 1]
        else:
            self.loop_vertices_ = np.array([], dtype=int)
            kernel_h = laplacian_kernel_basis(cannot_link, h_kind)
            if kernel_h.shape[1] >= laplacian_g.shape[0] - 1:
                raise ValueError("CC needs a cannot-link graph with an edge: ker(L_H) leaves no room for a cut")
            laplacian_h = graph_laplacian(cannot_link, h_kind)
            self.eigenvalue_, self.embedding_ = smallest_eigenpair_on_complement(laplacian_g, laplacian_h, kernel_h)
        if self.laplacian == "normalized":
            return vertex_function(self.embedding_, similarity)
        if self.laplacian == DEGREE_EQUALISED:
            return self.embedding_ / np.sqrt(degree)  # x = D^{-1/2} y, D the equalised (H's) degree
        return self.embedding_

    def fit_predict(self, similarity, cannot_link, n_clusters: int, rng: np.random.Generator) -> np.ndarray:
        if n_clusters != 2:
            raise ValueError(f"n_clusters={n_clusters}: SignedLaplacianClustering splits in two only")
        vector = self.embed(similarity, cannot_link, rng)
        return round_bipartition(vector, similarity, cannot_link, self.rounding, self.min_side_fraction)
