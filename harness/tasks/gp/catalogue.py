"""The GP family's names: tasks, datasets, methods and metrics, as ``module:attr`` strings.

Found by the registry's scan of ``harness/tasks/*/catalogue.py`` (no ``pyproject.toml`` line).
Plain data: importing it imports nothing else.
"""

CATALOGUE = {
    # the methods fit with gpytorch (baselines.gp_models, components.sparse_gp_torch); linear_operator is its
    # algebra: `pip install -e '.[gp]'`
    "requires": {"extra": "gp", "modules": ["gpytorch", "linear_operator"]},
    "tasks": {
        "gp.regression": {
            "target": "harness.tasks.gp.regression:TASK",
            "about": "fit a GP (ARD squared-exponential kernel, Gaussian noise) by the method's bound from a shared "
                     "initialisation and budget; score the predictive on held-out points and the learned noise",
        },
    },
    "datasets": {
        "snelson-like": {
            "task": "gp.regression",
            "target": "harness.tasks.gp.regression:snelson_like",
            "about": "1-D: a sum of three sinusoids on [0, 6] plus Gaussian noise (σ = 0.3), drawn by the seed",
        },
        "kin-arm": {
            "task": "gp.regression",
            "target": "harness.tasks.gp.regression:kin_arm",
            "about": "8-D, kin40k-like: the distance from a target of an 8-link planar arm's end effector, joint angles "
                     "drawn by the seed, plus Gaussian noise",
        },
        "diabetes-gp": {
            "task": "gp.regression",
            "target": "harness.tasks.gp.regression:diabetes_gp",
            "about": "scikit-learn's bundled diabetes (442 patients, 10 features), train/validation/test drawn by the seed",
        },
        "uci-csv": {
            "task": "gp.regression",
            "target": "harness.tasks.gp.regression:uci_csv",
            "about": "a UCI regression set from --data-dir (uci/<file>.csv: a header, numeric columns, the target last "
                     "or named), subsampled and split by the seed",
        },
    },
    "methods": {
        "sgpr-tight": {
            "task": "gp.regression",
            "target": "implementations.tight_sgp:TightSGPR",
            "about": "the new collapsed bound: Titsias's with each −d_i/2σ² replaced by −½ log(1 + d_i/σ²) "
                     "(Titsias, ICML 2025; Bui et al., TMLR 2025)",
        },
        "svgp-tight": {
            "task": "gp.regression",
            "target": "implementations.tight_sgp:TightSVGP",
            "about": "the new bound's uncollapsed minibatch form: SVGP with the same per-point replacement, scaled N/|B|",
        },
        "exact-gp": {
            "task": "gp.regression",
            "target": "baselines.gp:ExactGP",
            "about": "the exact GP marginal likelihood (gpytorch ExactGP, Cholesky): the ceiling of every bound",
        },
        "sgpr-titsias": {
            "task": "gp.regression",
            "target": "baselines.gp:TitsiasSGPR",
            "about": "Titsias's 2009 collapsed bound by gpytorch's InducingPointKernel (the reference implementation)",
        },
        "sgpr-artemev": {
            "task": "gp.regression",
            "target": "baselines.gp:ArtemevSGPR",
            "about": "the spherical bound of Artemev et al. (2021): −(N/2) log(1 + Σd_i/(Nσ²))",
        },
        "svgp": {
            "task": "gp.regression",
            "target": "baselines.gp:SVGP",
            "about": "stochastic variational GP (Hensman et al. 2013), whitened, minibatches",
        },
    },
    "metrics": {
        "bound": {"goal": "max", "unit": "nats", "role": "training-objective", "tolerance": 1e-3,
                  "about": "the method's objective on the whole training set after training, per training point (exact GP: log p(y)); its curve is kept at 10 fractions of the steps run, and a training stops when its last fifth improved it by at most the tolerance (harness.tasks.gp.plateau)"},
        "exact_reference_bound": {"goal": "max", "unit": "nats", "role": "training-objective", "tolerance": 1e-3,
                                  "about": "the task's own exact GP (the noise reference of noise_log_ratio_to_exact): its log p(y) per training point after training to its plateau by the same rule (L-BFGS), with its curve"},
        "training_steps": {"goal": "min", "unit": "steps", "about": "the steps the training ran to its plateau: L-BFGS iterations for the full-batch bounds and the exact GP, Adam steps for the minibatch ones (not a budget the arms share: each runs until its own objective stops improving)"},
        "init_over_titsias": {"goal": "max", "unit": "nats", "role": "certificate", "about": "bound_at_init minus Titsias's collapsed bound at the same hyper-parameters and inducing inputs, computed by the task's own code (≥ 0 for the new and Artemev's bounds by log(1 + a) ≤ a and Jensen)"},
        "init_over_artemev": {"goal": "max", "unit": "nats", "role": "certificate", "about": "bound_at_init minus Artemev et al.'s collapsed bound at the same hyper-parameters and inducing inputs, computed by the task's own code (≥ 0 for the new bound)"},
        "init_under_exact": {"goal": "max", "unit": "nats", "role": "certificate", "about": "the exact log p(y) per training point minus bound_at_init, at the same hyper-parameters (the task's own Cholesky; ≥ 0 for every bound)"},
        "bound_at_init": {"goal": "max", "unit": "nats", "about": "the objective per training point at the shared initial hyper-parameters and k-means inducing inputs (uncollapsed bounds at their optimal q(u)), before any training"},
        "test_log_likelihood": {"goal": "max", "unit": "nats", "about": "mean log predictive density of the held-out targets (standardised by the training targets' mean and deviation)"},
        "rmse": {"goal": "min", "unit": "", "about": "root mean squared error of the predictive mean on the held-out targets (standardised units)"},
        "noise_variance": {"goal": "min", "unit": "", "about": "the learned Gaussian noise variance σ² (standardised units); bound bias shows as σ² overestimated"},
        "noise_log_ratio_to_exact": {"goal": "min", "unit": "", "about": "|log(σ² / σ²_exact)|: distance of the learned noise from the task's own exact GP fit with the same budget (on a seeded subset of exact_max points where the training set is larger)"},
        "fit_seconds": {"goal": "min", "unit": "s", "about": "wall time of the method's fit (its bound at initialisation and every training step)"},
    },
}
