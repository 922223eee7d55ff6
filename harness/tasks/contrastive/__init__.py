"""Contrastive learning with a reference model (``contrastive.reference``): train a two-tower image-text model on
pairs, with a pretrained reference at hand, and score it zero-shot.

Only :mod:`~harness.tasks.contrastive.towers` imports torch at module level, and the task imports it inside its
functions: ``harness validate`` imports the task modules to read parameter names.
"""
