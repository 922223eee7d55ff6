"""The layer families BRO is compared with, as methods of ``robustness.certified`` (torch-free at import).

Each builds the same network (:class:`components.lipschitz.LipschitzClassifier`) from its
own layers (:mod:`baselines.lipschitz_layers`): Cayley, SOC, the exact matrix exponential, AOL, and an unconstrained
network that claims no certificate (the sanity row: certified accuracy 0 by construction).
"""
from __future__ import annotations

from components.lipschitz import LA_DEFAULTS, LipschitzClassifier


class CayleyNet(LipschitzClassifier):
    """Cayley orthogonal layers: dense W = (I + A)⁻¹(I − A), the convolution per frequency (Trockman & Kolter 2021)."""

    def __init__(self, *, kernel_size: int = 3, arch: str = "dense", width: int = 64, depth: int = 4, channels: int = 16, stages: int = 5,
                 head: str = "lln", loss: str = "la", la_temperature: float = 0.75,
                 la_offset: float = LA_DEFAULTS["la_offset"], la_exponent: float = 5.0, la_alpha: float = 0.25):
        super().__init__(arch=arch, width=width, depth=depth, channels=channels, stages=stages, head=head, loss=loss,
                         la_temperature=la_temperature, la_offset=la_offset, la_exponent=la_exponent, la_alpha=la_alpha)
        self.kernel_size = int(kernel_size)

    def layers(self, generator):
        from baselines.lipschitz_layers import CayleyConv2d, CayleyLinear

        return (lambda i, o: CayleyLinear(i, o, generator=generator),
                lambda c: CayleyConv2d(c, self.kernel_size, generator=generator))


class SOCNet(LipschitzClassifier):
    """Skew-orthogonal layers: dense exp(A − Aᵀ), the convolution as a truncated exponential series (Singla & Feizi 2021)."""

    def __init__(self, *, kernel_size: int = 3, train_terms: int = 5, eval_terms: int = 12, arch: str = "dense",
                 width: int = 64, depth: int = 4, channels: int = 16, stages: int = 5, head: str = "lln", loss: str = "la",
                 la_temperature: float = 0.75, la_offset: float = LA_DEFAULTS["la_offset"], la_exponent: float = 5.0,
                 la_alpha: float = 0.25):
        super().__init__(arch=arch, width=width, depth=depth, channels=channels, stages=stages, head=head, loss=loss,
                         la_temperature=la_temperature, la_offset=la_offset, la_exponent=la_exponent, la_alpha=la_alpha)
        self.kernel_size, self.train_terms, self.eval_terms = int(kernel_size), int(train_terms), int(eval_terms)

    def layers(self, generator):
        from baselines.lipschitz_layers import SOCConv2d, SOCLinear

        return (lambda i, o: SOCLinear(i, o, generator=generator),
                lambda c: SOCConv2d(c, self.kernel_size, train_terms=self.train_terms, eval_terms=self.eval_terms,
                                    generator=generator))


class MatrixExpNet(SOCNet):
    """Dense layers W = exp(P − Pᵀ) by the exact matrix exponential: the orthogonal map SOC's truncated series
    approximates, named by what it computes (SOC's own construction is the series of its convolution); dense only."""

    def layers(self, generator):
        from baselines.lipschitz_layers import SOCLinear

        if self.arch != "dense":
            raise ValueError(f"matrix-exp builds dense networks only (the convolution is SOC's series); got arch {self.arch!r}")
        return (lambda i, o: SOCLinear(i, o, generator=generator), None)


class AOLNet(LipschitzClassifier):
    """Almost-orthogonal layers: W·diag(Σⱼ|WᵀW|ᵢⱼ)^(-1/2) (Prach & Lampert 2022)."""

    def __init__(self, *, kernel_size: int = 3, arch: str = "dense", width: int = 64, depth: int = 4, channels: int = 16, stages: int = 5,
                 head: str = "lln", loss: str = "la", la_temperature: float = 0.75,
                 la_offset: float = LA_DEFAULTS["la_offset"], la_exponent: float = 5.0, la_alpha: float = 0.25):
        super().__init__(arch=arch, width=width, depth=depth, channels=channels, stages=stages, head=head, loss=loss,
                         la_temperature=la_temperature, la_offset=la_offset, la_exponent=la_exponent, la_alpha=la_alpha)
        self.kernel_size = int(kernel_size)

    def layers(self, generator):
        from baselines.lipschitz_layers import AOLConv2d, AOLLinear

        return (lambda i, o: AOLLinear(i, o, generator=generator),
                lambda c: AOLConv2d(c, self.kernel_size, generator=generator))


class UnconstrainedNet(LipschitzClassifier):
    """The same network with plain linear and conv layers: no certificate (the sanity row; clean accuracy's ceiling)."""

    certified = False

    def __init__(self, *, kernel_size: int = 3, arch: str = "dense", width: int = 64, depth: int = 4, channels: int = 16, stages: int = 5,
                 head: str = "lln", loss: str = "ce", la_temperature: float = 0.75,
                 la_offset: float = LA_DEFAULTS["la_offset"], la_exponent: float = 5.0, la_alpha: float = 0.25):
        super().__init__(arch=arch, width=width, depth=depth, channels=channels, stages=stages, head=head, loss=loss,
                         la_temperature=la_temperature, la_offset=la_offset, la_exponent=la_exponent, la_alpha=la_alpha)
        self.kernel_size = int(kernel_size)

    def layers(self, generator):
        from baselines.lipschitz_layers import PlainConv2d, PlainLinear

        return (lambda i, o: PlainLinear(i, o), lambda c: PlainConv2d(c, self.kernel_size))
