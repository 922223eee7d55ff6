"""Kernels of CC / CC++ (implementations.signed_laplacian, on components.laplacians) at the spec's two graph sizes."""
from __future__ import annotations

import numpy as np

from benchmarks._common import CpuKernel, sbm_instance


class GeneralisedEigensolve(CpuKernel):
    """The eigenproblem each method solves: CC++'s definite pencil, CC's projected one."""

    params = ([400, 1000], ["cc++", "cc"])
    param_names = ["n", "variant"]
    version = "1"

    def setup(self, n, variant):
        from components.laplacians import graph_laplacian, laplacian_kernel_basis, one_vertex_per_component
        from implementations.signed_laplacian import cannot_link_operator

        instance = sbm_instance(n)
        self.laplacian_g = graph_laplacian(instance.similarity)
        if variant == "cc++":
            loops = one_vertex_per_component(instance.cannot_link, np.random.default_rng(0))
            self.operator_h = cannot_link_operator(instance.cannot_link, "normalized", 1e-2, loops)
        else:
            self.operator_h = graph_laplacian(instance.cannot_link)
            self.kernel_h = laplacian_kernel_basis(instance.cannot_link)
        self.variant = variant

    def time_eigensolve(self, n, variant):
        from components.laplacians import smallest_eigenpair_on_complement, smallest_generalized_eigenpairs

        if self.variant == "cc++":
            smallest_generalized_eigenpairs(self.laplacian_g, self.operator_h, count=2)
        else:
            smallest_eigenpair_on_complement(self.laplacian_g, self.operator_h, self.kernel_h)

    def peakmem_eigensolve(self, n, variant):
        self.time_eigensolve(n, variant)


class Laplacians(CpuKernel):
    """The two operators and CC++'s loop, the work before the eigensolve: each graph's own
    normalised Laplacian, or the degree-equalised pair (G scaled and looped to H's degrees)."""

    params = ([400, 1000], ["normalised", "degree-equalised"])
    param_names = ["n", "operator"]
    version = "2"

    def setup(self, n, operator):
        self.instance = sbm_instance(n)

    def time_build_operators(self, n, operator):
        from components.laplacians import degree_equalised_laplacians, graph_laplacian
        from implementations.signed_laplacian import cannot_link_operator

        if operator == "normalised":
            graph_laplacian(self.instance.similarity)
        else:
            degree_equalised_laplacians(self.instance.similarity, self.instance.cannot_link)
        cannot_link_operator(self.instance.cannot_link, "normalized", 1e-2, np.array([0]))


class SweepRounding(CpuKernel):
    """The task's shared rounding: the least-ratio threshold cut of an embedding (O(nnz log n))."""

    params = [400, 1000]
    param_names = ["n"]
    version = "1"

    def setup(self, n):
        from implementations.signed_laplacian import SignedLaplacianClustering

        self.instance = sbm_instance(n)
        self.vector = SignedLaplacianClustering().embed(
            self.instance.similarity, self.instance.cannot_link, np.random.default_rng(0))

    def time_sweep(self, n):
        from harness.tasks.graph.constrained_clustering import round_bipartition

        round_bipartition(self.vector, self.instance.similarity, self.instance.cannot_link, "sweep")
