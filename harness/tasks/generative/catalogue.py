"""The generative family's names: tasks, datasets, methods and metrics, as ``module:attr`` strings.

Found by the registry's scan of ``harness/tasks/*/catalogue.py`` (no ``pyproject.toml`` line).
Plain data: importing it imports nothing else.
"""

_T = "generative.finetune"

CATALOGUE = {
    "tasks": {
        _T: {
            "target": "harness.tasks.generative.finetune:TASK",
            "about": "pretrain an under-capacity EDM denoiser (a causal model on binary pixels) to its plateau (shared "
                     "by every method of a seed), let "
                     "each method fine-tune or re-sample it on one budget, and score its samples against held-out data",
        },
    },
    "datasets": {
        "ring-8": {"task": _T, "target": "harness.tasks.generative.finetune:ring_8",
                   "about": "eight tight Gaussians (σ = 0.05 by default) evenly on a circle of radius 2"},
        "grid-25": {"task": _T, "target": "harness.tasks.generative.finetune:grid_25",
                    "about": "a 5 × 5 grid of tight Gaussians (σ = 0.05 by default), spacing 1, centred at 0"},
        "digits-64": {"task": _T, "target": "harness.tasks.generative.finetune:digits_64",
                      "about": "scikit-learn's bundled 8 × 8 digits (1,797 images) scaled to [−1, 1], split per seed "
                               "into training, checkpoint-selection, tuning, test and fresh-sample images"},
        "binary-digits-64": {"task": _T, "target": "harness.tasks.generative.finetune:binary_digits_64",
                             "about": "the bundled digits binarised (a pixel is 1 from value 8 of 16), split as "
                                      "digits-64: the autoregressive variant, its reference a causal model (MADE) "
                                      "with an exact likelihood"},
    },
    "methods": {
        "ddo": {"task": _T, "target": "implementations.ddo:DDO",
                "about": "Direct Discriminative Optimization (Zheng et al., ICML 2025): the GAN discriminator loss "
                         "on the implicit log-ratio of the fine-tuned and the frozen reference denoiser, in rounds"},
        "continued-mle": {"task": _T, "target": "baselines.generative:ContinuedMLE",
                          "about": "the reference trained on for the same steps with its own denoising loss"},
        "score-sharpening": {"task": _T, "target": "baselines.generative:ScoreSharpening",
                             "about": "the reference sampled with its score multiplied by w > 1 (a lower "
                                      "temperature): sharpening without training"},
        "reference": {"task": _T, "target": "baselines.generative:Reference",
                      "about": "the pretrained reference, sampled as it is"},
        "fresh-data": {"task": _T, "target": "baselines.generative:FreshData",
                       "about": "a fresh sample of the data itself, disjoint from the scoring set: the floor of the "
                                "distances and the ceiling of precision and recall (a sanity row)"},
        "gaussian-fit": {"task": _T, "target": "baselines.generative:GaussianFit", "trivial": True,
                         "about": "the trivial answer on continuous data: one Gaussian with the training data's mean "
                                  "and covariance"},
        "independent-pixels": {"task": _T, "target": "baselines.generative:IndependentPixels", "trivial": True,
                               "about": "the trivial answer on binary data: each pixel an independent Bernoulli with "
                                        "its training frequency"},
    },
    "metrics": {
        "mmd": {"goal": "min", "unit": "", "about": "squared maximum mean discrepancy between the method's samples and the held-out scoring set under a Gaussian kernel of the dataset's bandwidth (mixtures 0.1 = 2σ; digits the median distance between training images), unbiased"},
        "energy_distance": {"goal": "min", "unit": "", "about": "energy distance between the method's samples and the held-out scoring set (2E‖X−Y‖ − E‖X−X'‖ − E‖Y−Y'‖, the within-set terms without the diagonal)"},
        "precision": {"goal": "max", "unit": "", "about": "mixtures: the share of samples within 3σ of their nearest mode"},
        "recall": {"goal": "max", "unit": "", "about": "mixtures: the share of modes holding at least a quarter of their fair share (samples / modes) of samples within 3σ"},
        "sample_nll": {"goal": "min", "unit": "nats", "about": "mixtures: the mean negative log-density of the samples under the true mixture (low where samples sit on modes; blind to dropped modes, read it beside recall)"},
        "frechet_distance": {"goal": "min", "unit": "", "about": "digits: the Fréchet distance between Gaussians fitted to the samples' and the scoring images' features in the penultimate layer of a small classifier the task trains once per seed"},
        "classifier_confidence": {"goal": "max", "unit": "", "about": "digits: that classifier's mean top-class probability on the samples"},
        "data_nll": {"goal": "min", "unit": "nats", "about": "models with an exact likelihood (the causal models, the independent pixels): the mean negative log-likelihood of the scoring images (maximum likelihood's own measure; a mode-seeking fine-tuning may raise it while its samples improve)"},
        "validation_mmd": {"goal": "min", "unit": "", "about": "MMD of the kept model's samples to the checkpoint-selection set (never the scoring set): what picks each round's best checkpoint; its curve over the fine-tuning is kept"},
        "reference_validation_loss": {"goal": "min", "unit": "", "role": "training-objective", "tolerance": 0.002,
                                      "about": "the reference's EDM denoising loss on the checkpoint-selection set at fixed noise draws, at the end of pretraining; its curve is kept, and a pretraining whose last fifth still lowered it by more than the tolerance had not reached its plateau"},
        "reference_steps": {"goal": "min", "unit": "steps", "about": "the Adam steps of the reference's pretraining (to its plateau, the same rule for every seed)"},
        "finetune_steps": {"goal": "min", "unit": "steps", "role": "budget", "about": "optimiser steps of fine-tuning, every round together (0 for a method that does not train)"},
        "reference_samples": {"goal": "min", "unit": "", "about": "samples drawn from the reference (or a round's reference) to fine-tune on"},
        "train_s": {"goal": "min", "unit": "s", "about": "seconds of fine-tuning, the reference samples and checkpoint selection included (the shared pretraining not)"},
    },
}
