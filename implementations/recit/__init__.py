"""ReCIT: Revisiting Continuity of Image Tokens for cross-domain few-shot learning (ICML 2025).

The method, and its token perturbations as batched kernels (timed by ``benchmarks/fewshot.py``).
"""
from implementations.recit._frequency import amplitude_resample, greedy_groups, patch_similarity, patchify, shuffle_tokens
from implementations.recit._method import ReCIT

__all__ = ["ReCIT", "amplitude_resample", "greedy_groups", "patch_similarity", "patchify", "shuffle_tokens"]
