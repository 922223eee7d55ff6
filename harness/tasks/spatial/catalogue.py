"""The spatial family's names: tasks, datasets, methods and metrics, as ``module:attr`` strings.

Found by the registry's scan of ``harness/tasks/*/catalogue.py`` (no ``pyproject.toml`` line).
Plain data: importing it imports nothing else. The family needs no library beyond the core; the HEST-1k loader
reads ``.h5ad`` files with anndata (``pip install -e '.[spatial]'``), which it imports itself and names when it is
missing, so that the synthetic slides run without it.
"""

_T = "spatial.expression"

CATALOGUE = {
    "tasks": {
        _T: {
            "target": "harness.tasks.spatial.expression:TASK",
            "about": "train on whole slides' spot features and coordinates to predict every spot's log1p expression; "
                     "early stopping on validation slides, scored on held-out slides (per-gene Pearson, spatial "
                     "autocorrelation of the prediction, inference time and memory)",
        },
    },
    "datasets": {
        "synthetic-slides": {
            "task": _T, "target": "harness.tasks.spatial.expression:synthetic_slides",
            "about": "simulated whole slides: spots on a jittered hexagonal grid, smooth latent cell-type fields, "
                     "image features a noisy nonlinear map of each spot's cell-type mix, negative-binomial counts "
                     "driven by the spot's and its neighbours' mix and by smooth fields the features do not show"},
        "hest-1k": {
            "task": _T, "target": "harness.tasks.spatial.hest:hest_1k",
            "about": "HEST-1k slides from --data-dir: st/<id>.h5ad (raw counts, obsm['spatial']) and "
                     "patch_embeddings/<id>.h5 (one feature vector a spot), split by slide as the spec says"},
    },
    "methods": {
        "stflow": {"task": _T, "target": "implementations.stflow:STFlow",
                   "about": "STFlow (Huang et al., ICML 2025): flow matching over the whole slide's expression from a "
                            "zero-inflated negative-binomial prior, a kNN spatial transformer with frame-averaged "
                            "relative positions as the denoiser, a few Euler steps"},
        "iterative-regressor": {"task": _T, "target": "baselines.spatial:IterativeRegressor",
                                "about": "the same spatial transformer applied as many times as STFlow's sampling "
                                         "steps, each pass on its own previous output (from zeros): compute-matched "
                                         "refinement without a flow"},
        "spatial-regressor": {"task": _T, "target": "baselines.spatial:SpatialRegressor",
                              "about": "the same spatial transformer as a one-shot regressor (zero expression input)"},
        "full-attention": {"task": _T, "target": "baselines.spatial:FullAttention",
                           "about": "a one-shot transformer with global attention over every spot of the slide "
                                    "(coordinates as sinusoidal embeddings), the N × N weights materialised"},
        "spot-mlp": {"task": _T, "target": "baselines.spatial:SpotMLP",
                     "about": "a per-spot MLP on the image features (no neighbours)"},
        "ridge": {"task": _T, "target": "baselines.spatial:RidgeProbe",
                  "about": "ridge regression on the image features (a foundation model's linear probe), the penalty "
                           "chosen on the validation slides"},
        "oracle": {"task": _T, "target": "baselines.spatial:Oracle",
                   "about": "synthetic slides only: the simulator's E[log1p Y | latent cell-type mix] (Monte Carlo "
                            "over the counts and the fields the features do not show): a ceiling (a sanity row)"},
        "mean-expression": {"task": _T, "target": "baselines.spatial:MeanExpression", "trivial": True,
                            "about": "the trivial answer: every spot gets the training slides' mean expression"},
    },
    "metrics": {
        "pearson": {"goal": "max", "unit": "", "about": "the Pearson correlation between predicted and measured log1p expression, per gene over every spot of the held-out slides together, averaged over genes (a gene constant on the held-out spots is left out; a constant prediction counts 0)"},
        "mse": {"goal": "min", "unit": "", "about": "the mean squared error of the predicted log1p expression over held-out spots and genes"},
        "moran_gap": {"goal": "min", "unit": "", "about": "the mean over held-out slides and genes of |I(prediction) − I(measured)|, I Moran's spatial autocorrelation on the k-nearest-spot graph: whether a prediction (a sample, for a generative method) has the slide's spatial texture"},
        "moran_measured": {"goal": "max", "unit": "", "about": "Moran's I of the measured expression, the mean over held-out slides and genes (the target of moran_gap; the same for every method)"},
        "infer_s": {"goal": "min", "unit": "s", "about": "seconds to predict the first held-out slide (every network call of a sampler; the kNN graph is built beforehand), the median of repeats after a warm-up"},
        "infer_s_cpu": {"goal": "min", "unit": "s", "about": "the CPU seconds of that prediction (every thread), the median of the repeats"},
        "infer_s_spread": {"goal": "min", "unit": "s", "spread_of": "infer_s", "about": "half the range of infer_s's repeats"},
        "peak_activation_mib": {"goal": "min", "unit": "MiB", "about": "peak bytes held by the tensors that predicting the first held-out slide allocates, counted op by op (weights and inputs not counted)"},
        "spots": {"goal": "max", "unit": "spots", "about": "the spots of the first held-out slide (the size of infer_s and peak_activation_mib)"},
        "validation_pearson": {"goal": "max", "unit": "", "role": "training-objective", "tolerance": 0.005,
                               "about": "Pearson on the validation slides (never the test slides) of the kept checkpoint; its curve over the training is kept, and a training whose last fifth still raised it by more than the tolerance had not reached its plateau"},
        "training_steps": {"goal": "min", "unit": "steps", "role": "budget", "about": "Adam steps of training (to the plateau of the validation Pearson, the same rule and cap for every network; 0 for a closed form)"},
        "parameters": {"goal": "min", "unit": "", "about": "trainable parameters"},
        "train_s": {"goal": "min", "unit": "s", "about": "seconds of training, checkpoint selection included"},
    },
}
