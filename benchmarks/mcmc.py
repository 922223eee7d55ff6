"""Kernels of the fsm-mcmc spec: one FSM step (log-density once for the batch, the DR-MH block, the bundled INIT)
against one synchronised loop iteration (log-density on the whole batch, the block) of delayed-rejection MH, at
m = 16 and 1024 chains, on N(0,1) and on the GP-hyperparameter posterior (40 diabetes rows: a 40 × 40 Cholesky
per chain). Their ratio is the per-iteration price of the FSM's run-and-mask INIT; the speed-up over a whole run
is R(m) over that price. torch is imported in ``setup`` only."""
from __future__ import annotations

from benchmarks._common import CpuKernel


class DelayedRejectionStep(CpuKernel):
    """One FSM step vs one synchronised iteration of DR-MH (step 0.1, 100 tries), float64, one thread."""

    params = (["fsm", "sync"], ["normal", "gp"], [16, 1024])
    param_names = ["form", "target", "chains"]
    version = "1"

    def setup(self, form, target, chains):
        import torch

        from baselines.mcmc import synchronised_iteration
        from components.mcmc_samplers import DelayedRejectionMH, start
        from harness.tasks.base import Context
        from harness.tasks.mcmc.vectorized import gp_diabetes, standard_normal
        from implementations.fsm_mcmc import fsm_step

        torch.set_num_threads(1)
        context = Context(seed=0, split="test", dataset=target, device="cpu", threads=1, data_dir=None, precision="fp64")
        loader = gp_diabetes if target == "gp" else standard_normal
        extra = {"rows": 40, "draws": 4000} if target == "gp" else {}
        self.problem = loader(context, chains=chains, samples=2, **extra).chains
        self.sampler = DelayedRejectionMH(step=0.1)
        self.state = start(self.sampler, self.problem)
        self.everyone = torch.ones(chains, dtype=torch.bool)
        self.step = fsm_step if form == "fsm" else synchronised_iteration

    def time_iteration(self, form, target, chains):
        self.step(self.sampler, self.problem, self.state, self.everyone)
