"""DFN + SAM-SVN: "Adapter Naturally Serves as Decoupler for Cross-Domain Few-Shot Semantic Segmentation" (Tong et al., ICML 2025)."""
from implementations.dfn._method import DomainFeatureNavigator

__all__ = ["DomainFeatureNavigator"]
