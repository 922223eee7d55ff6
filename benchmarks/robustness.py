"""Torch kernels of the certified-robustness spec: forward + backward of the orthogonal layers in training
mode (the weight recomputed at every step). torch is imported in ``setup`` only.

The issue's size for the convolutions: B = 32, C = 64, 16×16, k = 3 (its reference, the public
implementations at 2 CPU threads: BRO 28.7 ms, SOC 45.4 ms, Cayley 78.5 ms); the dense layers at
two widths. Every kernel comes from its package's public surface (``implementations.bronet``,
``baselines.lipschitz_layers``)."""
from __future__ import annotations

from benchmarks._common import TorchKernel, synchronize


def _build(family: str, kind: str, width: int):
    if family == "bro":
        from implementations.bronet import BROConv2d, BROLinear

        return BROConv2d(width, 3, rank_ratio=0.5) if kind == "conv" else BROLinear(width, width, rank_ratio=0.5)
    from baselines import lipschitz_layers as layers

    cls = getattr(layers, {"cayley": "Cayley", "soc": "SOC"}[family] + ("Conv2d" if kind == "conv" else "Linear"))
    return cls(width, 3) if kind == "conv" else cls(width, width)


class OrthogonalConv(TorchKernel):
    """Forward + backward of one orthogonal convolution, B = 32, C = 64, 16×16, k = 3, at 1 and 2 CPU threads."""

    params = (["bro", "cayley", "soc"], [1, 2])
    param_names = ["family", "threads"]
    version = "1"

    def setup(self, family, threads):
        import torch

        self.device = self.prepare()
        if self.device == "cpu":
            torch.set_num_threads(threads)
        elif threads != 1:
            raise NotImplementedError("the thread count is a CPU setting")  # asv: skipped
        self.layer = _build(family, "conv", 64).to(self.device).train()
        self.x = torch.randn(32, 64, 16, 16, device=self.device)

    def time_forward_backward(self, family, threads):
        self.layer.zero_grad(set_to_none=True)
        self.layer(self.x).square().mean().backward()
        synchronize(self.device)


class OrthogonalDense(TorchKernel):
    """Forward + backward of one orthogonal dense layer on a batch of 128, at widths 64 and 512."""

    params = (["bro", "cayley", "soc"], [64, 512])
    param_names = ["family", "width"]
    version = "1"

    def setup(self, family, width):
        import torch

        self.device = self.prepare()
        self.layer = _build(family, "dense", width).to(self.device).train()
        self.x = torch.randn(128, width, device=self.device)

    def time_forward_backward(self, family, width):
        self.layer.zero_grad(set_to_none=True)
        self.layer(self.x).square().mean().backward()
        synchronize(self.device)


class SkewOrthogonalConv(TorchKernel):
    """Forward + backward of SOC's convolution in training (5 powers after the identity, as the public SOC codes
    train), B = 32, 16×16, k = 3, C = 32 and 64, at 1 and 2 CPU threads (issue 29: a convolution and a transposed
    one per term, and a sixth power, made it 2.3× slower than the official BRONet SOC; one convolution with the skew
    filter per term halves that, and the fifth power matches its count)."""

    params = ([32, 64], [1, 2])
    param_names = ["channels", "threads"]
    version = "1"

    def setup(self, channels, threads):
        import torch

        from baselines.lipschitz_layers import SOCConv2d

        self.device = self.prepare()
        if self.device == "cpu":
            torch.set_num_threads(threads)
        elif threads != 1:
            raise NotImplementedError("the thread count is a CPU setting")  # asv: skipped
        self.layer = SOCConv2d(channels, 3).to(self.device).train()
        self.x = torch.randn(32, channels, 16, 16, device=self.device)

    def time_forward_backward(self, channels, threads):
        self.layer.zero_grad(set_to_none=True)
        self.layer(self.x).square().mean().backward()
        synchronize(self.device)
