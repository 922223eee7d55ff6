"""Baselines of ``spatial.expression``: the same spatial transformer as STFlow's as a one-shot regressor and as a
compute-matched iterative regressor, a full-attention slide transformer, a per-spot MLP, a ridge probe on the
features, the simulator's oracle (a sanity row) and the training mean (the trivial answer). Torch-free at import;
every network trains through the task's one loop (:meth:`~harness.tasks.spatial.expression.SlideSession.train`)."""
from __future__ import annotations

import numpy as np


def _mse(prediction, target):
    return (prediction - target).square().mean()


class OneShot:
    """A network's prediction from zero expression at t = 0."""

    def __init__(self, network):
        self.network = network

    def predict(self, slide, generator):
        import torch

        zeros = torch.zeros((slide.spots, self.network.genes), device=slide.features.device)
        return self.network(slide.features, zeros, 0.0, slide.graph)


class _OneShotRegressor:
    """Train the subclass's ``build(session)`` network with the MSE of its one-shot prediction."""

    def fit(self, session):
        network = self.build(session)
        predictor = OneShot(network)
        session.train(network, lambda net, crop, generator: _mse(OneShot(net).predict(crop, generator),
                                                                  crop.expression), predictor)
        return predictor


class SpatialRegressor(_OneShotRegressor):
    """STFlow's spatial transformer (frame-averaged edges) trained as a one-shot regressor: no prior, no time."""

    def __init__(self, width: int = 32, layers: int = 4, heads: int = 4):
        self.width, self.layers, self.heads = width, layers, heads

    def build(self, session):
        from components.spatial_transformer_torch import SpatialTransformer

        return SpatialTransformer(session.feature_dim, session.genes, self.width, self.layers, self.heads)


class FullAttention(_OneShotRegressor):
    """A one-shot transformer with global attention over the slide (coordinates as sinusoidal embeddings up to
    ``longest`` spot spacings)."""

    def __init__(self, width: int = 32, layers: int = 4, heads: int = 4, longest: float = 64.0):
        self.width, self.layers, self.heads, self.longest = width, layers, heads, longest

    def build(self, session):
        from components.spatial_transformer_torch import FullAttentionTransformer

        return FullAttentionTransformer(session.feature_dim, session.genes, self.width, self.layers, self.heads,
                                        self.longest)


class SpotMLP(_OneShotRegressor):
    """A per-spot MLP on the features (``layers`` hidden layers of ``width``)."""

    def __init__(self, width: int = 128, layers: int = 2):
        self.width, self.layers = width, layers

    def build(self, session):
        from components.spatial_transformer_torch import SpotMLP as Network

        return Network(session.feature_dim, session.genes, self.width, self.layers)


class Iterated:
    """``passes`` applications of the network, each on its own previous output (from zeros), at t = pass / passes."""

    def __init__(self, network, passes: int):
        self.network, self.passes = network, passes

    def predict(self, slide, generator, passes: int | None = None):
        import torch

        state = torch.zeros((slide.spots, self.network.genes), device=slide.features.device)
        for p in range(self.passes if passes is None else passes):
            state = self.network(slide.features, state, p / self.passes, slide.graph)
        return state


class IterativeRegressor:
    """STFlow's spatial transformer applied ``passes`` times on its own previous output (STFlow's 5 grid points make
    4 calls): the same compute at inference without a flow. Trained by recycling: each crop runs a random number
    p < ``passes`` of passes without gradients, then one with, on the MSE of its output, so that a training step
    costs about what STFlow's does and every pass is trained."""

    def __init__(self, passes: int = 4, width: int = 32, layers: int = 4, heads: int = 4):
        self.passes, self.width, self.layers, self.heads = passes, width, layers, heads

    def fit(self, session):
        import torch

        from components.spatial_transformer_torch import SpatialTransformer

        if self.passes < 1:
            raise ValueError(f"IterativeRegressor: passes = {self.passes}; expected at least 1")
        network = SpatialTransformer(session.feature_dim, session.genes, self.width, self.layers, self.heads)
        predictor = Iterated(network, self.passes)

        def loss(net, crop, generator):
            iterated = Iterated(net, self.passes)
            done = int(torch.randint(self.passes, (), generator=generator))
            with torch.no_grad():
                state = iterated.predict(crop, generator, passes=done)
            return _mse(net(crop.features, state, done / self.passes, crop.graph), crop.expression)

        session.train(network, loss, predictor)
        return predictor


class _Linear:
    def __init__(self, weights: np.ndarray, intercept: np.ndarray):
        self.weights, self.intercept = weights, intercept

    def predict(self, slide, generator):
        return slide.slide.features.astype(np.float64) @ self.weights + self.intercept


class RidgeProbe:
    """Ridge regression of the expression on the features (a foundation model's linear probe), the penalty the one of
    ``alphas`` (times the feature count) with the best validation Pearson."""

    def __init__(self, alphas: tuple = (0.01, 0.1, 1.0, 10.0, 100.0, 1000.0)):
        self.alphas = alphas

    def fit(self, session):
        from sklearn.linear_model import Ridge

        x = np.concatenate([s.features for s in session.train_slides]).astype(np.float64)
        y = np.concatenate([s.expression for s in session.train_slides]).astype(np.float64)
        best, kept = -np.inf, None
        for alpha in self.alphas:
            model = Ridge(alpha=alpha * x.shape[1]).fit(x, y)
            candidate = _Linear(model.coef_.T, model.intercept_)
            score = session.validation_score(candidate)
            if score > best:
                best, kept = score, candidate
        return kept


class Oracle:
    """The simulator's E[log1p Y | latent cell-type mix] of each held-out spot (a sanity row: the ceiling of what
    features that are a noisy map of the mix can give)."""

    def fit(self, session):
        from harness.tasks.base import DataUnavailable

        if any(s.oracle is None for s in session.validation_slides):
            raise DataUnavailable("the oracle row needs simulated slides (it reads the simulator's E[log1p Y | "
                                  "latent mix]); these slides are real")
        return _OracleReader(session)


class _OracleReader:
    def __init__(self, session):
        self.session = session

    def predict(self, slide, generator):
        return self.session.oracle(slide)


class MeanExpression:
    """Every spot gets the training slides' mean expression: the trivial answer (Pearson 0)."""

    def fit(self, session):
        mean = np.concatenate([s.expression for s in session.train_slides]).mean(0)
        return _Constant(mean.astype(np.float64))


class _Constant:
    def __init__(self, row: np.ndarray):
        self.row = row

    def predict(self, slide, generator):
        return np.tile(self.row, (slide.spots, 1))
