"""The multi-objective family's names: tasks, datasets, methods and metrics, as ``module:attr`` strings.

Found by the registry's scan of ``harness/tasks/*/catalogue.py`` (no ``pyproject.toml`` line).
Plain data: importing it imports nothing else.
"""

_T = "moo.preference"
_P = "harness.tasks.moo.preference"

CATALOGUE = {
    "tasks": {
        _T: {
            "target": f"{_P}:TASK",
            "about": "two objectives F = (f1, f2) and preference rays H_r = a_r f1 - b_r f2; a method is run from a "
                     "shared start once per ray until its budget of oracle calls (F and both gradients at one "
                     "point) is spent, which the task counts and enforces; the task scores the final points' distance "
                     "to the preferred Pareto point (where known), preference violation |H|, Pareto stationarity, "
                     "whether they lie on the front, and the hypervolume of the points",
        },
    },
    "datasets": {
        "exp-toy": {"task": _T, "target": f"{_P}:exp_toy",
                    "about": "Ex. 3.12 of the FOOPS paper: f_1,2(x) = 1 - exp(-||x -/+ c||^2) in R^q with c = 1_q "
                             "(centre: ones) or 1_q/sqrt(q) (centre: unit, Lin et al. 2019's scaling); the seed "
                             "draws the start: near one objective's minimiser (start: hard) or u c + 0.1 N(0, I), "
                             "u ~ U[-1.2, 1.2] (start: drawn); the Pareto set is the segment between -c and c, "
                             "where the task finds the preferred point"},
        "two-digits": {"task": _T, "target": f"{_P}:two_digits",
                       "about": "a two-task network on canvases of two scikit-learn bundled 8x8 digits (top-left, "
                                "bottom-right, overlapping); f_m = cross-entropy of task m on the training canvases; "
                                "the seed draws the pairs, the split and the network's initial weights"},
    },
    "methods": {
        "foops": {"task": _T, "target": "implementations.foops:FOOPS",
                  "about": "FOOPS (Chen et al., ICML 2025): f0 = H^2 plus gamma_t times the smoothed, regularised "
                           "merit-function penalty, first-order (inner y steps, outer x steps)"},
        "linear-scalarisation": {"task": _T, "target": "baselines.moo:LinearScalarisation",
                                 "about": "gradient descent on w1 f1 + w2 f2 (w from the ray, or the best of a sweep "
                                          "of 11 weights by final |H|, each weight a run with the whole budget)"},
        "ferero": {"task": _T, "target": "baselines.moo:FERERO",
                   "about": "FERERO-style preference-constrained descent (Chen et al., 2024a): d minimises "
                            "max_m <grad f_m, d> + |d|^2/2 subject to <grad H, d> = -c H"},
        "pmtl-projected": {"task": _T, "target": "baselines.moo:ProjectedMGDA",
                           "about": "PMTL/EPO-style constrained descent: the MGDA min-norm direction projected onto "
                                    "the linearised constraint <grad H, d> = -c H"},
        "start": {"task": _T, "target": "baselines.moo:Start", "trivial": True,
                  "about": "the trivial answer: the shared start x0, no step taken and no oracle call made"},
        "mgda": {"task": _T, "target": "baselines.moo:MGDA",
                 "about": "MGDA: the min-norm convex combination of the gradients, no preference"},
    },
    "metrics": {
        "violation": {"goal": "min", "unit": "", "about": "|H_r(x_final)| = |a_r f1 - b_r f2|, the preference "
                                                          "constraint's violation, averaged over the rays"},
        "stationarity": {"goal": "min", "unit": "", "about": "Pareto stationarity ||min over the simplex of "
                                                             "sum_m lambda_m grad f_m(x_final)||, averaged over rays"},
        "preference_objective": {"goal": "min", "unit": "", "about": "f0 = H_r(x_final)^2, averaged over the rays"},
        "hypervolume": {"goal": "max", "unit": "", "about": "the exact 2-D hypervolume of the final points (one per "
                                                            "ray; test losses on two-digits) w.r.t. the dataset's "
                                                            "reference point"},
        "mean_objective": {"goal": "min", "unit": "", "about": "(f1 + f2)/2 at the final points, averaged over rays"},
        "preferred_distance": {"goal": "min", "unit": "", "about": "||F(x_final) - F*||, the Euclidean distance in "
                                                                   "objective space to the preferred Pareto point F* "
                                                                   "(a f1 = b f2 on the front), averaged over the "
                                                                   "rays; only where the dataset knows F* (the toy)"},
        "on_front": {"goal": "max", "unit": "", "about": "1 where x_final lies within 1% of ||c|| of the Pareto set "
                                                         "(the toy's segment between -c and c), else 0, averaged over "
                                                         "the rays; only where the dataset knows the Pareto set"},
        "gradient_evaluations": {"goal": "min", "unit": "oracle calls", "role": "budget",
                                 "about": "oracle calls the method made per ray, each F and both gradients at one "
                                          "point (all the runs of a sweep), averaged over the rays"},
    },
}
