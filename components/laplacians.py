"""Graph Laplacians and the small dense generalised eigensolvers of the spectral methods.

Shared by the signed-Laplacian method (:mod:`implementations.signed_laplacian`) and its
spectral baselines (:mod:`baselines.spectral`), so that they differ only in the eigenproblem.
Dense LAPACK (``scipy.linalg.eigh`` with a subset of indices) is used throughout: at the
task's sizes (n ≤ 1000, and SBM graphs that are 15-20 % dense) it beats sparse Lanczos with
shift-invert, whose factorisation fills in, and it gives every method the same solver, so
runtimes compare eigenproblems rather than solvers.
"""
from __future__ import annotations

import numpy as np

__all__ = [
    "LAPLACIANS",
    "connected_components",
    "degree_equalised_laplacians",
    "graph_laplacian",
    "laplacian_kernel_basis",
    "one_vertex_per_component",
    "smallest_eigenpair_on_complement",
    "smallest_generalized_eigenpairs",
    "vertex_function",
]

LAPLACIANS = ("normalized", "combinatorial")


def _dense_symmetric(adjacency) -> np.ndarray:
    matrix = adjacency.toarray() if hasattr(adjacency, "toarray") else np.asarray(adjacency, dtype=float)
    matrix = np.asarray(matrix, dtype=float)
    if matrix.ndim != 2 or matrix.shape[0] != matrix.shape[1]:
        raise ValueError(f"an adjacency matrix must be square; got shape {matrix.shape}")
    if (matrix < 0).any():
        raise ValueError("an adjacency matrix must have non-negative weights")
    if not np.allclose(matrix, matrix.T):
        raise ValueError("an adjacency matrix must be symmetric")
    np.fill_diagonal(matrix, 0.0)  # the task's graphs have no self-loops; any given are ignored
    return matrix


def graph_laplacian(adjacency, kind: str = "normalized") -> np.ndarray:
    """Dense Laplacian of a graph: ``combinatorial`` D − A or ``normalized`` I − D^{-1/2} A D^{-1/2}.

    An isolated vertex gets a zero row and column in both kinds, so that its indicator lies
    in the kernel like that of any other connected component.
    """
    if kind not in LAPLACIANS:
        raise ValueError(f"laplacian={kind!r} is unknown; expected one of {LAPLACIANS}")
    weights = _dense_symmetric(adjacency)
    degree = weights.sum(axis=1)
    if kind == "combinatorial":
        return np.diag(degree) - weights
    scale = np.zeros_like(degree)
    scale[degree > 0] = 1.0 / np.sqrt(degree[degree > 0])
    return np.diag((degree > 0).astype(float)) - scale[:, None] * weights * scale[None, :]


def degree_equalised_laplacians(similarity, cannot_link) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """Δ_G and Δ_H after the paper's preprocessing (Fabila Carrasco & Sun, Section 3): (Δ_G, Δ_H, degree, c0).

    G is scaled by c0 = min_v deg_H(v) / deg_G(v), so that deg_G ≤ deg_H, and every vertex gets
    a self-loop that raises its G-degree to deg_H (here a loop of weight w adds w to the degree
    and nothing to the quadratic form; the paper's loop of weight w/2 counted twice is the same
    graph). Both graphs then have the degrees D = deg_H, and both Laplacians are normalised by
    that one D: Δ_G = I − D^{-1/2}(c0 A_G + loops)D^{-1/2} = D^{-1/2} c0 L_G D^{-1/2} and
    Δ_H = I − D^{-1/2} A_H D^{-1/2}, H's own normalised Laplacian. The pencil (Δ_G, Δ_H) is
    the combinatorial pencil (c0 L_G, L_H) in the coordinates y = D^{1/2} x.

    Every vertex needs a cannot-link edge: with deg_H(v) = 0 the equal degrees would force G's
    edges at v to weight 0 (c0 = 0), and the preprocessing is undefined.
    """
    g, h = _dense_symmetric(similarity), _dense_symmetric(cannot_link)
    degree_g, degree = g.sum(axis=1), h.sum(axis=1)
    if (degree <= 0).any():
        isolated = np.flatnonzero(degree <= 0)
        raise ValueError(f"{isolated.size} vertex(es) (e.g. {isolated[0]}) have no cannot-link edge: degree "
                         "equalisation scales G by min deg_H / deg_G = 0 there; use the normalised operator")
    has_g = degree_g > 0
    c0 = float(np.min(degree[has_g] / degree_g[has_g])) if has_g.any() else 1.0
    loops = degree - c0 * degree_g  # ≥ 0 by the choice of c0
    scale = 1.0 / np.sqrt(degree)
    delta_g = np.eye(len(g)) - scale[:, None] * (c0 * g + np.diag(loops)) * scale[None, :]
    delta_h = np.eye(len(h)) - scale[:, None] * h * scale[None, :]
    return delta_g, delta_h, degree, c0


