"""ReCIT: Revisiting Continuity of Image Tokens for cross-domain few-shot learning (ICML 2025)."""
from implementations.recit._method import ReCIT

__all__ = ["ReCIT"]
