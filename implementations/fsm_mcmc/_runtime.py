"""The finite-state-machine runtime: one step per chain per call, chains synchronised only at the end."""
from __future__ import annotations

from components.mcmc_samplers import SampleRun, Sampler, start

_CHUNK = 16


def run_fsm(sampler: Sampler, problem) -> SampleRun:
    """Step every chain until each has ``problem.n`` samples; keep the first n of each (no length bias).

    A step evaluates the log-density once for the whole batch at the positions the chains requested (amortised
    outside the blocks), then runs the bundled blocks in chronological order: the loop iteration, and for the
    chains whose sample is done, the emission and the next sample's INIT, in the same step.
    """
    import torch

    n = int(problem.n)
    state = start(sampler, problem)
    m = state["x"].shape[0]
    got = torch.zeros(m, dtype=torch.int64)
    everyone = torch.ones(m, dtype=torch.bool)
    finished, positions, phases = [], [], []
    loops = len(sampler.phases) > 1
    while True:
        for _ in range(_CHUNK):  # chains are checked for completion once per chunk of steps, as in the paper's scan
            if loops:
                phases.append(state["phase"])  # the loop each chain's iteration of this step belongs to
            done = fsm_step(sampler, problem, state, everyone)
            finished.append(done)
            positions.append(state["x"])  # the blocks replace tensors, never write into them: no copy needed
            got += done
        if int(got.min()) >= n:
            break
    return first_samples(torch.stack(finished), torch.stack(positions), n, torch.stack(phases) if loops else None,
                         sampler.phases)


def fsm_step(sampler: Sampler, problem, state: dict, everyone):
    """One step of every chain: the log-density once for the batch, the loop block, and for the chains whose sample
    is done (returned as a mask; their draw is ``state["x"]``) the next sample's INIT, bundled in the same step
    (:meth:`Sampler.bundled_step`)."""
    return sampler.bundled_step(state, problem.log_density(state["req"]), everyone)


def first_samples(finished, positions, n: int, phases=None, loops=(1,)) -> SampleRun:
    """Each chain's first n samples from the per-step flags (steps, m) and positions (steps, m, d), and the steps
    each took (the steps since the chain's previous sample), and those steps split by the sampler's ``loops``: all in
    the one loop if there is one, else counted from the per-step loop of each chain, ``phases`` (steps, m)."""
    import torch

    steps, m = finished.shape
    chain, every = finished.T.nonzero(as_tuple=True)  # each chain's samples, ordered by chain, then step
    per_chain = torch.bincount(chain, minlength=m)
    if int(per_chain.min()) < n:
        raise ValueError(f"first_samples: a chain has {int(per_chain.min())} samples; expected at least n = {n}")
    step = every[(per_chain.cumsum(0) - per_chain)[:, None] + torch.arange(n)]  # (m, n): the first n of each
    draws = positions[step, torch.arange(m)[:, None]]
    previous = torch.cat([torch.full((m, 1), -1, dtype=step.dtype), step[:, :-1]], dim=1)
    iterations = step - previous
    split = None
    if len(loops) == 1:  # one loop: every step is in it
        split = iterations[:, :, None]
    elif phases is not None:
        counts = []
        for loop in loops:  # steps of that loop up to and including each step, per chain: (m, steps + 1)
            cum = torch.cat([torch.zeros(m, 1, dtype=torch.int64), (phases.T == loop).to(torch.int64).cumsum(1)], 1)
            counts.append(cum.gather(1, step + 1) - cum.gather(1, previous + 1))
        split = torch.stack(counts, dim=2)
    return SampleRun(draws, iterations, steps, split)
