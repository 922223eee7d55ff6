"""SynEVO: Liu, Yi, Zhou, Huang et al., "A neuro-inspired spatiotemporal evolutional framework for cross-domain
adaptation" (ICML 2025, arXiv 2505.16080).

One shared spatiotemporal model (the "common container") learns sample groups one after another: the groups are
ordered easy to hard by the distance of their gradients to the easiest group's (curriculum re-ordering), each is
trained with a dropout and a weight decay that fall as that distance grows (elasticity), and a linear extractor
trained with a contrastive loss gates each group in or out by its distance to the groups already learnt.

* :class:`SynEVO`: the method of ``spatiotemporal.crossdomain``, with switches for its ablations;
* :mod:`implementations.synevo.parts`: the reordering, the elastic schedule, the extractor and the gate's distance.

The authors published no code; this is written from the paper as its note reads it (every open choice is named
in the spec). Torch-free at import.
"""
from implementations.synevo._method import SynEVO

__all__ = ["SynEVO"]
