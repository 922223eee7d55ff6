"""A small causal (autoregressive) model of binary vectors: MADE (Germain, Gregor, Murray & Larochelle, 2015).

One MLP whose weights are masked so that the logit of pixel i reads only pixels 1 … i−1 (a fixed raster order), so

    log p(x) = Σ_i [x_i log σ(ℓ_i(x_<i)) + (1 − x_i) log(1 − σ(ℓ_i(x_<i)))]

is exact and one forward pass gives every conditional; sampling is ancestral, one pass a pixel. A temperature
1/w multiplies every logit by w: each conditional stays a Bernoulli, so the sharpened model's likelihood is exact
too. The model DDO's autoregressive variant fine-tunes (its log-ratio is then exact, no ELBO proxy).

Imports torch at module level: imported only inside functions.
"""
from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F


class MaskedLinear(nn.Linear):
    """A linear layer whose weight is multiplied by a fixed 0/1 mask (out_features, in_features)."""

    def __init__(self, inputs: int, outputs: int, mask: torch.Tensor):
        super().__init__(inputs, outputs)
        self.register_buffer("mask", mask.to(self.weight.dtype))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.linear(x, self.weight * self.mask, self.bias)


class MADE(nn.Module):
    """Logits of ``dim`` binary pixels, each from the pixels before it: ``depth`` masked hidden layers of ``width``
    ReLU units. Hidden unit k of every layer has degree 1 + k mod (dim − 1) and sees the inputs of degree at most
    its own (directly or through units of lower degree); output i sees hidden units of degree below i, so pixel 1
    is a free bias. Small on purpose: the task sets the capacity below what the digits need."""

    def __init__(self, dim: int, width: int = 32, depth: int = 1):
        super().__init__()
        if dim < 2:
            raise ValueError(f"a causal model of {dim} pixel has nothing to condition on; at least 2 are needed")
        self.dim = dim
        inputs = torch.arange(1, dim + 1)
        hidden = 1 + torch.arange(width) % (dim - 1)
        layers: list[nn.Module] = []
        previous = inputs
        for _ in range(depth):
            layers += [MaskedLinear(len(previous), width, (hidden[:, None] >= previous[None, :]).float()), nn.ReLU()]
            previous = hidden
        layers.append(MaskedLinear(len(previous), dim, (inputs[:, None] > previous[None, :]).float()))
        self.net = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(B, dim) logits; logit i depends on x_1 … x_{i−1} only."""
        return self.net(x)

    def log_prob(self, x: torch.Tensor, scale: float = 1.0) -> torch.Tensor:
        """(B,) exact log-likelihood of binary rows x under the model whose logits are multiplied by ``scale``."""
        logits = scale * self(x)
        return -F.binary_cross_entropy_with_logits(logits, x, reduction="none").sum(-1)

    @torch.no_grad()
    def sample(self, uniforms: torch.Tensor, scale: float = 1.0) -> torch.Tensor:
        """Ancestral samples: pixel i is 1 where ``uniforms[:, i]`` < σ(scale · ℓ_i(x_<i)). The uniforms are the
        only randomness, so two models given the same uniforms are sampled with common random numbers."""
        x = torch.zeros_like(uniforms)
        for i in range(self.dim):
            x[:, i] = (uniforms[:, i] < torch.sigmoid(scale * self(x)[:, i])).to(x.dtype)
        return x
