"""Neural processes (``np.regression``): meta-learn a predictive map from context sets to target predictions.

Nothing in this package imports torch at module level: ``harness validate`` imports the task modules to read
parameter names.
"""
