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
                     "and scores the pooled least-squares estimate after every round",
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
                                 "about": "a regular two-level fraction of resolution ≥ V (2^{5−1}: E = ABCD; 2^{8−2}: "
                                          "G = ABCD, H = ABEF; full factorial for p ≤ 4), repeated to fill each round"},
    },
    "metrics": {
        "final_error": {"goal": "min", "unit": "", "about": "‖β̂ − β‖² after the last round, mean over the cell's trials"},
        "error_area": {"goal": "min", "unit": "", "about": "Σ over rounds of ‖β̂_t − β‖² (the area under the error-per-round curve, unit spacing), mean over trials"},
        "final_risk": {"goal": "min", "unit": "", "about": "E_ε‖β̂ − β‖² given the design and β after the last round: σ² tr(A G Aᵀ) + ‖(A G − I)β‖² for the estimator β̂ = A Xᵀy (exact, no noise draw), mean over trials"},
        "risk_over_floor": {"goal": "min", "unit": "×", "about": "N tr(G⁻¹)/K after the last round (N units in all): the design's least-squares risk over the floor σ²K/N that no ±1 design can beat (Cauchy–Schwarz, diag G = N); mean over trials whose final Gram is nonsingular"},
        "singular_rounds": {"goal": "min", "unit": "", "role": "failure-share", "about": "share of (trial, round) fits whose pooled Gram was singular, so the fallback estimator (minimum-norm or ridge, as the dataset says) was used"},
    },
}
