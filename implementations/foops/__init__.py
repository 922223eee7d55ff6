"""FOOPS: Chen, Xiao, Fukuda, Chen, Yuan & Chen, "Efficient First-Order Optimization on the Pareto Set for
Multi-Objective Learning under Preference Guidance" (ICML 2025).

* :func:`smoothed_merit`: h_{l,τ}(x, y) and its two gradients (eq. 3b / eq. 24 and Danskin's formula (5));
* :func:`foops`: Algorithm 1 with projected-gradient oracles on X = R^q;
* :class:`FOOPS`: the method of ``moo.preference``.

Numpy only.
"""
from implementations.foops._method import FOOPS, foops, smoothed_merit

__all__ = ["FOOPS", "foops", "smoothed_merit"]
