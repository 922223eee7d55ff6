"""Kernels of the semivectorial-bilevel spec: one FOOPS outer step (K inner steps on the smoothed merit and the x
step) on the two-digit network at the default size, the network's two losses and gradients, and a whole FOOPS run on
the toy problem in R^20."""
from __future__ import annotations

from benchmarks._common import CpuKernel


class TwoDigitNetwork(CpuKernel):
    """The network's two full-batch losses and their gradients, and one FOOPS outer step (K = 5) on it."""

    params = ([600],)
    param_names = ["train"]
    version = "2"  # 2: foops() no longer evaluates F at its final x (the task does, outside the budget): 7 calls, not 8

    def setup(self, train):
        from harness.tasks.base import Context
        from harness.tasks.moo.preference import two_digits

        context = Context(seed=0, split="test", dataset="two-digits", device="cpu", threads=1, data_dir=None,
                          precision="fp64")
        self.problem = two_digits(context, train=train, test=50, rays=[[1, 1]]).problems[0]

    def time_objectives(self, train):
        self.problem.objectives(self.problem.x0)

    def time_foops_outer_step(self, train):
        from implementations.foops import foops

        foops(self.problem.objectives, self.problem.x0, self.problem.ray, 1, tau=0.05, l=1.0, inner_steps=5,
              beta=0.1, alpha=0.05)


class ToyRun(CpuKernel):
    """200 FOOPS outer steps (K = 20) on Ex. 3.12 in R^20."""

    params = ([20],)
    param_names = ["dim"]
    version = "2"  # 2: foops() no longer evaluates F at its final x: 200 x 22 calls, not one more

    def setup(self, dim):
        import numpy as np

        self.x0 = np.ones(dim) * 0.5

    def time_foops(self, dim):
        from harness.tasks.moo.preference import exp_objectives
        from implementations.foops import foops

        foops(exp_objectives, self.x0, (5.0, 4.0), 200)
