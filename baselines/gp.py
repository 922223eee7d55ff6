"""The baselines of ``gp.regression`` (torch-free at import; their models are in :mod:`baselines.gp_models`).

* :class:`ExactGP`: the full GP's marginal likelihood (gpytorch ``ExactGP``), the ceiling;
* :class:`TitsiasSGPR`: Titsias's (2009) collapsed bound through gpytorch's own
  ``InducingPointKernel`` and ``ExactMarginalLogLikelihood``, the reference implementation;
* :class:`ArtemevSGPR`: the spherical bound of Artemev et al. (2021), q(f|u) with V = vI;
* :class:`SVGP`: the uncollapsed minibatch bound of Hensman et al. (2013), whitened.
"""
from __future__ import annotations

from components.sparse_gp import CollapsedRegressor, GPRegressor, UncollapsedRegressor


class ExactGP(GPRegressor):
    """The exact GP's log marginal likelihood log N(y | 0, K + σ²I), O(N³): the sanity row (every bound's ceiling)."""

    def build(self, train, context):
        from baselines.gp_models import ExactTrainable

        return ExactTrainable(train)


class TitsiasSGPR(GPRegressor):
    """Titsias (2009): log N(y | 0, Q + σ²I) − Σ d_i / (2σ²), by gpytorch's ``InducingPointKernel`` (its added loss term).

    Trained on gpytorch's own marginal likelihood; predictions use the standard SGPR predictive
    (:func:`components.sparse_gp_torch.sgpr_predict`), as the other collapsed bounds do:
    gpytorch's eval-mode kernel adds diag(K − Q) on the training block too (FITC's predictive).
    """

    def build(self, train, context):
        from baselines.gp_models import GpytorchSGPRTrainable

        return GpytorchSGPRTrainable(train, jitter=self.jitter)


class ArtemevSGPR(CollapsedRegressor):
    """Artemev et al. (2021): log N(y | 0, Q + σ²I) − (N/2) log(1 + Σ d_i / (Nσ²)) (the V = vI optimum)."""

    def regulariser(self, d, noise):
        n = d.shape[0]
        return -0.5 * n * (d.sum() / (n * noise)).log1p()


class SVGP(UncollapsedRegressor):
    """Hensman et al. (2013): Σ_i E_q log N(y_i | f_i, σ²) − KL[q(u) || p(u)], minibatches, whitened q(u) = N(m, S)."""
