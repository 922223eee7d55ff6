"""STFlow as a method of ``spatial.expression``."""
from __future__ import annotations

import math

PRIORS = ("zinb", "gaussian")
NB_LOGITS = 0.1  # upstream's NB(total_count = 1, logits = 0.1): mean e^0.1 ≈ 1.105, inverse dispersion 1
ZERO_SHARE = 0.5  # σ(0): the share of draws the zero inflation sets to 0


def prior_sample(shape, prior: str, generator, device="cpu"):
    """Y⁰ of ``shape``: log1p of ZINB(total_count 1, logits 0.1, zero share 0.5) counts (a gamma(1) = exponential
    rate, then Poisson, then the zero inflation), or a standard Gaussian."""
    import torch

    if prior == "gaussian":
        return torch.randn(shape, generator=generator).to(device)
    if prior != "zinb":
        raise ValueError(f"prior = {prior!r}; expected one of {PRIORS}")
    rate = -math.exp(NB_LOGITS) * torch.log1p(-torch.rand(shape, generator=generator))  # Exponential, mean e^0.1
    counts = torch.poisson(rate, generator=generator)
    kept = torch.rand(shape, generator=generator) >= ZERO_SHARE
    return torch.log1p(counts * kept).to(device)


def flow_matching_loss(network, crop, generator, prior: str):
    """MSE between the network's x1-prediction at Yᵗ = (1 − t)Y⁰ + tY¹ and Y¹, one t ~ U[0, 1] for the crop."""
    import torch

    target = crop.expression
    t = float(torch.rand((), generator=generator))
    start = prior_sample(tuple(target.shape), prior, generator, target.device)
    state = (1 - t) * start + t * target
    return (network(crop.features, state, t, crop.graph) - target).square().mean()


class FlowSampler:
    """Euler steps on the grid linspace(0.01, 1, ``steps``) from a prior sample: at each t, Ŷ¹ = f(Yᵗ), v = (Ŷ¹ − Yᵗ)
    / (1 − t), Yᵗ⁺ᐃ = Yᵗ + ᐃ·v; ``steps`` − 1 network calls, and the last step lands on Ŷ¹."""

    def __init__(self, network, prior: str, steps: int):
        if steps < 2:
            raise ValueError(f"sampling_steps = {steps}; expected at least 2 (one network call)")
        self.network, self.prior, self.steps = network, prior, steps

    def predict(self, slide, generator):
        import torch

        grid = torch.linspace(0.01, 1.0, self.steps).tolist()
        state = prior_sample((slide.spots, self.network.genes), self.prior, generator, slide.features.device)
        for t, after in zip(grid[:-1], grid[1:]):
            clean = self.network(slide.features, state, t, slide.graph)
            state = state + (after - t) * (clean - state) / (1 - t)
        return state


class STFlow:
    """STFlow with the ``prior`` (``zinb``, upstream's, or ``gaussian``), frame-averaged edges or not, and
    ``sampling_steps`` grid points (upstream 5: 4 network calls); the denoiser ``layers`` blocks of ``width``."""

    def __init__(self, prior: str = "zinb", frame_averaging: bool = True, sampling_steps: int = 5, width: int = 32,
                 layers: int = 4, heads: int = 4):
        self.prior, self.frame_averaging, self.sampling_steps = prior, frame_averaging, sampling_steps
        self.width, self.layers, self.heads = width, layers, heads

    def fit(self, session):
        from components.spatial_transformer_torch import SpatialTransformer

        if self.prior not in PRIORS:
            raise ValueError(f"STFlow: prior = {self.prior!r}; expected one of {PRIORS}")
        network = SpatialTransformer(session.feature_dim, session.genes, self.width, self.layers, self.heads,
                                     self.frame_averaging)
        sampler = FlowSampler(network, self.prior, self.sampling_steps)
        session.train(network, lambda net, crop, generator: flow_matching_loss(net, crop, generator, self.prior),
                      sampler)
        return sampler
