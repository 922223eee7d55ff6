"""Tighter sparse variational GPs: Titsias, "New Bounds for Sparse Variational Gaussian Processes" (ICML 2025),
and Bui, Ashman & Turner, "Tighter sparse variational Gaussian processes" (TMLR 2025), the same bound.

q(f|u) = N(K_fu K_uu⁻¹ u, D^{1/2} V D^{1/2}) with V = diag(v_i), optimised at v_i = (1 + d_i/σ²)⁻¹:
each point's trace term −d_i/(2σ²) of Titsias's (2009) bound becomes −½ log(1 + d_i/σ²).

* :class:`TightSGPR`: the collapsed bound log N(y | 0, Q + σ²I) − ½ Σ log(1 + d_i/σ²);
* :class:`TightSVGP`: its uncollapsed minibatch form, SVGP's per-point term corrected by
  d_i/(2σ²) − ½ log(1 + d_i/σ²) and scaled by N/|B| like the likelihood;
* :func:`tight_regulariser`: the trace term itself (timed by ``benchmarks/gp.py``).

Torch-free at import: the torch code runs when a method fits.
"""
from implementations.tight_sgp._method import TightSGPR, TightSVGP, tight_correction, tight_regulariser

__all__ = ["TightSGPR", "TightSVGP", "tight_regulariser", "tight_correction"]
