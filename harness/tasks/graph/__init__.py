"""Graph clustering tasks: ``graph.constrained-clustering`` and ``graph.correlation-clustering``.

The package imports nothing at module level, so that reading its catalogue
(:mod:`harness.tasks.graph.catalogue`) stays free.
"""
