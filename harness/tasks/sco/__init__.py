"""Stochastic convex optimisation (``sco.*``): SGD's population and empirical loss on instances whose population
loss is computed exactly.

Nothing in this package imports numpy at module level beyond what the task module needs; no torch anywhere.
"""
