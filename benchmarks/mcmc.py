"""Kernels of the fsm-mcmc spec: one FSM step (log-density once for the batch, the DR-MH try and the next sample's
INIT, bundled) against one synchronised loop iteration (log-density on the whole batch, the try) of delayed-rejection
MH, at m = 16, 128 and 1024 chains, on N(0,1) and on the GP-hyperparameter posterior (40 diabetes rows: a 40 × 40
Cholesky per chain). Their ratio is the per-iteration price of the FSM's run-and-mask INIT; the speed-up over a
whole run is R(m) over that price. torch is imported in ``setup`` only.

The ratio itself, both forms timed in the same process in alternating rounds (CPU time, one thread, a warm-up
excluded; the median over rounds of each round's ratio), and the torch ops each step dispatches:

    python -m benchmarks.mcmc                      # N(0,1) and the GP posterior at m = 128 and 1024
    python -m benchmarks.mcmc --targets normal --chains 16 128 1024 --rounds 31
"""
from __future__ import annotations

import argparse
import statistics
import time

from benchmarks._common import CpuKernel


class DelayedRejectionStep(CpuKernel):
    """One FSM step vs one synchronised iteration of DR-MH (step 0.1, 100 tries), float64, one thread."""

    params = (["fsm", "sync"], ["normal", "gp"], [16, 128, 1024])
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


def _per_step_s(kernel: DelayedRejectionStep, calls: int) -> float:
    began = time.process_time()
    for _ in range(calls):
        kernel.time_iteration(None, None, None)
    return (time.process_time() - began) / calls


def _ops_per_step(kernel: DelayedRejectionStep, calls: int = 20) -> int:
    """The torch ops one step dispatches from Python (top-level aten calls, not the ones they make inside)."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(calls):
            kernel.time_iteration(None, None, None)
    top = [e for e in prof.events() if e.cpu_parent is None and e.name.startswith("aten::")]
    return round(len(top) / calls)


def step_cost_ratio(target: str, chains: int, rounds: int, seconds_per_round: float = 0.05) -> dict:
    """Per-step CPU time of both forms and their ratio fsm / sync, from ``rounds`` alternating rounds (which form
    goes first alternates too) after a warm-up round; medians over rounds."""
    kernels = {}
    for form in ("fsm", "sync"):
        kernels[form] = DelayedRejectionStep()
        kernels[form].setup(form, target, chains)
    first = _per_step_s(kernels["sync"], 3)  # warm-up, and the size of a round
    calls = max(2, round(seconds_per_round / max(first, 1e-6)))
    for kernel in kernels.values():
        _per_step_s(kernel, calls)
    times: dict[str, list[float]] = {"fsm": [], "sync": []}
    for r in range(rounds):
        for form in (("fsm", "sync") if r % 2 == 0 else ("sync", "fsm")):
            times[form].append(_per_step_s(kernels[form], calls))
    ratios = sorted(f / s for f, s in zip(times["fsm"], times["sync"]))
    quarter = len(ratios) // 4
    return {"fsm_us": 1e6 * statistics.median(times["fsm"]), "sync_us": 1e6 * statistics.median(times["sync"]),
            "ratio": statistics.median(ratios), "ratio_iqr": (ratios[quarter], ratios[-1 - quarter]),
            "fsm_ops": _ops_per_step(kernels["fsm"]), "sync_ops": _ops_per_step(kernels["sync"]), "calls": calls}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Per-step CPU time of the FSM DR-MH step against the synchronised "
                                                 "iteration (one thread, float64).")
    parser.add_argument("--targets", nargs="+", default=["normal", "gp"], choices=["normal", "gp"])
    parser.add_argument("--chains", nargs="+", type=int, default=[128, 1024])
    parser.add_argument("--rounds", type=int, default=21)
    args = parser.parse_args(argv)
    print("# CPU time per step, one thread; medians over alternating rounds; ratio = median of the rounds' fsm/sync "
          "(interquartile range); ops = torch ops dispatched per step", flush=True)
    for target in args.targets:
        for chains in args.chains:
            c = step_cost_ratio(target, chains, args.rounds)
            print(f"{target:6s} m = {chains:5d}: fsm {c['fsm_us']:9.1f} us ({c['fsm_ops']:3d} ops)  sync "
                  f"{c['sync_us']:9.1f} us ({c['sync_ops']:3d} ops)  fsm/sync {c['ratio']:.3f} "
                  f"[{c['ratio_iqr'][0]:.3f}, {c['ratio_iqr'][1]:.3f}]  ({args.rounds} rounds of {c['calls']} steps)",
                  flush=True)


if __name__ == "__main__":
    main()
