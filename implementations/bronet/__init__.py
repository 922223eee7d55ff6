"""BRONet: "Enhancing Certified Robustness via Block Reflector Orthogonal Layers and Logit Annealing Loss" (Lai et al., ICML 2025).

The method (:class:`BRONet`), and its layers ``BROLinear``, ``BROConv2d``, ``BROConv2dStride2`` and
``block_reflector`` (timed by ``benchmarks/robustness.py``). The layers live in a module that
imports torch at its top, so they are loaded on first use: importing this package stays
torch-free (``harness validate``).
"""
from implementations.bronet._method import BRONet

__all__ = ["BRONet", "BROLinear", "BROConv2d", "BROConv2dStride2", "block_reflector"]


def __getattr__(name: str):
    if name in ("BROLinear", "BROConv2d", "BROConv2dStride2", "block_reflector"):
        from implementations.bronet import layers

        return getattr(layers, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
