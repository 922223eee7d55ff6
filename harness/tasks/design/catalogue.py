"""The design family's names: tasks, datasets, methods and metrics, as ``module:attr`` strings.

Found by the registry's scan of ``harness/tasks/*/catalogue.py`` (no ``pyproject.toml`` line).
Plain data: importing it imports nothing else.
"""

_T = "design.factorial"
_V = "harness.tasks.design.factorial"

CATALOGUE = {
    "tasks": {
        _T: {
            "target": f"{_V}:TASK",
            "about": "each round a design gives n units their ±1 treatment combinations (product-Bernoulli dosages or "
                     "explicit runs); the task draws outcomes of a k-way Fourier interaction model plus Gaussian noise "
                     "and scores the pooled truncated-OLS estimate (the paper's) and the OLS one after every round",
        },
    },
    "datasets": {
        "boolean-interactions": {
            "task": _T, "target": f"{_V}:boolean_interactions",
            "about": "p treatments, all parities of order ≤ k (K coefficients, β ~ U(−scale, scale)^K), n units per "
                     "round for some rounds, noise N(0, σ²); the seed draws β, the units' uniforms and the noise of "
                     "every trial (common to every method)"},
    },
    "methods": {
        "half-dosage": {"task": _T, "target": "implementations.factorial_design:HalfDosage",
                        "about": "the paper's passive design: every treatment at dosage ½ in every round"},
        "active-trace": {"task": _T, "target": "implementations.factorial_design:ActiveTrace",
                         "about": "the paper's active rule: d_t = argmin tr[(Σ(d) + G_past/n)^-1] by SLSQP from ½ "
                                  "(analytic gradient), round 1 at ½"},
        "active-lambda-min": {"task": _T, "target": "implementations.factorial_design:ActiveLambdaMin",
                              "about": "the paper's faster proxy: d_t = argmin 1/λ_min(Σ(d) + G_past/n) by SLSQP from ½"},
        "supply-uniform": {"task": _T, "target": "implementations.factorial_design:SupplyUniform",
                           "about": "the paper's rule under a supply limit Σd ≤ L (§5.1): d_i = min(½, L/p)"},
        "perturbed-dosage": {"task": _T, "target": "baselines.factorial_design:PerturbedDosage",
                             "about": "the centre (L/p under a supply limit, else ½) moved by ±distance on every treatment, "
                                      "signs drawn each round with Σ = 0 (the same total dosage)"},
        "uniform-dosage": {"task": _T, "target": "baselines.factorial_design:UniformDosage",
                           "about": "every treatment at one dosage (a parameter) in every round"},
        "random-dosage": {"task": _T, "target": "baselines.factorial_design:RandomDosage",
                          "about": "a fresh d ~ U(0, 1)^p each round (the method's own seeded stream)"},
        "fractional-factorial": {"task": _T, "target": "baselines.factorial_design:FractionalFactorial",
                                 "about": "the smallest regular two-level fraction of resolution ≥ max(V, 2k + 1) found by "
                                          "a search over generator words (2^{5−1}: E = ABCD; 2^{8−2}: G = ABCD, H = ABEF; "
                                          "2^{10−3}: 128 runs), repeated to fill each round, the units left over drawn "
                                          "from its runs without replacement (then no longer orthogonal)"},
    },
    "metrics": {
        "final_error": {"goal": "min", "unit": "", "about": "‖β̂ − β‖² after the last round under the paper's truncated OLS (β̂ = G⁻¹Xᵀy where tr G⁻¹ ≤ B²/σ², else 0), mean over all the cell's trials"},
        "error_area": {"goal": "min", "unit": "", "about": "Σ over rounds of ‖β̂_t − β‖² under truncated OLS (the area under the error-per-round curve, unit spacing), mean over all trials"},
        "final_risk": {"goal": "min", "unit": "", "about": "E_ε‖β̂ − β‖² given the design and β after the last round under truncated OLS: σ² tr G⁻¹ where it fits, ‖β‖² where it returns 0 (exact, no noise draw), mean over all trials"},
        "final_error_ols": {"goal": "min", "unit": "", "about": "the OLS variant of final_error: β̂ = G⁻¹Xᵀy, or the dataset's fallback (minimum-norm or ridge) where G is singular"},
        "error_area_ols": {"goal": "min", "unit": "", "about": "the OLS variant of error_area"},
        "final_risk_ols": {"goal": "min", "unit": "", "about": "the OLS variant of final_risk: σ² tr(A G Aᵀ) + ‖(A G − I)β‖² for β̂ = A Xᵀy (exact), mean over trials"},
        "risk_over_floor": {"goal": "min", "unit": "×", "about": "N tr(G⁻¹)/K after the last round (N units in all): the design's least-squares risk over the floor σ²K/N that no ±1 design can beat (Cauchy–Schwarz, diag G = N); mean over the trials whose final Gram is nonsingular (the others are counted by singular_rounds, and by risk_over_floor_min as ∞)"},
        "risk_over_floor_min": {"goal": "min", "unit": "×", "about": "the smallest N tr(G⁻¹)/K over all the cell's trials, a singular final Gram counting as ∞: at least 1 for every ±1 design"},
        "singular_rounds": {"goal": "min", "unit": "", "role": "failure-share", "about": "share of (trial, round) fits whose pooled Gram was singular: OLS needed its fallback (minimum-norm or ridge), truncated OLS returned 0"},
        "truncated_rounds": {"goal": "min", "unit": "", "about": "share of (trial, round) fits where truncated OLS returned β̂ = 0 (tr G⁻¹ > B²/σ², singular G included): the estimator's rule, not a failure"},
    },
}
