"""STFlow: Huang, Liu, Babadi, Jin & Ying, "Scalable Generation of Spatial Transcriptomics from Histology Images via
Whole-Slide Flow Matching" (ICML 2025).

The expression of every spot of a slide is generated jointly by flow matching: from a prior sample Y⁰ (a
zero-inflated negative binomial, log1p, drawn per spot and gene), Yᵗ = (1 − t)Y⁰ + tY¹, a denoiser f(Yᵗ, I, C, t)
that predicts the clean Y¹ (MSE), and a few Euler steps in x1-prediction form at t = 0.01 … 1. The denoiser is the
kNN spatial transformer of :mod:`components.spatial_transformer_torch` (frame-averaged relative positions, neighbours'
expression differences in the attention logits).

* :func:`prior_sample`: the ZINB or Gaussian prior;
* :func:`flow_matching_loss`: one crop's loss at one t;
* :class:`FlowSampler`: the Euler sampler (its output is the last x1-prediction, which the last step lands on);
* :class:`STFlow`: the method of ``spatial.expression`` (``prior``, ``frame_averaging`` for the ablations).

Written from the paper note's reading of the authors' code (commit 880c2ee); nothing is copied. Torch-free at import.
"""
from implementations.stflow._method import STFlow, FlowSampler, flow_matching_loss, prior_sample

__all__ = ["STFlow", "FlowSampler", "flow_matching_loss", "prior_sample"]