def vertex_function(vector: np.ndarray, adjacency) -> np.ndarray:
    """y = D^{-1/2} f: the per-vertex values behind an eigenvector f of a normalised Laplacian.

    fᵀ(I − D^{-1/2} A D^{-1/2})f = Σ_{uv} A_uv (y_u − y_v)², so threshold cuts of y are the
    ones the quadratic form scores (the Cheeger sweep is over y), and y is constant on each
    connected component where f is a kernel vector. Isolated vertices keep their value.
    """
    import scipy.sparse as sp

    degree = np.asarray(sp.csr_matrix(adjacency).sum(axis=1)).ravel()
    return vector / np.sqrt(np.where(degree > 0, degree, 1.0))


def connected_components(adjacency) -> np.ndarray:
    """Component label of every vertex (isolated vertices are components of their own)."""
    import scipy.sparse as sp
    from scipy.sparse.csgraph import connected_components as components

    _, labels = components(sp.csr_matrix(adjacency), directed=False)
    return labels


def laplacian_kernel_basis(adjacency, kind: str = "normalized") -> np.ndarray:
    """Orthonormal basis (n × components) of the kernel of :func:`graph_laplacian`.

    One column per connected component C: D^{1/2} 1_C (normalised) or 1_C (combinatorial),
    or the vertex's indicator for an isolated vertex.
    """
    import scipy.sparse as sp

    components = connected_components(adjacency)
    degree = np.asarray(sp.csr_matrix(adjacency).sum(axis=1)).ravel()
    basis = np.zeros((degree.shape[0], components.max() + 1))
    weight = np.sqrt(degree) if kind == "normalized" else np.ones_like(degree)
    weight = np.where(degree > 0, weight, 1.0)
    basis[np.arange(degree.shape[0]), components] = weight
    return basis / np.linalg.norm(basis, axis=0)


def one_vertex_per_component(adjacency, rng: np.random.Generator) -> np.ndarray:
    """A uniformly random vertex of every connected component (where CC++ puts its loops)."""
    components = connected_components(adjacency)
    return np.array([rng.choice(np.flatnonzero(components == c)) for c in range(components.max() + 1)])


def smallest_generalized_eigenpairs(a: np.ndarray, b: np.ndarray | None, count: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``count`` smallest eigenpairs of a x = λ b x (a symmetric, b symmetric positive definite).

    ``b=None`` is the ordinary problem a x = λ x.
    """
    from scipy.linalg import eigh

    values, vectors = eigh(a, b, subset_by_index=[0, count - 1], check_finite=False)
    return values, vectors


def smallest_eigenpair_on_complement(a: np.ndarray, b: np.ndarray, excluded: np.ndarray) -> tuple[float, np.ndarray]:
    """Least λ and its x for a x = λ b x restricted to x ⊥ columns of ``excluded``.

    Builds an orthonormal basis Q of the complement (the trailing columns of a full QR of
    ``excluded``), solves Qᵀ a Q y = λ Qᵀ b Q y, and returns x = Q y. ``b`` need only be
    definite on the complement.
    """
    from scipy.linalg import qr

    full_q, _ = qr(excluded, mode="full")
    complement = full_q[:, excluded.shape[1] :]
    values, vectors = smallest_generalized_eigenpairs(
        complement.T @ a @ complement, complement.T @ b @ complement, count=1
    )
    return float(values[0]), complement @ vectors[:, 0]
