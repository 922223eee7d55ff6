"""The online family's names: tasks, datasets, methods and metrics, as ``module:attr`` strings.

Found by the registry's scan of ``harness/tasks/*/catalogue.py`` (no ``pyproject.toml`` line).
Plain data: importing it imports nothing else.
"""

_S = "online.ski_rental"
_SM = "harness.tasks.online.ski_rental"
_C = "online.scheduling"
_CM = "harness.tasks.online.scheduling"

CATALOGUE = {
    "tasks": {
        _S: {
            "target": f"{_SM}:TASK",
            "about": "continuous ski rental with a learned predictor: fit and calibrate on train/validation, pick a "
                     "buying day per test instance; E[ALG/OPT] beside the paper's bound at the measured calibration error",
        },
        _C: {
            "target": f"{_CM}:TASK",
            "about": "n unit jobs, priority revealed after θ of processing: run the method's Algorithm-3 plan; "
                     "E[ALG − OPT]/n and the L/M/N decomposition beside Thm 4.3 (App. B form)",
        },
    },
    "datasets": {
        "ski-smooth": {"task": _S, "target": f"{_SM}:ski_smooth",
                       "about": "design A: Z = b·exp(wᵀX + σε), X ~ N(0, I); P(Z > b | X) = Φ(wᵀX/σ) known"},
        "ski-bimodal": {"task": _S, "target": f"{_SM}:ski_bimodal",
                        "about": "design B (Lemma 3.6): Z ~ U(2b, 4b) w.p. sigmoid(logit(base) + γwᵀX), else U(0.1b, 0.5b); "
                                 "γ = 0 is the constant-probability family"},
        "ski-csv": {"task": _S, "target": f"{_SM}:ski_csv",
                    "about": "trip durations and numeric features from DATA_DIR/citibike/<file> (the paper's CitiBike "
                             "June 2015 rides), seeded 64/16/20 split"},
        "sched-synthetic": {"task": _C, "target": f"{_CM}:sched_synthetic",
                            "about": "P(y = 1 | X) = sigmoid(logit(base) + γwᵀX), X ~ N(0, I); draws of n jobs from a test pool"},
        "sched-csv": {"task": _C, "target": f"{_CM}:sched_csv",
                      "about": "the UCI sepsis survival records from DATA_DIR/sepsis/<file> (death = high priority), "
                               "alive class undersampled as the paper's notebook"},
    },
    "methods": {
        "calibrated": {"task": _S, "target": "implementations.calibrated_advice:CalibratedSkiRental",
                       "about": "Algorithm 1 (Shen, Vitercik, Wikum, ICML 2025) on a logistic predictor calibrated on "
                                "the validation split (histogram binning, Platt or isotonic), α estimated there"},
        "break-even": {"task": _S, "target": "baselines.ski_rental:BreakEven", "trivial": True,
                       "about": "buy on day b: deterministic, 2-competitive; ignores every feature (the trivial "
                                "answer a prediction must beat)"},
        "randomized": {"task": _S, "target": "baselines.ski_rental:RandomizedSkiRental",
                       "about": "Karlin et al.: buy day with density e^{k/b}/(b(e−1)) on [0, b], e/(e−1)-competitive"},
        "robust-trust": {"task": _S, "target": "baselines.ski_rental:RobustSkiRental",
                         "about": "Purohit et al. 2018: buy on day λb if the regression predicts Z ≥ b, else b/λ"},
        "binary-predictor": {"task": _S, "target": "baselines.ski_rental:BinaryPredictorSkiRental",
                             "about": "Anand et al. 2020 as run in the paper: Youden-thresholded logistic classifier, "
                                      "buy on day √ε·b if it says Z > b, else b"},
        "conformal": {"task": _S, "target": "baselines.ski_rental:ConformalSkiRental",
                      "about": "Sun et al. 2024 Algorithm 2 on a split-conformal interval of Z (log-linear regression)"},
        "conformal-cqr": {"task": _S, "target": "baselines.ski_rental:QuantileConformalSkiRental",
                          "about": "Sun et al. 2024 Algorithm 2 on a conformalised quantile regression interval of Z "
                                   "(Romano et al. 2019; gradient-boosted quantiles of log Z): the conditional interval"},
        "calibrated-scheduler": {"task": _C, "target": "implementations.calibrated_advice:CalibratedScheduler",
                                 "about": "Algorithm 3 (β-threshold rule) on a logistic predictor calibrated by histogram "
                                          "binning (20 bins) on the validation split"},
        "binary-scheduler": {"task": _C, "target": "baselines.scheduling:BinaryScheduler",
                             "about": "Cho et al. 2022: the same rule on a binary classifier's two Bayes probabilities"},
        "constant-scheduler": {"task": _C, "target": "baselines.scheduling:ConstantScheduler", "trivial": True,
                               "about": "no predictor: every job gets the training base rate, so the rule probes all "
                                        "jobs or none, in random order"},
    },
    "metrics": {
        "competitive_ratio": {"goal": "min", "unit": "×", "about": "mean over test instances of ALG/OPT"},
        "worst_ratio": {"goal": "min", "unit": "×", "about": "the largest ALG/OPT over the test instances"},
        "calibration_error": {"goal": "min", "unit": "", "about": "α̂: max |mean f − mean 1{Z > b}| over 20 equal-mass "
                              "bins of the method's f on the test split (f ≡ the training base rate for a method "
                              "without a probability predictor)"},
        "predictor_mse": {"goal": "min", "unit": "", "about": "η: mean (f − 1{Z > b})² on the test split (same f)"},
        "bound_alpha": {"goal": "min", "unit": "", "about": "the α Thm 3.1's bound is evaluated at: the calibration-error "
                        "bound the method ran with (Algorithm 1's α, estimated on held-out validation points), or the "
                        "test split's α̂ for a method that assumes none"},
        "theory_bound": {"goal": "min", "unit": "×", "about": "Thm 3.1's bound 1 + 2α + min{E f + α, 2√(η + 3α)} "
                         "at bound_alpha and the measured E f and η"},
        "ratio_over_bound": {"goal": "min", "unit": "×", "about": "competitive_ratio / theory_bound: above 1 the "
                             "measured ratio exceeds the paper's bound"},
        "excess_cost_per_job": {"goal": "min", "unit": "", "about": "E[ALG − OPT]/n over the draws of n jobs (weighted completion time)"},
        "inversions_l": {"goal": "min", "unit": "", "about": "L per pair: probed pairs with the low job before the high one"},
        "pairs_m": {"goal": "min", "unit": "", "about": "M per pair: pairs of low-priority jobs among the probed ones"},
        "inversions_n": {"goal": "min", "unit": "", "about": "N per pair: the other inversions (a low job completed before a high one)"},
        "kappa": {"goal": "max", "unit": "", "about": "κ1 + κ2 of Thm 4.3 on the test pool: P(p > β)²·Var(p | p > β) "
                  "+ P(p ≤ β)²·Var(p | p ≤ β); larger for a finer predictor, and subtracted from the bounds on L and N"},
        "theorem_excess_z": {"goal": "min", "unit": "", "about": "max over L, M, N of (measured mean − Thm 4.3's value) / "
                             "its standard error over the draws: above a few, the theorem fails on this predictor"},
        "decomposition_error": {"goal": "min", "unit": "", "role": "certificate", "about": "max over draws of |ALG − OPT − (θω1L + θω0M + "
                                "(ω1 − ω0)N)| / OPT: 0 when the decomposition is an identity"},
    },
}
