"""The MCMC family's names: tasks, datasets, methods and metrics, as ``module:attr`` strings.

Found by the registry's scan of ``harness/tasks/*/catalogue.py`` (no ``pyproject.toml`` line).
Plain data: importing it imports nothing else.
"""

_T = "mcmc.vectorized"
_V = "harness.tasks.mcmc.vectorized"

CATALOGUE = {
    "tasks": {
        _T: {
            "target": f"{_V}:TASK",
            "about": "run m chains of a sampler from shared initial states and per-chain random streams to n samples "
                     "per chain; time it, count loop iterations per sample, and check the draws' moments",
        },
    },
    "datasets": {
        "standard-normal": {"task": _T, "target": f"{_V}:standard_normal",
                            "about": "N(0, I_d); the seed draws the exact initial states and the chains' streams"},
        "funnel": {"task": _T, "target": f"{_V}:funnel",
                   "about": "Neal's funnel: v ~ N(0, scale²), x_i | v ~ N(0, e^v); exact initial states"},
        "logistic-breast-cancer": {"task": _T, "target": f"{_V}:logistic_breast_cancer",
                                   "about": "Bayesian logistic regression on scikit-learn's bundled breast-cancer "
                                            "(seed-drawn rows, chosen standardised features, N(0, I) prior)"},
        "gp-diabetes": {"task": _T, "target": f"{_V}:gp_diabetes",
                        "about": "GP-hyperparameter posterior on scikit-learn's bundled diabetes (seed-drawn rows): "
                                 "log marginal likelihood by a Cholesky per chain, N(0, I) prior on the log noise, "
                                 "log lengthscale² and log signal variance"},
    },
    "methods": {
        "drmh-fsm": {"task": _T, "target": "implementations.fsm_mcmc:DelayedRejectionFSM",
                     "about": "symmetric delayed-rejection MH as a finite-state machine (Dance et al., ICML 2025)"},
        "ess-fsm": {"task": _T, "target": "implementations.fsm_mcmc:EllipticalSliceFSM",
                    "about": "elliptical slice sampling as a bundled, amortised FSM"},
        "slice-fsm": {"task": _T, "target": "implementations.fsm_mcmc:SliceFSM",
                      "about": "stepping-out slice sampling (two sequential loops and the shrink) as stitched FSMs"},
        "drmh-sync": {"task": _T, "target": "baselines.mcmc:DelayedRejectionSync",
                      "about": "the same DR-MH, each sample's tries a batched while-loop over the chains (vmap)"},
        "ess-sync": {"task": _T, "target": "baselines.mcmc:EllipticalSliceSync",
                     "about": "the same elliptical slice, each sample's shrink loop batched over the chains (vmap)"},
        "slice-sync": {"task": _T, "target": "baselines.mcmc:SliceSync",
                       "about": "the same slice sampler, each of its three loops batched over the chains in turn"},
    },
    "metrics": {
        "wall_s": {"goal": "min", "unit": "s", "about": "wall time of the sampling to n samples per chain: the median of the cell's repeats, after a one-sample warm-up (harness.time_call)"},
        "wall_s_cpu": {"goal": "min", "unit": "s", "about": "the process's CPU time of the same runs (median of the repeats): one thread, so the time the sampler computed, less what other processes on a shared machine took from it"},
        "wall_s_spread": {"goal": "min", "unit": "s", "spread_of": "wall_s", "about": "half the range of the repeats' wall times"},
        "log_wall_s": {"goal": "min", "unit": "ln s", "about": "ln(wall_s): a paired difference is the log of a wall-clock speed-up"},
        "log_cpu_s": {"goal": "min", "unit": "ln s", "about": "ln(wall_s_cpu): a paired difference is the log of the speed-up in CPU time"},
        "log_cpu_s_spread": {"goal": "min", "unit": "ln s", "spread_of": "log_cpu_s", "about": "wall_s_spread / wall_s: the repeats' half-range on the log scale (to first order; the timing helper records the wall time's spread)"},
        "ess_per_s": {"goal": "max", "unit": "1/s", "about": "the smallest multi-chain effective sample size over coordinates (FFT autocorrelations, Geyer's initial positive sequence) per second of wall_s"},
        "mean_iterations": {"goal": "min", "unit": "", "about": "E N: loop iterations (log-density evaluations) per sample per chain"},
        "mean_max_iterations": {"goal": "min", "unit": "", "about": "E max_j N: per sample, the most iterations any chain used, averaged over samples"},
        "sync_iterations": {"goal": "min", "unit": "", "about": "per sample, the iterations the synchronised form runs: E max_j N, or for the slice sampler, whose three loops are synchronised in turn, E Σ_loops max_j N_loop"},
        "r_bound": {"goal": "max", "unit": "×", "about": "R(m) = sync_iterations / E N from this run's iteration counts: the paper's bound on the FSM's speed-up (Equation 13), for the sampler as it is synchronised"},
        "r_bound_n": {"goal": "max", "unit": "×", "about": "the same bound at the run's n samples per chain: Σ_i sync iterations / max_j Σ_i N_ij (the FSM ends when its slowest chain has n samples); tends to r_bound as n grows"},
        "density_calls_per_sample": {"goal": "min", "unit": "", "about": "batched log-density calls per sample per chain (each call evaluates every chain)"},
        "split_rhat": {"goal": "min", "unit": "", "about": "the largest split R-hat over coordinates (reported; not a pass/fail test)"},
        "moment_check": {"goal": "min", "unit": "", "about": "the largest |t| of the chains' first and second moments against the target's (exact, or importance sampling with its own error), over the t threshold at family-wise level 1e-3 across chains; above 1 the cell fails"},
    },
}
