"""Gaussian-process regression (``gp.regression``): fit a GP's hyper-parameters by a bound, predict held-out targets.

Nothing in this package imports torch at module level: ``harness validate`` imports the
task modules to read parameter names.
"""
