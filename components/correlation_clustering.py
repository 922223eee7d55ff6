"""Constrained correlation clustering pieces shared by the paper's method and its baselines.

The enumeration of feasible clusters (the Constrained Cluster LP of
:mod:`implementations.constrained_cc` and the exact cluster ILP of
:mod:`baselines.correlation_clustering` are both over it) and the LP objective of a distance
matrix (both LPs and van Zuylen–Williamson's triangle LP report it). The task
(:mod:`harness.tasks.graph.correlation_clustering`) scores with its own solvers, never these.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from harness.tasks.graph.correlation_clustering import CCInstance, check_consistent

__all__ = ["MAX_FREE_UNITS", "FeasibleClusters", "feasible_clusters", "lp_parts"]

# Beyond this many F-components the 2^k cluster enumeration is not a sensible exact method.
MAX_FREE_UNITS = 20


@dataclass(frozen=True)
class FeasibleClusters:
    """Every feasible cluster: a non-empty union of F-components with no H pair inside.

    ``members`` is (m, n) boolean, ``units`` is (m, k) boolean over the F-components, and
    ``weight[i]`` = |E⁻ inside S_i| − |E⁺ inside S_i|, so that the cost of a clustering made
    of clusters S is |E⁺| + Σ weight(S).
    """

    members: np.ndarray
    units: np.ndarray
    weight: np.ndarray
    components: np.ndarray
    plus_pairs: int

    @property
    def count(self) -> int:
        return int(self.members.shape[0])


def feasible_clusters(instance: CCInstance) -> FeasibleClusters:
    """Enumerate all feasible clusters (2^k − 1 candidates over the k F-components)."""
    components = check_consistent(instance)
    k = int(components.max()) + 1
    if k > MAX_FREE_UNITS:
        raise ValueError(f"{k} F-components: enumerating 2^{k} clusters is too large for an exact method "
                         f"(at most {MAX_FREE_UNITS}); use a smaller n or more must-link pairs")
    codes = np.arange(1, 2**k, dtype=np.int64)
    units = ((codes[:, None] >> np.arange(k)) & 1).astype(bool)
    unit_nodes = components[None, :] == np.arange(k)[:, None]  # (k, n)
    members = (units.astype(np.int32) @ unit_nodes.astype(np.int32)) > 0
    keep = np.ones(len(codes), dtype=bool)
    for u, v in instance.hostile:
        keep &= ~(members[:, u] & members[:, v])
    members, units = members[keep], units[keep]
    signs = instance.signs.astype(np.float64)
    m = members.astype(np.float64)
    inside_sum = 0.5 * np.einsum("si,ij,sj->s", m, signs, m)  # |E⁺ inside| − |E⁻ inside|
    plus_pairs = int((np.triu(instance.signs, k=1) > 0).sum())
    return FeasibleClusters(members, units, -inside_sum, components, plus_pairs)


def lp_parts(instance: CCInstance, x: np.ndarray) -> tuple[float, float]:
    """(LP⁺, LP⁻) = (Σ_{uv ∈ E⁺} x_uv, Σ_{uv ∈ E⁻} (1 − x_uv)) over unordered pairs."""
    upper = np.triu(np.ones_like(x, dtype=bool), k=1)
    plus = upper & (instance.signs > 0)
    minus = upper & (instance.signs < 0)
    return float(x[plus].sum()), float((1.0 - x[minus]).sum())
