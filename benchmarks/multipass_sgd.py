"""Kernels of the multipass-sgd spec: one oracle call on the simplified hard instance (s = Uw over the |U| = 4096
packing vectors, the max term, the guide term and the walk's block), a two-pass SGD run through it, and the exact
population excess (sort the scores above c; 2^-k weights), at the default profile's size (n = 10, d = 2000)."""
from __future__ import annotations

from benchmarks._common import CpuKernel


def _hard_instance(dim: int):
    """The adversarial instance at n = 10 (seed 0) and its constants α, c."""
    from harness.tasks.base import Context
    from harness.tasks.sco.multipass import feldman_blocks, feldman_constants

    context = Context(seed=0, split="test", dataset="hard-adversarial", device="cpu", threads=1, data_dir=None,
                      precision="fp64")
    instance = feldman_blocks(context, n=10, dim=dim, packing=4)  # |U| = 4096 (the spec now runs 2 · 2^n)
    return (instance, *feldman_constants(10 ** -0.5, 20, dim, instance.block))


class FeldmanOracle(CpuKernel):
    """One subgradient call in the walk (w on half of u0's support), and the exact population and empirical excess."""

    params = ([2000],)
    param_names = ["dim"]
    version = "1"

    def setup(self, dim):
        import numpy as np

        from harness.tasks.sco.multipass import FeldmanOracle

        self.instance, self.alpha, self.c = _hard_instance(dim)
        self.oracle = FeldmanOracle(self.instance, self.alpha, self.c)
        self.oracle.seen.update(range(10))  # past the first pass: the oracle walks
        self.w = np.zeros(dim)
        self.w[self.instance.walk_blocks()[0]] = 10 ** -0.5 * self.alpha / self.instance.block ** 0.5
        self.step = 0

    def time_subgradient(self, dim):
        self.step += 1
        self.oracle._last = None  # time the scores, not the cache
        self.oracle(self.w, self.step % 10)

    def time_population_excess(self, dim):
        from harness.tasks.sco.multipass import feldman_losses

        feldman_losses(self.instance, self.alpha, self.c, self.w)


class TwoPassRun(CpuKernel):
    """A whole two-pass single-shuffle SGD run (T = 20) through the adversarial oracle, walk included."""

    params = ([2000],)
    param_names = ["dim"]
    version = "1"

    def setup(self, dim):
        self.instance, self.alpha, self.c = _hard_instance(dim)

    def time_run(self, dim):
        import numpy as np

        from harness.tasks.sco.multipass import FeldmanOracle, Problem, project_ball
        from implementations.multipass_sgd import MultiPassSGD

        oracle = FeldmanOracle(self.instance, self.alpha, self.c)
        problem = Problem(10, dim, 10 ** -0.5, 20, oracle, project_ball)
        MultiPassSGD(epochs=2).run(problem, np.random.default_rng(0))
