"""The graph family's names: tasks, datasets, methods and metrics, as ``module:attr`` strings.

Found by the registry's scan of ``harness/tasks/*/catalogue.py`` (no ``pyproject.toml`` line).
Plain data: importing it imports nothing else.
"""

CATALOGUE = {
    "tasks": {
        "graph.constrained-clustering": {
            "target": "harness.tasks.graph.constrained_clustering:TASK",
            "about": "two-way clustering of a similarity graph G under a cannot-link graph H",
        },
        "graph.correlation-clustering": {
            "target": "harness.tasks.graph.correlation_clustering:TASK",
            "about": "correlation clustering of a complete signed graph with must-link and cannot-link pairs",
        },
    },
    "datasets": {
        "two-block-sbm": {
            "task": "graph.constrained-clustering",
            "target": "harness.tasks.graph.constrained_clustering:two_block_sbm",
            "about": "two equal blocks; G has p inside and q across, H the reverse",
        },
        "two-disk-rgg": {
            "task": "graph.constrained-clustering",
            "target": "harness.tasks.graph.constrained_clustering:two_disk_rgg",
            "about": "random geometric graphs on two overlapping disks",
        },
        "digits-knn": {
            "task": "graph.constrained-clustering",
            "target": "harness.tasks.graph.constrained_clustering:digits_knn",
            "about": "kNN graph of two classes of scikit-learn's digits, cannot-links from a few labels",
        },
        "planted-partition-cc": {
            "task": "graph.correlation-clustering",
            "target": "harness.tasks.graph.correlation_clustering:planted_partition",
            "about": "planted clusters with sign noise and consistent must-link / cannot-link pairs",
        },
    },
    "methods": {
        "signed-laplacian": {
            "task": "graph.constrained-clustering",
            "target": "implementations.signed_laplacian:SignedLaplacianClustering",
            "about": "CC / CC++: generalised eigenproblem L_G f = λ L_H' f (Fabila Carrasco & Sun, ICML 2025)",
        },
        "spectral": {
            "task": "graph.constrained-clustering",
            "target": "baselines.spectral:SpectralClustering",
            "about": "Fiedler vector of G's normalised Laplacian, constraints ignored",
        },
        "cucuringu": {
            "task": "graph.constrained-clustering",
            "target": "baselines.spectral:CucuringuConstrainedSpectral",
            "about": "Cucuringu et al. 2016: L_G x = λ (L_H + μ/n L_K) x with a complete demand graph K",
        },
        "cluster-lp": {
            "task": "graph.correlation-clustering",
            "target": "implementations.constrained_cc:ClusterLPAlgorithm",
            "about": "Constrained Cluster LP + local search, penalised local search, rounding, pivot mix (Kalavas et al., ICML 2025)",
        },
        "vzw-pivot": {
            "task": "graph.correlation-clustering",
            "target": "baselines.correlation_clustering:VanZuylenWilliamsonPivot",
            "about": "van Zuylen & Williamson: triangle LP, then pivot on x ≤ 1/2 (strict only where a cannot-link pair needs it)",
        },
        "pivot": {
            "task": "graph.correlation-clustering",
            "target": "baselines.correlation_clustering:ConstrainedPivot",
            "about": "randomised Pivot on contracted must-link components, never joining cannot-link pairs; best of `repeats` runs",
        },
        "exact-ilp": {
            "task": "graph.correlation-clustering",
            "target": "baselines.correlation_clustering:ExactILP",
            "about": "the optimum, by an integer program over feasible clusters (small n only)",
        },
    },
    "metrics": {
        "ari": {"goal": "max", "unit": "", "about": "adjusted Rand index of the returned clustering against the planted labels"},
        "cut_ratio": {"goal": "min", "unit": "", "about": "w_G(S, S̄) / w_H(S, S̄) of the returned bipartition"},
        "runtime_s": {"goal": "min", "unit": "s", "about": "seconds the method itself took in the cell"},
        "cost_over_opt": {"goal": "min", "unit": "", "about": "clustering cost / optimum cost, mean over the cell's instances"},
        "worst_cost_over_opt": {"goal": "min", "unit": "", "about": "clustering cost / optimum cost, worst instance of the cell"},
        "cost_over_lp": {"goal": "min", "unit": "", "about": "clustering cost / Constrained Cluster LP value, mean over instances"},
        "worst_cost_over_lp": {"goal": "min", "unit": "", "about": "clustering cost / Constrained Cluster LP value, worst instance of the cell"},
        "lp_fractional": {"goal": "max", "unit": "", "about": "share of the cell's instances whose Constrained Cluster LP optimum lies below OPT (integrality gap > 1): where rounding acts; a property of the instances, the same for every method"},
        "violations": {"goal": "min", "unit": "", "role": "certificate", "about": "must-link and cannot-link pairs the returned clusterings break, counted over the cell's instances (any fails the cell)"},
    },
}
