"""The causal family's names (``causal.pairwise``), found by the registry's scan of ``harness/tasks/*/catalogue.py``.

Plain data: importing it imports nothing else.
"""

_T = "causal.pairwise"
_V = "harness.tasks.causal.pairwise"

CATALOGUE = {
    # the task reads pgmpy's bundled networks and draws DAGs with networkx; FCI and PC are causal-learn's
    # (import name causallearn): `pip install -e '.[causal]'`
    "requires": {"extra": "causal", "modules": ["pgmpy", "causallearn", "networkx"]},
    "tasks": {
        _T: {"target": f"{_V}:TASK",
             "about": "label pairs (X, Y) of observed variables as explicit, implicit, possible or non-ancestors "
                      "relative to the true PAG (latent variables), through one counted, cached CI tester"},
    },
    "datasets": {
        "random-network": {"task": _T, "target": f"{_V}:random_network",
                           "about": "a random networkx DAG, latents among nodes with ≥ 2 children, linear Gaussian "
                                    "data, Fisher-z tests; the seed draws structure, latents, data and pairs"},
        "bnlearn-network": {"task": _T, "target": f"{_V}:bnlearn_network",
                            "about": "a bnlearn network read from pgmpy's bundled .bif.gz, latents among nodes "
                                     "with ≥ 2 children; data: gaussian (linear SEM on the structure, Fisher z) or "
                                     "discrete (the network's own CPDs, G²)"},
    },
    "methods": {
        "locicr": {"task": _T, "target": "implementations.local_causal:LocICR",
                   "about": "LocICR (Li et al., ICML 2025): local structure MB-by-MB, then Theorems 1–3"},
        "fci": {"task": _T, "target": "baselines.causal:GlobalFCI",
                "about": "global FCI (causal-learn) and the PAG criteria"},
        "rfci": {"task": _T, "target": "baselines.causal:GlobalRFCI",
                 "about": "global RFCI (Colombo et al. 2012; implemented here, causal-learn has none) and the PAG "
                          "criteria"},
        "pc": {"task": _T, "target": "baselines.causal:GlobalPC",
               "about": "global PC (causal-learn; ignores latents) and the same criteria on its CPDAG"},
        "mb-fci": {"task": _T, "target": "baselines.causal:LocalMBFCI",
                   "about": "local: MB(X) by total conditioning (or IAMB), FCI over MB(X) ∪ {X, Y}, the criteria there"},
        "always-non-ancestor": {"task": _T, "target": "baselines.causal:AlwaysNonAncestor", "trivial": True,
                                "about": "trivial: every pair a non-ancestor, no CI test"},
        "always-possible": {"task": _T, "target": "baselines.causal:AlwaysPossible", "trivial": True,
                            "about": "trivial: every pair a possible ancestor, no CI test"},
        "majority": {"task": _T, "target": "baselines.causal:MajorityClass", "trivial": True,
                     "about": "trivial: every pair the relation most frequent among the labelled pairs of 2 "
                              "independent held-out instances of the dataset's generator, no CI test"},
    },
    "metrics": {
        "weighted_f1": {"goal": "max", "unit": "", "about": "per-relation F1 weighted by the relation's share of the true labels (4 relations)"},
        "accuracy": {"goal": "max", "unit": "", "about": "share of pairs labelled as the true PAG says"},
        "f1_non_ancestor": {"goal": "max", "unit": "", "about": "F1 of the relation non-ancestor (left out of a cell where no pair is one or is called one)"},
        "f1_possible": {"goal": "max", "unit": "", "about": "F1 of the relation possible ancestor (as f1_non_ancestor)"},
        "f1_explicit": {"goal": "max", "unit": "", "about": "F1 of the relation explicit invariant ancestor (as f1_non_ancestor)"},
        "f1_implicit": {"goal": "max", "unit": "", "about": "F1 of the relation implicit invariant ancestor (as f1_non_ancestor)"},
        "blanket_recall": {"goal": "max", "unit": "", "about": "local methods: share of X's true Markov blanket (oracle total conditioning) in the blanket found, mean over pairs"},
        "blanket_precision": {"goal": "max", "unit": "", "about": "local methods: share of the blanket found for X that is in X's true one, mean over pairs"},
        "ci_tests": {"goal": "min", "unit": "", "role": "budget", "about": "distinct CI tests to answer one pair (global methods: their one run; local: mean per pair)"},
        "log_ci_tests": {"goal": "min", "unit": "", "about": "ln ci_tests: a paired difference is the log of a ratio of test counts"},
        "seconds": {"goal": "min", "unit": "s", "about": "wall time to answer one pair (global: the run; local: mean per pair), median of 3 runs on a fresh tester after 1 untimed"},
        "seconds_cpu": {"goal": "min", "unit": "s", "about": "CPU time of the same runs (median of 3)"},
        "seconds_spread": {"goal": "min", "unit": "s", "spread_of": "seconds", "about": "half the range of the 3 timed runs' wall times (local: mean over pairs)"},
    },
}
