"""The FSM forms of the three samplers as methods of ``mcmc.vectorized``."""
from __future__ import annotations

from components.mcmc_samplers import SampleRun, build_sampler
from implementations.fsm_mcmc._runtime import run_fsm


class _FSMSampler:
    kind = ""

    def __init__(self, **params):
        self.params = params

    def sample(self, problem) -> SampleRun:
        return run_fsm(build_sampler(self.kind, problem, self.params), problem)


class DelayedRejectionFSM(_FSMSampler):
    """Symmetric delayed-rejection MH as a one-state FSM (condensed), the log-density amortised per step."""

    kind = "drmh"

    def __init__(self, step: float = 0.1, max_tries: int = 100):
        super().__init__(step=step, max_tries=max_tries)


class EllipticalSliceFSM(_FSMSampler):
    """Elliptical slice as an FSM (INIT, SHRINK, DONE), bundled, the log-density amortised per step."""

    kind = "ess"

    def __init__(self):
        super().__init__()


class SliceFSM(_FSMSampler):
    """The stepping-out slice sampler as stitched FSMs (step out down, step out up, shrink), bundled, amortised."""

    kind = "slice"

    def __init__(self, width: float = 1.0):
        super().__init__(width=width)
