"""Spatial transcriptomics (``spatial.expression``): predict a whole slide's gene expression from its spots' image
features and coordinates.

Nothing in this package imports torch or anndata at module level: ``harness validate`` imports the task modules to
read parameter names.
"""
