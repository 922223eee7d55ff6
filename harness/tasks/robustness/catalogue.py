"""The robustness family's names: tasks, datasets, methods and metrics, as ``module:attr`` strings.

Found by the registry's scan of ``harness/tasks/*/catalogue.py`` (no ``pyproject.toml`` line).
Plain data: importing it imports nothing else.
"""

CATALOGUE = {
    "tasks": {
        "robustness.certified": {
            "target": "harness.tasks.robustness.certified:TASK",
            "about": "train a Lipschitz classifier on the task's budget, then certify ℓ2 radii from the logit margin and the layers' bounds",
        },
    },
    "datasets": {
        "digits-certified": {
            "task": "robustness.certified",
            "target": "harness.tasks.robustness.certified:digits_certified",
            "about": "scikit-learn's bundled 8×8 digits in [0, 1], a stratified train/val/test split drawn by the seed, the training budget",
        },
        "cifar10-certified": {
            "task": "robustness.certified",
            "target": "harness.tasks.robustness.certified:cifar10_certified",
            "about": "CIFAR-10 from --data-dir (cifar-10-batches-py, the python pickles), 32×32 RGB in [0, 1]; the official test batch",
        },
        "cifar100-certified": {
            "task": "robustness.certified",
            "target": "harness.tasks.robustness.certified:cifar100_certified",
            "about": "CIFAR-100 from --data-dir (cifar-100-python, the python pickles, fine labels), 32×32 RGB in [0, 1]",
        },
        "tiny-imagenet-certified": {
            "task": "robustness.certified",
            "target": "harness.tasks.robustness.certified:tiny_imagenet_certified",
            "about": "Tiny-ImageNet from --data-dir (tiny-imagenet-200 image folders), 64×64 RGB; its labelled val set is the test set",
        },
    },
    "methods": {
        "bro": {
            "task": "robustness.certified",
            "target": "implementations.bronet:BRONet",
            "about": "Block Reflector Orthogonal dense and FFT conv layers, MinMax, LLN head; CE or logit-annealing loss (Lai et al., ICML 2025)",
        },
        "cayley": {
            "task": "robustness.certified",
            "target": "baselines.lipschitz:CayleyNet",
            "about": "Cayley orthogonal layers, the convolution per frequency of the padded grid (Trockman & Kolter 2021)",
        },
        "soc": {
            "task": "robustness.certified",
            "target": "baselines.lipschitz:SOCNet",
            "about": "skew-orthogonal convolution: the truncated exponential series of a skew-symmetric convolution (Singla & Feizi 2021); its dense layer is matrix-exp's",
        },
        "matrix-exp": {
            "task": "robustness.certified",
            "target": "baselines.lipschitz:MatrixExpNet",
            "about": "dense layers exp(A − Aᵀ) by an exact matrix exponential (torch.matrix_exp): the orthogonal map SOC's series approximates; no convolution",
        },
        "aol": {
            "task": "robustness.certified",
            "target": "baselines.lipschitz:AOLNet",
            "about": "almost-orthogonal rescaling W·diag(Σ|WᵀW|)^(-1/2) (Prach & Lampert 2022)",
        },
        "unconstrained": {
            "task": "robustness.certified",
            "target": "baselines.lipschitz:UnconstrainedNet",
            "about": "the same network with plain layers: no certificate (certified accuracy 0 by construction), the clean-accuracy ceiling",
        },
    },
    "metrics": {
        "clean_accuracy": {"goal": "max", "unit": "%", "about": "test accuracy of the trained network"},
        "certified_accuracy_36": {"goal": "max", "unit": "%", "about": "share of test points classified correctly with a certified ℓ2 radius > 36/255"},
        "certified_accuracy_72": {"goal": "max", "unit": "%", "about": "share of test points classified correctly with a certified ℓ2 radius > 72/255"},
        "certified_accuracy_108": {"goal": "max", "unit": "%", "about": "share of test points classified correctly with a certified ℓ2 radius > 108/255"},
        "average_certified_radius": {"goal": "max", "unit": "", "about": "mean certified ℓ2 radius over test points (0 where misclassified), pixels in [0, 1]"},
        "seconds_per_epoch": {"goal": "min", "unit": "s", "about": "median wall time of 5 one-epoch fits on the budget (network built, one pass of mini-batches), one warm-up fit excluded"},
        "seconds_per_epoch_cpu": {"goal": "min", "unit": "s", "about": "median CPU time (every thread) of the same 5 one-epoch fits"},
        "seconds_per_epoch_spread": {"goal": "min", "unit": "s", "spread_of": "seconds_per_epoch", "about": "half the range of the 5 one-epoch fits' wall times"},
        "parameters": {"goal": "min", "unit": "", "about": "trainable parameters of the network"},
        "empirical_lipschitz_ratio": {"goal": "min", "unit": "", "role": "certificate", "about": "largest ‖f(x)−f(x′)‖/‖x−x′‖ over random and PGD-searched pairs, divided by the certified bound (≤ 1 or the cell fails; 0 without a certificate)"},
    },
}
