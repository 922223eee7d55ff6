"""FSM-MCMC: Dance, Glaser, Orbanz & Adams, "Efficiently Vectorized MCMC on Modern Accelerators" (ICML 2025).

Each sampler's while-loops are cut into blocks (components/mcmc_samplers.py); one step function runs every chain's
current block, so a chain that needs few iterations for a sample goes straight on to its next sample instead of
waiting for the slowest chain, and the chains synchronise only at the end:

* :func:`fsm_step`: one step of every chain (timed by ``benchmarks/mcmc.py``);
* :func:`run_fsm`: the runtime (log-density once per step, outside the blocks; bundled INIT; the first n samples
  of each chain kept);
* :class:`DelayedRejectionFSM`, :class:`EllipticalSliceFSM`, :class:`SliceFSM`: the methods.

Torch-free at import.
"""
from implementations.fsm_mcmc._method import DelayedRejectionFSM, EllipticalSliceFSM, SliceFSM
from implementations.fsm_mcmc._runtime import first_samples, fsm_step, run_fsm

__all__ = ["DelayedRejectionFSM", "EllipticalSliceFSM", "SliceFSM", "first_samples", "fsm_step", "run_fsm"]
