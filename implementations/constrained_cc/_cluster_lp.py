"""The Constrained Cluster LP (Kalavas, Kipouridis & Varma, ICML 2025, Section 3), solved exactly
over every feasible cluster: what the paper's algorithm is guided by."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from components.correlation_clustering import FeasibleClusters, feasible_clusters, lp_parts
from harness.tasks.graph.correlation_clustering import CCInstance


@dataclass(frozen=True)
class ClusterLPSolution:
    """A solution of the Constrained Cluster LP restricted to its support.

    ``members`` (m, n) are the clusters with z_S > ``support_tol``, ``z`` their values,
    ``x`` the (n, n) distances x_uv = 1 − Σ_{S ⊇ uv} z_S, ``value`` the LP objective
    Σ_{E⁺} x + Σ_{E⁻} (1 − x) of this z.
    """

    members: np.ndarray
    z: np.ndarray
    x: np.ndarray
    value: float


def lp_distances(n: int, members: np.ndarray, z: np.ndarray) -> np.ndarray:
    """x_uv = 1 − Σ_{S ⊇ {u, v}} z_S, with a zero diagonal."""
    m = members.astype(np.float64)
    x = 1.0 - (m.T * z) @ m
    np.fill_diagonal(x, 0.0)
    return x


def solve_cluster_lp(instance: CCInstance, clusters: FeasibleClusters | None = None,
                     support_tol: float = 1e-9) -> ClusterLPSolution:
    """Solve the Constrained Cluster LP exactly over all feasible clusters (HiGHS).

    x is eliminated through x_uv = 1 − Σ_{S ⊇ uv} z_S, which leaves min Σ_S weight(S) z_S
    subject to Σ_{S ∋ u} z_S = 1. One row per F-component stands for the rows of its nodes,
    which are identical because a feasible S holds a component whole; x = 0 on F and x = 1
    on H then hold by construction.
    """
    from scipy.optimize import linprog

    clusters = feasible_clusters(instance) if clusters is None else clusters
    result = linprog(clusters.weight, A_eq=clusters.units.T.astype(np.float64),
                     b_eq=np.ones(clusters.units.shape[1]), bounds=(0, None), method="highs")
    if result.status != 0:
        raise RuntimeError(f"Constrained Cluster LP failed: {result.message}")
    z = np.asarray(result.x)
    support = z > support_tol
    members, z = clusters.members[support], z[support]
    x = lp_distances(instance.n, members, z)
    plus, minus = lp_parts(instance, x)
    return ClusterLPSolution(members, z, x, plus + minus)
