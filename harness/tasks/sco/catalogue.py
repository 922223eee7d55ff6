"""The SCO family's names: tasks, datasets, methods and metrics, as ``module:attr`` strings.

Found by the registry's scan of ``harness/tasks/*/catalogue.py`` (no ``pyproject.toml`` line).
Plain data: importing it imports nothing else.
"""

_T = "sco.multipass"
_M = "harness.tasks.sco.multipass"

CATALOGUE = {
    "tasks": {
        _T: {
            "target": f"{_M}:TASK",
            "about": "run an SGD variant (step size η, T steps over n training samples) through the instance's "
                     "subgradient oracle; score the population excess (exact), the empirical excess and the "
                     "generalisation gap of the last iterate and of suffix averages, per epoch",
        },
    },
    "datasets": {
        "feldman-blocks": {
            "task": _T, "target": f"{_M}:feldman_blocks",
            "about": "the paper's hard non-smooth instance in the note's CPU simplification (App. B without the "
                     "shift): a random 7d/16-sparse packing of packing · 2^n vectors, Bernoulli(½) subsets of it as "
                     "samples, a Feldman-type max term plus a √B-normalised block guide term whose weight α and "
                     "floor c are set for the (η₀, T₀) the dataset names (design_step_exponent, design_epochs), so "
                     "every method runs on the same function; oracle 'adversarial' (sample-dependent: walks to a "
                     "packing vector no training sample holds, from the second pass) or 'lazy' (0 wherever 0 is a "
                     "subgradient)",
        },
        "least-squares-sphere": {
            "task": _T, "target": f"{_M}:least_squares_sphere",
            "about": "smooth control: ½(⟨w,x⟩ − y)², x uniform on the unit sphere of R^d, y = ⟨w*,x⟩ + σ·Rademacher, "
                     "‖w*‖ = 1; population excess ‖w − w*‖²/(2d) exactly",
        },
    },
    "methods": {
        "multipass-sgd": {
            "task": _T, "target": "implementations.multipass_sgd:MultiPassSGD",
            "about": "projected SGD from 0 with constant η = n^(−step_exponent), K epochs, single-shuffle "
                     "(one permutation reused) or with replacement (T = Kn uniform draws)",
        },
        "zero-point": {
            "task": _T, "target": "baselines.zero_point:ZeroPoint", "trivial": True,
            "about": "the trivial answer: the starting point w0 = 0, no step taken (T = 0); a population minimiser "
                     "of the hard instance, excess 1/(2d) on the smooth control",
        },
        "one-pass-sgd": {
            "task": _T, "target": "baselines.one_pass_sgd:OnePassSGD",
            "about": "projected SGD from 0 with constant η = n^(−step_exponent), one pass over a random permutation",
        },
    },
    "metrics": {
        "excess": {"goal": "min", "unit": "",
                   "about": "population excess loss F(w_T) − min F of the last iterate, computed exactly"},
        "excess_suffix": {"goal": "min", "unit": "",
                          "about": "population excess of the last epoch's average (τ = n suffix average)"},
        "excess_average": {"goal": "min", "unit": "",
                           "about": "population excess of the average of all T iterates (τ = T)"},
        "train_excess": {"goal": "min", "unit": "",
                         "about": "empirical excess F_S(w_T) − min over the unit ball of F_S, of the last iterate"},
        "gen_gap": {"goal": "min", "unit": "",
                    "about": "generalisation gap F(w_T) − F_S(w_T) of the last iterate"},
        "steps": {"goal": "min", "unit": "oracle calls", "role": "budget",
                  "about": "T, the number of SGD steps (one subgradient oracle call each)"},
        "prediction_error": {"goal": "min", "unit": "", "role": "certificate",
                             "about": "|measured excess − the task's own account of it|: on the hard instance the "
                                      "construction's closed form ½ max{0, ηα·walked/√B − c}/√d for the walk the "
                                      "oracle made, on the smooth control projected SGD replayed on the indices the "
                                      "method asked for; 0 up to rounding"},
    },
}
