"""Kalavas, Kipouridis & Varma (ICML 2025): Constrained Cluster LP + local search, penalised
local search, cluster-sampling rounding and the pivot mix, for constrained correlation clustering."""
from implementations.constrained_cc._algorithm import (
    ClusterLPAlgorithm,
    local_search,
    pivot_mix,
    round_by_sampling,
)

__all__ = ["ClusterLPAlgorithm", "local_search", "pivot_mix", "round_by_sampling"]
