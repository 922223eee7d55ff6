"""Signed Laplacians for constrained graph clustering (Fabila Carrasco & Sun, ICML 2025): CC and CC++."""
from implementations.signed_laplacian._linalg import (
    LAPLACIANS,
    connected_components,
    graph_laplacian,
    laplacian_kernel_basis,
    one_vertex_per_component,
    smallest_eigenpair_on_complement,
    smallest_generalized_eigenpairs,
    vertex_function,
)
from implementations.signed_laplacian._method import SignedLaplacianClustering, cannot_link_operator

__all__ = [
    "LAPLACIANS",
    "SignedLaplacianClustering",
    "cannot_link_operator",
    "connected_components",
    "graph_laplacian",
    "laplacian_kernel_basis",
    "one_vertex_per_component",
    "smallest_eigenpair_on_complement",
    "smallest_generalized_eigenpairs",
    "vertex_function",
]
