"""The contrastive family's names: tasks, datasets, methods and metrics, as ``module:attr`` strings.

Found by the registry's scan of ``harness/tasks/*/catalogue.py`` (no ``pyproject.toml`` line).
Plain data: importing it imports nothing else. The family needs no library beyond the core (torch, scikit-learn's
bundled digits).
"""

_T = "contrastive.reference"

CATALOGUE = {
    "tasks": {
        _T: {
            "target": "harness.tasks.contrastive.reference:TASK",
            "about": "train a two-tower image-text model on pairs with a reference model at hand (the same "
                     "architecture, narrower, pretrained with CLIP on a separate clean pool to its plateau, shared by "
                     "every method of a seed), the same initial weights, batches and samples seen for every arm; "
                     "zero-shot top-1 and image-to-text recall@1 on held-out pairs",
        },
    },
    "datasets": {
        "paired-mixture": {
            "task": _T, "target": "harness.tasks.contrastive.reference:paired_mixture",
            "about": "two views of a latent class mixture through different random maps (an 'image' tanh(Az) and a "
                     "'text' Bz, each with noise), class captions B mu_k; the share of the training pool used, the "
                     "number of classes (same-class negatives per batch) and mismatched pairs as parameters"},
        "paired-digits": {
            "task": _T, "target": "harness.tasks.contrastive.reference:paired_digits",
            "about": "scikit-learn's bundled digits paired with a coarse second view (2 x 2 block means through a "
                     "random linear map, with noise); a class's caption is its training digits' mean second view"},
    },
    "methods": {
        "drrho-clip": {"task": _T, "target": "implementations.drrho_clip:DRRhoCLIP",
                       "about": "DRRho-CLIP (Wei et al., ICML 2025): the global contrastive loss with each pair's "
                                "logit shifted by the frozen reference's similarity (fixed temperature, eps), "
                                "optionally plus distillation from the reference"},
        "global-contrastive": {"task": _T, "target": "baselines.contrastive:GlobalContrastive",
                               "about": "the global contrastive loss (SogCLR/FastCLIP's, gamma = 1) with a fixed "
                                        "temperature and eps and no reference (DRRho-CLIP's control), optionally "
                                        "plus distillation from the reference"},
        "clip": {"task": _T, "target": "baselines.contrastive:CLIP",
                 "about": "CLIP's symmetric InfoNCE with a learnable temperature (OpenCLIP's), no reference"},
        "jest": {"task": _T, "target": "baselines.contrastive:JEST",
                 "about": "JEST-style data selection: each step scores a super-batch by learnability (the learner's "
                          "loss minus the reference's) and trains on the chosen share with the global contrastive "
                          "loss"},
        "reference-model": {"task": _T, "target": "baselines.contrastive:ReferenceModel",
                            "about": "the pretrained reference itself (a sanity row)"},
        "linear-map": {"task": _T, "target": "baselines.contrastive:LinearMap",
                       "about": "ridge regression from the raw image view to the raw text view, scored in the text "
                                "space (a linear probe of the pairing on the raw views: a sanity row)"},
        "untrained": {"task": _T, "target": "baselines.contrastive:Untrained", "trivial": True,
                      "about": "the target network at its initial weights: the trivial answer"},
    },
    "metrics": {
        "zero_shot_top1": {"goal": "max", "unit": "", "about": "the share of held-out images whose embedding is nearest (cosine) to their class caption's embedding"},
        "i2t_recall1": {"goal": "max", "unit": "", "about": "image-to-text recall@1: the share of held-out images whose nearest held-out text is their own pair's"},
        "validation_top1": {"goal": "max", "unit": "", "role": "training-objective", "tolerance": 0.01,
                            "about": "zero-shot top-1 on the checkpoint-selection pairs (never the test pairs) of the kept checkpoint; its curve over the training is kept"},
        "reference_validation_top1": {"goal": "max", "unit": "", "role": "training-objective", "tolerance": 0.005,
                                      "about": "the reference's zero-shot top-1 on the selection pairs at the end of its pretraining (its curve is kept: the plateau rule stopped it)"},
        "reference_steps": {"goal": "min", "unit": "steps", "about": "the reference's pretraining steps (the plateau rule's; the same for every method of a seed)"},
        "samples_seen": {"goal": "min", "unit": "pairs", "role": "budget", "about": "training pairs the target was trained on (steps times the batch): the budget, equal for every arm that trains"},
        "scored_samples": {"goal": "min", "unit": "pairs", "about": "pairs only scored to choose a batch (JEST's super-batches), beside samples_seen"},
        "train_s": {"goal": "min", "unit": "s", "about": "seconds of training, checkpoint selection included"},
    },
}
