"""The in-repo catalogue: every registered name, mapped to a ``module:attr`` string.

Nothing here is imported until it is used, so ``harness list`` and ``harness validate``
stay fast. Outside packages add names through the ``harness.catalogue`` entry-point
group: each entry point names a dict of the same shape as ``CATALOGUE`` below.
"""
from __future__ import annotations

CATALOGUE: dict[str, dict[str, dict[str, str]]] = {
    "tasks": {
        "graph.constrained-clustering": {
            "target": "harness.tasks.constrained_clustering:TASK",
            "about": "two-way clustering of a similarity graph G under a cannot-link graph H",
        },
        "graph.correlation-clustering": {
            "target": "harness.tasks.correlation_clustering:TASK",
            "about": "correlation clustering of a complete signed graph with must-link and cannot-link pairs",
        },
        "fewshot.cdfsl": {
            "target": "harness.tasks.fewshot.cdfsl:TASK",
            "about": "cross-domain few-shot classification: source pre-training, 5-way 1/5-shot ProtoNet episodes on a target",
        },
        "fewshot.cdfss": {
            "target": "harness.tasks.fewshot.cdfss:TASK",
            "about": "cross-domain few-shot segmentation: source training, 1/5-shot mask episodes on a target, class-wise mIoU",
        },
    },
    "datasets": {
        "two-block-sbm": {
            "task": "graph.constrained-clustering",
            "target": "harness.tasks.constrained_clustering:two_block_sbm",
            "about": "two equal blocks; G has p inside and q across, H the reverse",
        },
        "two-disk-rgg": {
            "task": "graph.constrained-clustering",
            "target": "harness.tasks.constrained_clustering:two_disk_rgg",
            "about": "random geometric graphs on two overlapping disks",
        },
        "digits-knn": {
            "task": "graph.constrained-clustering",
            "target": "harness.tasks.constrained_clustering:digits_knn",
            "about": "kNN graph of two classes of scikit-learn's digits, cannot-links from a few labels",
        },
        "planted-partition-cc": {
            "task": "graph.correlation-clustering",
            "target": "harness.tasks.correlation_clustering:planted_partition",
            "about": "planted clusters with sign noise and consistent must-link / cannot-link pairs",
        },
        "cdfsl-digits": {
            "task": "fewshot.cdfsl",
            "target": "harness.tasks.fewshot.cdfsl:synthetic_digit_domains",
            "about": "source digits 0-4; target: novel digits near / inverted + noise / as gratings, or grating textures",
        },
        "cdfsl-imagefolder": {
            "task": "fewshot.cdfsl",
            "target": "harness.tasks.fewshot.cdfsl:cdfsl_imagefolder",
            "about": "BSCD-FSL from --data-dir: miniImageNet source; CropDisease, EuroSAT, ISIC, ChestX class folders",
        },
        "synthetic-shapes": {
            "task": "fewshot.cdfss",
            "target": "harness.tasks.fewshot.cdfss:synthetic_shapes",
            "about": "8 source shapes on gradients; novel shapes in a target style: fss, deepglobe, chestx or isic",
        },
        "cdfss-folder": {
            "task": "fewshot.cdfss",
            "target": "harness.tasks.fewshot.cdfss:cdfss_folder",
            "about": "CD-FSS from --data-dir: PASCAL source; Deepglobe, ISIC, Chest X-ray, FSS-1000 images with masks",
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
            "about": "van Zuylen & Williamson: triangle LP, then pivot on x < 1/2",
        },
        "pivot": {
            "task": "graph.correlation-clustering",
            "target": "baselines.correlation_clustering:ConstrainedPivot",
            "about": "randomised Pivot on contracted must-link components, never joining cannot-link pairs",
        },
        "exact-ilp": {
            "task": "graph.correlation-clustering",
            "target": "baselines.correlation_clustering:ExactILP",
            "about": "the optimum, by an integer program over feasible clusters (small n only)",
        },
        "vit-protonet": {
            "task": "fewshot.cdfsl",
            "target": "baselines.vit:ViTProtoNet",
            "about": "plain ViT, cross-entropy on the source, ProtoNet on frozen CLS features (test_shuffle: the patch-shuffle probe)",
        },
        "recit": {
            "task": "fewshot.cdfsl",
            "target": "implementations.recit:ReCIT",
            "about": "ViT with patch-shuffle warm-up and channel-FFT amplitude resampling over similar-patch groups (Yi et al., ICML 2025)",
        },
        "dfn": {
            "task": "fewshot.cdfss",
            "target": "implementations.dfn:DomainFeatureNavigator",
            "about": "frozen CNN + zero-init residual 1×1 adapters (DFN), SAM-SVN in source training, adapter fine-tuning on the support (Tong et al., ICML 2025)",
        },
    },
}
