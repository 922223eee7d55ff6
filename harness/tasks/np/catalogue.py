"""The neural-process family's names: tasks, datasets, methods and metrics, as ``module:attr`` strings.

Found by the registry's scan of ``harness/tasks/*/catalogue.py`` (no ``pyproject.toml`` line).
Plain data: importing it imports nothing else.
"""

_T = "np.regression"

CATALOGUE = {
    "tasks": {
        _T: {
            "target": "harness.tasks.np.regression:TASK",
            "about": "train a conditional neural process on a shared budget of 2-D GP tasks; score its predictive on "
                     "fresh, exactly drawn tasks against the true GP's; time one inference and count its memory",
        },
    },
    "datasets": {
        "gp-2d": {"task": _T, "target": "harness.tasks.np.regression:gp_2d",
                  "about": "2-D GP regression (RBF kernel, Gaussian noise) on a square, optionally shifted away from "
                           "the training domain inside a fixed square the grid models cover; evaluation tasks drawn "
                           "exactly by a Cholesky factor"},
    },
    "methods": {
        "gridded-tnp": {"task": _T, "target": "implementations.gridded_tnp:GriddedTNP",
                        "about": "gridded TNP: pseudo-token grid encoder, Swin processor, k-NN cross-attention decoder "
                                 "(Ashman et al., ICML 2025)"},
        "gridded-tetnp": {"task": _T, "target": "implementations.gridded_tnp:GriddedTETNP",
                          "about": "the translation-equivariant gridded TNP (relative-position attention kernels)"},
        "convcnp": {"task": _T, "target": "baselines.neural_processes:ConvCNP",
                    "about": "ConvCNP: SetConv onto a grid, a residual CNN, SetConv to the targets"},
        "pt-tnp": {"task": _T, "target": "baselines.neural_processes:PseudoTokenTNP",
                   "about": "pseudo-token TNP: Perceiver-style latents read the context, targets read the latents"},
        "tnp": {"task": _T, "target": "baselines.neural_processes:FullTNP",
                "about": "full-attention TNP (TNP-D): context self-attention over all pairs"},
    },
    "metrics": {
        "log_likelihood": {"goal": "max", "unit": "nats", "about": "mean log predictive density per target point, averaged over the evaluation tasks"},
        "gp_log_likelihood": {"goal": "max", "unit": "nats", "about": "the same for the ground-truth GP's predictive (true kernel and noise): the ceiling"},
        "gap_to_gp": {"goal": "min", "unit": "nats", "about": "gp_log_likelihood − log_likelihood"},
        "rmse": {"goal": "min", "unit": "", "about": "root mean squared error of the predictive mean over every target"},
        "infer_s": {"goal": "min", "unit": "s", "about": "median seconds of one forward pass on one task at the dataset's context size (after a warm-up): the process's CPU time on one CPU thread, wall time otherwise"},
        "peak_activation_mib": {"goal": "min", "unit": "MiB", "about": "peak bytes of the tensors one forward pass allocates (weights and inputs not counted)"},
        "train_s": {"goal": "min", "unit": "s", "about": "seconds of training on the shared budget"},
        "train_log_likelihood": {"goal": "max", "unit": "nats", "about": "training log-likelihood per target point, mean over the last tenth of the steps"},
        "validation_log_likelihood": {"goal": "max", "unit": "nats", "role": "training-objective", "tolerance": 0.02,
                                      "about": "log-likelihood per target point on the seed's validation tasks (exactly drawn on the training square, never the test tasks) at the end of training; its curve is kept at 10 fractions of the budget, and a training whose last fifth still gained more than the tolerance had not reached its plateau"},
        "training_steps": {"goal": "min", "unit": "steps", "about": "the AdamW steps the training ran: the budget, or, training to the plateau, the steps until the validation log-likelihood's last fifth gained at most the tolerance (each method by the same rule and cap)"},
        "parameters": {"goal": "min", "unit": "", "about": "trainable parameters of the model"},
    },
}
