"""RLEF (Gehring, Zheng, Copet, Mella, Cohen & Synnaeve, "RLEF: Grounding Code LLMs in Execution Feedback with
Reinforcement Learning", ICML 2025) on ``codegen.execution_feedback``'s hidden-constants environment.

* :class:`RLEF`: the seed's initial policy trained by PPO on multi-turn episodes whose later turns see the public
  test's result, acting multi-turn.

The policy, its initial fit and PPO are in :mod:`components.feedback_policy_torch` (its RL ablations share them).
"""
from implementations.rlef._method import RLEF

__all__ = ["RLEF"]
