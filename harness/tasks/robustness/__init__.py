"""Certified robustness (``robustness.certified``): train a Lipschitz classifier, then certify it.

Nothing in this package imports torch at module level: ``harness validate`` imports the
task modules to read parameter names.
"""
