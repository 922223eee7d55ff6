"""A language model as a solver of ``reasoning.esolang``: the subject of Han, Pari, Gershman & Agrawal, "Position:
General Intelligence Requires Reward-based Pretraining" (ICML 2025), whose probe asks models for programs in
esoteric languages (and, here, for each task's Python twin).

* :class:`LocalModel`: a model served by an OpenAI-compatible endpoint the user runs locally.

Torch-free and standard library only at import.
"""
from implementations.esolang_model._method import LocalModel

__all__ = ["LocalModel"]
