"""Multi-objective optimisation under a preference (``moo.preference``).

Nothing in this package imports torch or scikit-learn at module level.
"""
