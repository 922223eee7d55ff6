"""The new bound's two forms as methods of ``gp.regression`` (torch-free at import: the functions below call
torch methods on the tensors they are given)."""
from __future__ import annotations

from components.sparse_gp import CollapsedRegressor, UncollapsedRegressor


def tight_regulariser(d, noise):
    """−½ Σ_i log(1 + d_i/σ²): the new bound's trace term (≥ Titsias's −Σ d_i/(2σ²), since log(1 + a) ≤ a)."""
    return -0.5 * (d / noise).log1p().sum()


def tight_correction(d, noise):
    """Per point, the new term minus SVGP's: d_i/(2σ²) − ½ log(1 + d_i/σ²) ≥ 0."""
    ratio = d / noise
    return 0.5 * ratio - 0.5 * ratio.log1p()


class TightSGPR(CollapsedRegressor):
    """The new collapsed bound (SGPR-new, T-SGPR): log N(y | 0, Q + σ²I) − ½ Σ_i log(1 + d_i/σ²), full batch, O(NM²)."""

    def regulariser(self, d, noise):
        return tight_regulariser(d, noise)


class TightSVGP(UncollapsedRegressor):
    """The new uncollapsed bound (SVGP-new, T-SVGP): Σ_i {E_q log N(y_i | f_i, σ²) − ½ log(1 + d_i/σ²)} − KL, minibatches."""

    def correction(self, d, noise):
        return tight_correction(d, noise)
