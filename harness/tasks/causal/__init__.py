"""Causal discovery with latent variables (``causal.pairwise``): for pairs (X, Y) of observed variables, is X an
explicit, implicit, possible or non-ancestor of Y relative to the true PAG. Numpy only at import; networkx, scipy,
pgmpy and causal-learn are imported inside functions.
"""
