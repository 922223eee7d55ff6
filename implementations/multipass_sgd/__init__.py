"""Multi-pass SGD as analysed by Vansover-Hager, Koren & Livni, "Rapid Overfitting of Multi-Pass SGD in Stochastic
Convex Optimization" (ICML 2025): projected SGD from 0 with a constant step η = n^(−step_exponent) for T = Kn
steps, over K passes of one permutation (single-shuffle) or with replacement. Torch-free."""
from implementations.multipass_sgd._method import MultiPassSGD

__all__ = ["MultiPassSGD"]
