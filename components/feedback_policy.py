"""The arms of ``codegen.execution_feedback``'s hidden-constants comparison (RLEF and its ablations), torch-free
at import: the policy, its initial fit and PPO are in :mod:`components.feedback_policy_torch`, imported when an arm
is fitted."""
from __future__ import annotations


class PolicyArm:
    """An arm of the hidden-constants comparison: the seed's initial policy, trained by PPO on episodes of
    ``train_turns`` replies (None: the environment's turn limit; 0: not trained), acting with ``turns`` replies per
    rollout (1: independent single-turn samples; None: the environment's), reading shuffled feedback when
    ``shuffle_feedback``. Samples at ``temperature`` in training and evaluation; trains for the environment's
    ``training_episodes`` (the same budget for every arm)."""

    train_turns: int | None = 0
    turns: int | None = None
    shuffle_feedback = False

    def __init__(self, batch: int = 1024, lr: float = 3e-3, beta: float = 0.05, temperature: float = 1.0):
        self.batch, self.lr, self.beta, self.temperature = batch, lr, beta, temperature

    def fit(self, environment, context) -> dict:
        import torch

        from components.feedback_policy_torch import PPOSettings, ToyPolicy, seed_initial_policy, train_ppo
        from harness.tasks.base import DataUnavailable
        from harness.tasks.codegen.feedback import HiddenConstantsEnvironment

        if not isinstance(environment, HiddenConstantsEnvironment):
            raise DataUnavailable(f"{type(self).__name__} is a policy of the hidden-constants environment; "
                                  "python-problems needs a served model")
        torch.set_num_threads(max(1, context.threads))
        policy, initial_log = seed_initial_policy(environment, context)
        rng = context.rng("method", type(self).__name__)
        spent = {"episodes": 0, "replies": 0, "log": None, "initial_log": initial_log}
        if self.train_turns != 0:
            settings = PPOSettings(episodes=environment.training_episodes, batch=int(self.batch), lr=float(self.lr),
                                   beta=float(self.beta), temperature=float(self.temperature))
            turns = environment.turns if self.train_turns is None else self.train_turns
            episodes, replies, log = train_ppo(policy, environment, turns, context.rng("ppo"), settings,
                                               shuffle_feedback=self.shuffle_feedback)
            spent.update(episodes=episodes, replies=replies, log=log)
        self.actor_ = ToyPolicy(policy, rng, float(self.temperature), self.shuffle_feedback)
        return spent

    def act(self, observation):
        return self.actor_.act(observation)


