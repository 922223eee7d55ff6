"""The synchronised forms of the MCMC samplers: each sample's while-loop batched over the m chains, the body run
on every chain until the last one finishes (what vmap does with a data-dependent while-loop)."""
from __future__ import annotations

from components.mcmc_samplers import SampleRun, Sampler, build_sampler, start


def run_synchronised(sampler: Sampler, problem) -> SampleRun:
    """n samples, one at a time: INIT on every chain, then each loop of the sampler (in program order) as a batched
    while-loop whose body evaluates the log-density on the whole batch while any chain is still in that loop."""
    import torch

    n = int(problem.n)
    state = start(sampler, problem)
    m, d = state["x"].shape
    draws = torch.empty(m, n, d, dtype=torch.float64)
    loops = torch.zeros(m, n, len(sampler.phases), dtype=torch.int64)
    everyone = torch.ones(m, dtype=torch.bool)
    one_loop = len(sampler.phases) == 1  # then every chain is always in it: no phase test per iteration
    calls = 0
    for i in range(n):
        if i:
            sampler.begin(state, everyone)
        active = everyone
        for p, phase in enumerate(sampler.phases):
            used = torch.zeros(m, dtype=torch.int64)  # this loop's iterations per chain, for this sample
            while True:
                live = active if one_loop else active & (state["phase"] == phase)
                if not bool(live.any()):
                    break
                done = synchronised_iteration(sampler, problem, state, live)
                calls += 1
                used += live
                active = active & ~done
            loops[:, i, p] = used
        draws[:, i] = state["x"]
    return SampleRun(draws, loops.sum(-1), calls, loops)


def synchronised_iteration(sampler: Sampler, problem, state: dict, live):
    """One body iteration of a batched while-loop: the log-density on the whole batch (as vmap computes it), the
    block applied to the ``live`` chains; returns the chains whose sample is done."""
    return sampler.advance(state, problem.log_density(state["req"]), live)


class _SyncSampler:
    kind = ""

    def __init__(self, **params):
        self.params = params

    def sample(self, problem) -> SampleRun:
        return run_synchronised(build_sampler(self.kind, problem, self.params), problem)


class DelayedRejectionSync(_SyncSampler):
    """Symmetric delayed-rejection MH, its tries as one batched while-loop per sample."""

    kind = "drmh"

    def __init__(self, step: float = 0.1, max_tries: int = 100):
        super().__init__(step=step, max_tries=max_tries)


class EllipticalSliceSync(_SyncSampler):
    """Elliptical slice, its shrink loop batched per sample (BlackJAX's ESS under vmap)."""

    kind = "ess"

    def __init__(self):
        super().__init__()


class SliceSync(_SyncSampler):
    """The stepping-out slice sampler, its three loops each batched in turn per sample."""

    kind = "slice"

    def __init__(self, width: float = 1.0):
        super().__init__(width=width)
