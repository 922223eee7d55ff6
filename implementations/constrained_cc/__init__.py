"""Kalavas, Kipouridis & Varma (ICML 2025): Constrained Cluster LP + local search, penalised
local search, cluster-sampling rounding and the pivot mix, for constrained correlation clustering."""
from implementations.constrained_cc._algorithm import (
    ClusterLPAlgorithm,
    local_search,
    pair_costs,
    pivot_mix,
    round_by_sampling,
)
from implementations.constrained_cc._cluster_lp import ClusterLPSolution, lp_distances, solve_cluster_lp

__all__ = [
    "ClusterLPAlgorithm",
    "ClusterLPSolution",
    "local_search",
    "lp_distances",
    "pair_costs",
    "pivot_mix",
    "round_by_sampling",
    "solve_cluster_lp",
]
