"""The method side of ``gp.regression`` that the tighter sparse-GP bounds and their baselines share.

A method is a :class:`GPRegressor`: it builds one model from the task's training set (the
same kernel, likelihood, initial hyper-parameters and k-means inducing inputs for every
method), trains it with the same optimiser and budget, and returns a :class:`FittedGP`.
A subclass only says which model and which objective: what differs between the collapsed
bounds is one per-point regulariser (:meth:`CollapsedRegressor.regulariser`), and between the
uncollapsed ones one per-point correction of the ELBO (:meth:`UncollapsedRegressor.correction`).

Torch-free at import (``harness validate`` reads the methods' parameter names); the torch code
is in :mod:`components.sparse_gp_torch`, imported when a method fits.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harness.tasks.base import Context
    from harness.tasks.gp.regression import TrainingSet


class GPRegressor:
    """Base of the methods of ``gp.regression``; ``jitter`` is added to K_uu's diagonal (float64)."""

    def __init__(self, *, jitter: float = 1e-6):
        self.jitter = float(jitter)

    def fit(self, train: "TrainingSet", context: "Context") -> Any:
        from components.sparse_gp_torch import train_model

        return train_model(self, train, context)

    def build(self, train: "TrainingSet", context: "Context") -> Any:  # pragma: no cover - abstract
        """The trainable model (see :class:`components.sparse_gp_torch.Trainable`)."""
        raise NotImplementedError


class CollapsedRegressor(GPRegressor):
    """A collapsed (SGPR-type) bound: log N(y | 0, Q + σ²I) + :meth:`regulariser` (d, σ²), full batch.

    ``d`` is the diagonal of K_ff − Q_ff (one value per training point). Predictions use the
    standard SGPR predictive ∫ p(f*|u) q*(u) du, the same for every collapsed bound.
    """

    def regulariser(self, d, noise):  # pragma: no cover - abstract
        """The bound's trace term, a torch scalar: Σ over training points of a function of d_i and σ²."""
        raise NotImplementedError

    def build(self, train, context):
        from components.sparse_gp_torch import CollapsedTrainable

        return CollapsedTrainable(train, self.regulariser, jitter=self.jitter)


class UncollapsedRegressor(GPRegressor):
    """A minibatch (SVGP-type) bound with q(u) = N(m, S), whitened, learned by the same optimiser.

    The objective is (N/|B|) Σ_{i∈B} [E_q log N(y_i | f_i, σ²) + :meth:`correction` (d_i, σ²)] − KL[q(u) || p(u)];
    ``correction`` is 0 for SVGP. ``batch_size`` comes from the task's training set.
    """

    def correction(self, d, noise):
        """A per-point addition to the ELBO (a torch tensor shaped like d): none for SVGP."""
        return d * 0.0

    def build(self, train, context):
        from components.sparse_gp_torch import UncollapsedTrainable

        return UncollapsedTrainable(train, self.correction, jitter=self.jitter,
                                    generator_seed=int(context.rng("method", "minibatches").integers(2**62)))
