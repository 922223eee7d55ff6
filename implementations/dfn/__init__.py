"""DFN + SAM-SVN: "Adapter Naturally Serves as Decoupler for Cross-Domain Few-Shot Semantic Segmentation" (Tong et al., ICML 2025).

The method, and ``sam_step`` (its adapter update under plain, SAM and SAM-SVN steps, timed
by ``benchmarks/fewshot.py``). ``sam_step`` lives in a module that imports torch at its top,
so it is loaded on first use: importing this package stays torch-free (``harness validate``).
"""
from implementations.dfn._method import DomainFeatureNavigator

__all__ = ["DomainFeatureNavigator", "sam_step"]


def __getattr__(name: str):
    if name == "sam_step":
        from implementations.dfn._net import sam_step

        return sam_step
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
