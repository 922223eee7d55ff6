"""LocICR: Li, Liu, Xie, Zhang, Liu & Geng, "Local Identifying Causal Relations in the Presence of Latent Variables"
(ICML 2025). Re-implemented from the paper's Algorithms 1–2 (the authors' code, which carries no licence, was read,
not copied). Numpy and networkx only.
"""
from implementations.local_causal._locicr import LocICR, LocalLearner, orient, orient_r1_r3

__all__ = ["LocICR", "LocalLearner", "orient", "orient_r1_r3"]
