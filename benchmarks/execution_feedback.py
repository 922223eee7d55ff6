"""Kernels of the rlef spec (CPU, one thread): one PPO iteration of the toy policy (sampling the episodes, the
turn-level returns, four epochs of updates), the pool of evaluation rollouts, and the n@k estimator."""
from __future__ import annotations

from benchmarks._common import CpuKernel


def _environment():
    from harness.tasks.base import Context
    from harness.tasks.codegen.feedback import hidden_constants

    return hidden_constants(Context(seed=0, dataset="hidden-constants"), problems=100, rollouts=200,
                            initial_max_steps=20)


class PPOIteration(CpuKernel):
    """One PPO iteration on ``batch`` three-turn episodes from a briefly fitted initial policy (20 steps)."""

    params = ([256, 1024],)
    param_names = ["batch"]
    version = "1"

    def setup(self, batch):
        import numpy as np
        import torch

        from components.feedback_policy_torch import initial_policy

        torch.set_num_threads(1)
        self.data = _environment()
        self.policy, _ = initial_policy(self.data.environment, np.random.default_rng(0), max_steps=20)

    def time_iteration(self, batch):
        import copy

        import numpy as np

        from components.feedback_policy_torch import PPOSettings, train_ppo

        train_ppo(copy.deepcopy(self.policy), self.data.environment, 3, np.random.default_rng(1),
                  PPOSettings(episodes=batch, batch=batch))


class EvaluationPool(CpuKernel):
    """The evaluation pool of the default profile: 100 problems x 200 rollouts of up to three turns."""

    version = "1"

    def setup(self):
        import numpy as np
        import torch

        from components.feedback_policy_torch import ToyPolicy, initial_policy

        torch.set_num_threads(1)
        self.data = _environment()
        policy, _ = initial_policy(self.data.environment, np.random.default_rng(0), max_steps=20)
        self.method = ToyPolicy(policy, np.random.default_rng(0))
        self.method.turns = None

    def time_pool(self):
        from harness.tasks.codegen.feedback import run_pool

        run_pool(self.method, self.data, 3)


class SolveRate(CpuKernel):
    """n@k from a pool of 100 problems x 200 rollouts x 3 turns, 200 resamples: 1@3 and 10@100."""

    params = (["1@3", "10@100"],)
    param_names = ["rate"]
    version = "1"

    def setup(self, rate):
        import numpy as np

        rng = np.random.default_rng(0)
        self.public = rng.random((100, 200, 3)) < 0.1
        self.private = self.public & (rng.random((100, 200, 3)) < 0.9)
        self.lengths = rng.integers(1, 4, size=(100, 200))
        self.n, self.k = (1, 3) if rate == "1@3" else (10, 100)

    def time_n_at_k(self, rate):
        import numpy as np

        from harness.tasks.codegen.feedback import n_at_k

        n_at_k(self.public, self.private, self.lengths, self.n, self.k, 200, np.random.default_rng(1))
