"""BRONet's layers as a method of ``robustness.certified`` (torch-free at import)."""
from __future__ import annotations

from components.lipschitz import LA_DEFAULTS, LipschitzClassifier


class BRONet(LipschitzClassifier):
    """A network of BRO layers (dense :class:`BROLinear`, convolution :class:`BROConv2d`), MinMax, an LLN head.

    ``rank_ratio``: the rank of V as a fraction of the width (BRONet's CIFAR backbone: 0.5;
    LipConvNet's ``--bro-rank``: 0.125); ``ridge``: δ relative to mean(diag VᵀV); ``kernel_size``
    of the convolutions. The other parameters are :class:`components.lipschitz.LipschitzClassifier`'s.
    """

    def __init__(self, *, rank_ratio: float = 0.5, ridge: float = 1e-5, kernel_size: int = 3, arch: str = "dense",
                 width: int = 64, depth: int = 4, channels: int = 16, stages: int = 5, head: str = "lln", loss: str = "la",
                 la_temperature: float = 0.75, la_offset: float = LA_DEFAULTS["la_offset"], la_exponent: float = 5.0,
                 la_alpha: float = 0.25):
        super().__init__(arch=arch, width=width, depth=depth, channels=channels, stages=stages, head=head, loss=loss,
                         la_temperature=la_temperature, la_offset=la_offset, la_exponent=la_exponent, la_alpha=la_alpha)
        self.rank_ratio, self.ridge, self.kernel_size = float(rank_ratio), float(ridge), int(kernel_size)

    def layers(self, generator):
        from implementations.bronet.layers import BROConv2d, BROLinear

        def dense(features_in, features_out):
            return BROLinear(features_in, features_out, rank_ratio=self.rank_ratio, ridge=self.ridge, generator=generator)

        def conv(channels):
            return BROConv2d(channels, self.kernel_size, rank_ratio=self.rank_ratio, ridge=self.ridge, generator=generator)

        return dense, conv
