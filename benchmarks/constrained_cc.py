"""Kernels of the constrained correlation clustering spec: the Constrained Cluster LP, the
paper's full algorithm, the exact cluster ILP and van Zuylen–Williamson's triangle LP."""
from __future__ import annotations

import numpy as np

from benchmarks._common import CpuKernel, cc_instance


class ClusterLP(CpuKernel):
    """Enumerate the feasible clusters and solve the Constrained Cluster LP (HiGHS)."""

    # n nodes with 2 must-link and 2 cannot-link pairs: about 2^(n-2) feasible clusters
    params = [10, 14]
    param_names = ["n"]
    version = "1"

    def setup(self, n):
        import scipy.optimize  # noqa: F401  (imported here so that no timed call pays for it)

        self.instance = cc_instance(n)

    def time_build_and_solve(self, n):
        from components.correlation_clustering import feasible_clusters
        from implementations.constrained_cc import solve_cluster_lp

        solve_cluster_lp(self.instance, feasible_clusters(self.instance))

    def peakmem_build_and_solve(self, n):
        self.time_build_and_solve(n)

    def time_exact_ilp(self, n):
        from baselines.correlation_clustering import solve_cluster_ilp
        from components.correlation_clustering import feasible_clusters

        solve_cluster_ilp(self.instance, feasible_clusters(self.instance))


class ClusterLPAlgorithm(CpuKernel):
    """The paper's whole method: LP, local searches L and L′, rounding, pivot mix; best of
    ``repeats`` roundings (the spec gives every randomised method 3)."""

    params = ([10, 14], [1, 3])
    param_names = ["n", "repeats"]
    version = "2"

    def setup(self, n, repeats):
        import scipy.optimize  # noqa: F401  (imported here so that no timed call pays for it)

        self.instance = cc_instance(n)

    def time_cluster(self, n, repeats):
        from implementations.constrained_cc import ClusterLPAlgorithm as Method

        Method(repeats=repeats).cluster(self.instance, np.random.default_rng(0))

    def peakmem_cluster(self, n, repeats):
        self.time_cluster(n, repeats)


class TriangleLP(CpuKernel):
    """The standard LP with every triangle inequality (3·C(n, 3) rows), the vZW baseline's kernel."""

    params = [10, 20]
    param_names = ["n"]
    version = "1"

    def setup(self, n):
        import scipy.optimize  # noqa: F401  (imported here so that no timed call pays for it)

        self.instance = cc_instance(n)

    def time_triangle_lp(self, n):
        from baselines.correlation_clustering import solve_triangle_lp

        solve_triangle_lp(self.instance)


class LPPivot(CpuKernel):
    """van Zuylen–Williamson's rounding of a triangle-LP solution: the ratio pivot on x ≤ ½."""

    params = [10, 20]
    param_names = ["n"]
    version = "1"

    def setup(self, n):
        from baselines.correlation_clustering import solve_triangle_lp

        self.instance = cc_instance(n)
        self.x, _ = solve_triangle_lp(self.instance)

    def time_ratio_pivot(self, n):
        from baselines.correlation_clustering import lp_pivot

        lp_pivot(self.instance, self.x)
