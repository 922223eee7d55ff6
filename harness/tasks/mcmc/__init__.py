"""Vectorised MCMC (``mcmc.vectorized``): m chains of one sampler on one target, timed to n samples per chain.

Nothing in this package imports torch at module level: ``harness validate`` imports the task modules to read
parameter names.
"""
