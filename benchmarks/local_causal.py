"""Kernels of the local-causal spec: one Fisher-z test (the unit every method pays for), LocICR answering one pair
with a fresh tester, and global FCI and RFCI on the same instance (a 16-node random DAG with 2 latents, n = 1000)."""
from __future__ import annotations

from functools import lru_cache

from benchmarks._common import CpuKernel


@lru_cache(maxsize=1)
def _instance():
    import contextlib
    import io

    from harness.tasks.base import Context
    from harness.tasks.causal.pairwise import random_network

    with contextlib.redirect_stdout(io.StringIO()):
        return random_network(Context(seed=0, dataset="random-network"), nodes=16, degree=2.0, latents=2,
                              samples=1000, pairs=4)


class FisherZ(CpuKernel):
    """One Fisher-z p-value from the correlation matrix, conditioning on k variables."""

    params = ([0, 3, 8],)
    param_names = ["k"]
    version = "1"

    def setup(self, k):
        self.corr, self.n = _instance().corr, _instance().n
        self.cond = list(range(2, 2 + k))

    def time_pvalue(self, k):
        from harness.tasks.causal.tester import fisher_z_pvalue

        fisher_z_pvalue(self.corr, self.n, 0, 1, self.cond)


class AnswerOnePair(CpuKernel):
    """LocICR on one pair (fresh tester) against one global FCI or RFCI run, which answers any pair."""

    params = (["locicr", "fci", "rfci"],)
    param_names = ["method"]
    version = "2"  # 2: LocICR orients with R4 and R8–R10, FCI without R5–R7; RFCI added

    def setup(self, method):
        from baselines.causal import GlobalFCI, GlobalRFCI
        from harness.tasks.causal.pairwise import Problem
        from implementations.local_causal import LocICR

        self.inst = _instance()
        self.problem = Problem(self.inst.p, 3)
        self.method = {"locicr": LocICR, "fci": GlobalFCI, "rfci": GlobalRFCI}[method]()

    def time_answer(self, method):
        self.method.identify(self.problem, self.inst.tester(), [self.inst.pairs[0]])
