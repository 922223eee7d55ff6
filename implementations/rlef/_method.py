"""RLEF as a method of ``codegen.execution_feedback``."""
from __future__ import annotations

from components.feedback_policy import PolicyArm


class RLEF(PolicyArm):
    """PPO on episodes of up to the environment's turn limit, each later turn seeing the feedback of the public test
    (reward +-1 from the private tests at the end, beta times the per-token log-ratio to the initial policy,
    gamma = 1, a turn-level value); acts multi-turn with the real feedback."""

    train_turns = None
    turns = None
