"""Baseline methods, shared between specs. One re-export line per class."""
from baselines.correlation_clustering import ConstrainedPivot, ExactILP, VanZuylenWilliamsonPivot
from baselines.spectral import CucuringuConstrainedSpectral, SpectralClustering
from baselines.vit import ViTProtoNet

__all__ = [
    "ConstrainedPivot",
    "ExactILP",
    "VanZuylenWilliamsonPivot",
    "CucuringuConstrainedSpectral",
    "SpectralClustering",
    "ViTProtoNet",
]
