"""Task ``robustness.certified``: train a Lipschitz classifier, then certify it.

The method is handed the training images and labels with the training budget (epochs,
batch size, learning rate: dataset parameters, the same for every method) and returns a
model; it never scores itself. The task then certifies the model in float64:

* **The Lipschitz bound** L of the certified part :meth:`CertifiableModel.embed` is the
  product of the bounds of its affine maps (:meth:`CertifiableModel.lipschitz_factors`):
  a layer's bound by construction where it declares one (1 for an orthogonal layer), else
  its spectral norm by power iteration. The task runs power iteration on *every* layer, and
  a declared bound that the layer's measured norm exceeds (beyond float tolerance) fails
  the cell. The activations between the maps are 1-Lipschitz (MinMax) by the protocol.
* **Radii** from the logit margin at the predicted class ŷ (the paper's formulas): with an
  LLN head of effective rows w_j, R(x) = min_{j≠ŷ} (z_ŷ − z_j) / (L·‖w_ŷ − w_j‖); with a
  plain head (embed is the whole network), R(x) = (z_ŷ − max_{j≠ŷ} z_j) / (√2·L). A model
  that claims no certificate (``lipschitz_factors()`` is None) has L = ∞ and radius 0.
* **An empirical check of the certificate**: the largest ‖f(x) − f(x′)‖ / ‖x − x′‖ of f =
  embed over random pairs of test images, near pairs, and pairs searched by a few steps of
  gradient ascent on the ratio (PGD-style), divided by L. Above 1 + ``TOLERANCE`` the
  certificate is wrong and the cell fails with :class:`CertificateViolation`.

Metrics: ``clean_accuracy``; ``certified_accuracy_36/72/108`` (ε = 36/255, 72/255,
108/255; ℓ2, pixels in [0, 1]); ``average_certified_radius`` (0 where misclassified);
``seconds_per_epoch`` (with ``_cpu`` and ``_spread``: after the real fit, one-epoch fits of
the same method on the same budget are timed by :func:`harness.tasks.timing.time_call`, one
warm-up excluded, the median of ``TIMING_REPEATS``); ``parameters``; ``empirical_lipschitz_ratio``.

Loaders: :func:`digits_certified` (scikit-learn's bundled digits, no download);
:func:`cifar10_certified`, :func:`cifar100_certified` and :func:`tiny_imagenet_certified`
from ``--data-dir`` (:mod:`harness.tasks.robustness.images`).
"""
from __future__ import annotations

import copy
import dataclasses
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from harness.tasks.base import Context, Task

EPSILONS = {"certified_accuracy_36": 36 / 255, "certified_accuracy_72": 72 / 255, "certified_accuracy_108": 108 / 255}
TOLERANCE = 1e-6  # float64 rounding of a depth-≤20 network is far below this
POWER_ITERATIONS = 500  # BRONet's num_lc_iter at evaluation
TIMING_REPEATS, TIMING_WARMUP = 5, 1  # one-epoch fits timed after the real fit: medians of 5, one warm-up excluded


class CertificateViolation(RuntimeError):
    """A model's certificate does not hold: a layer's measured norm or an input pair exceeds its claimed bound."""


# --------------------------------------------------------------------------- data


@dataclass(frozen=True)
class TrainingSet:
    """What a method trains on: ``images`` float32 (n, c, h, w) in [0, 1], ``labels`` int (n,), and the budget."""

    images: np.ndarray
    labels: np.ndarray
    classes: int
    epochs: int
    batch_size: int
    lr: float


@dataclass(frozen=True)
class CertifiedData:
    """A loader's result: the training set (with the budget) and the validation and test images with labels."""

    train: TrainingSet
    val_images: np.ndarray
    val_labels: np.ndarray
    test_images: np.ndarray
    test_labels: np.ndarray


def _budget(epochs: int, batch_size: int, lr: float) -> None:
    if epochs < 1 or batch_size < 1 or not lr > 0:
        raise ValueError(f"the budget needs epochs ≥ 1, batch_size ≥ 1 and lr > 0; got {epochs}, {batch_size}, {lr}")


def digits_certified(context: Context, *, val_fraction: float = 0.2, test_fraction: float = 0.2,
                     max_images: int | None = None, epochs: int = 60, batch_size: int = 128,
                     lr: float = 1e-3) -> CertifiedData:
    """scikit-learn's bundled 8×8 digits (1,797 images, 10 classes), pixels divided by 16 into [0, 1], one channel.

    The seed draws a stratified train / validation / test partition (the same for the
    validation and the test split of a seed, and for every method); ``max_images`` keeps a
    stratified subsample first (the tiny configuration). ``epochs``, ``batch_size`` and
    ``lr`` are the training budget every method gets.
    """
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    if not (0 < val_fraction < 1 and 0 < test_fraction < 1 and val_fraction + test_fraction < 1):
        raise ValueError(f"val_fraction and test_fraction must be in (0, 1) with a sum below 1; got {val_fraction}, {test_fraction}")
    _budget(epochs, batch_size, lr)
    digits = load_digits()
    images = (digits.images / 16.0).astype(np.float32)[:, None]
    labels = digits.target.astype(np.int64)
    # the partition depends on the seed only: validation and test cells of a seed train on the same images
    rng = dataclasses.replace(context, split="train").rng("partition")
    state = lambda: int(rng.integers(2**31 - 1))  # noqa: E731
    if max_images is not None and max_images < len(labels):
        images, _, labels, _ = train_test_split(images, labels, train_size=int(max_images), stratify=labels, random_state=state())
    rest_x, test_x, rest_y, test_y = train_test_split(images, labels, test_size=test_fraction, stratify=labels, random_state=state())
    train_x, val_x, train_y, val_y = train_test_split(rest_x, rest_y, test_size=val_fraction / (1 - test_fraction),
                                                      stratify=rest_y, random_state=state())
    train = TrainingSet(train_x, train_y, int(labels.max()) + 1, int(epochs), int(batch_size), float(lr))
    return CertifiedData(train, val_x, val_y, test_x, test_y)


# --------------------------------------------------------------------------- the protocol


class CertifiableModel(Protocol):
    """What :meth:`CertifiedClassifier.fit` returns: a torch module in evaluation mode.

    ``model(x)`` gives the logits (n, classes) of images x (n, c, h, w). ``embed(x)`` is the
    part the bound covers: the features before an LLN head, or the logits with a plain
    head. ``head_kind`` is ``"lln"`` or ``"plain"``; ``head_weight()`` the LLN head's
    effective (row-normalised) weight (classes, features), None with a plain head.
    ``lipschitz_factors()`` lists, in order, every affine map of ``embed`` as (module, its
    input shape without the batch, the bound it guarantees or None), with only
    1-Lipschitz activations between them; None claims no certificate.
    """

    head_kind: str

    def embed(self, x): ...

    def head_weight(self): ...

    def lipschitz_factors(self) -> list[tuple[Any, tuple[int, ...], float | None]] | None: ...


class CertifiedClassifier(Protocol):
    """What a method of this task implements."""

    def fit(self, train: TrainingSet, context: Context) -> CertifiableModel:
        """Train on ``train`` (images, labels, ``epochs``, ``batch_size``, ``lr``); return the model.

        ``context.rng("method", ...)`` is the method's randomness, ``context.device`` its device.
        """
        ...


# --------------------------------------------------------------------------- certification


def operator_norm(module, input_shape: tuple[int, ...], *, iterations: int = POWER_ITERATIONS, seed: int = 0,
                  dtype=None, device: str = "cpu") -> float:
    """The spectral norm of the linear part of an affine ``module`` (v ↦ module(v) − module(0)) by power iteration on AᵀA."""
    import torch

    dtype = dtype or torch.float64
    generator = torch.Generator(device="cpu").manual_seed(seed)
    v = torch.randn(1, *input_shape, generator=generator, dtype=dtype).to(device)
    v = v / v.norm()
    zero = torch.zeros_like(v)
    with torch.no_grad():
        offset = module(zero)
    sigma = 0.0
    for _ in range(iterations):
        v = v.detach().requires_grad_(True)
        out = module(v) - offset
        (gram_v,) = torch.autograd.grad(0.5 * out.pow(2).sum(), v)
        rayleigh = float((gram_v * v.detach()).sum())
        norm = gram_v.norm()
        if float(norm) == 0.0:
            return 0.0
        previous, sigma = sigma, math.sqrt(max(rayleigh, 0.0))
        v = gram_v / norm
        if abs(sigma - previous) <= 1e-12 * max(sigma, 1.0):
            break
    with torch.no_grad():  # the last iterate's own ratio: a lower bound like the Rayleigh quotient, kept if larger
        sigma = max(sigma, float((module(v) - offset).norm() / v.norm()))
    return sigma


def lipschitz_bound(model, *, device: str = "cpu") -> tuple[float, list[float]]:
    """(L, each factor's measured norm): the product of the factors' bounds; ∞ for a model without a certificate.

    A factor that declares a bound must not measure above it (beyond ``TOLERANCE``):
    :class:`CertificateViolation` otherwise.
    """
    factors = model.lipschitz_factors()
    if factors is None:
        return math.inf, []
    bound, measured = 1.0, []
    for index, (module, shape, declared) in enumerate(factors):
        norm = operator_norm(module, tuple(shape), seed=index, device=device)
        measured.append(norm)
        if declared is None:
            bound *= norm
        else:
            if norm > float(declared) * (1.0 + TOLERANCE):
                raise CertificateViolation(
                    f"layer {index} ({type(module).__name__}) declares a Lipschitz bound {float(declared):.9g} but power "
                    f"iteration measures {norm:.9g} on its linear part: the layer is not what it claims")
            bound *= float(declared)
    return bound, measured


def certified_radii(logits: np.ndarray, bound: float, head_weight: np.ndarray | None) -> np.ndarray:
    """The certified ℓ2 radius of each prediction: LLN formula with ``head_weight``, plain-head formula without."""
    n, classes = logits.shape
    if not math.isfinite(bound):
        return np.zeros(n)
    predicted = logits.argmax(axis=1)
    top = logits[np.arange(n), predicted]
    others = np.ones((n, classes), dtype=bool)
    others[np.arange(n), predicted] = False
    gaps = top[:, None] - logits  # ≥ 0
    if head_weight is None:
        runner_up = np.where(others, logits, -np.inf).max(axis=1)
        return (top - runner_up) / (math.sqrt(2.0) * bound)
    distances = np.linalg.norm(head_weight[predicted][:, None, :] - head_weight[None, :, :], axis=2)  # (n, classes)
    with np.errstate(divide="ignore", invalid="ignore"):
        per_class = np.where(others, gaps / (bound * distances), np.inf)
    return per_class.min(axis=1)


def empirical_lipschitz(embed, images, *, rng: np.random.Generator, random_pairs: int = 256, searched_pairs: int = 16,
                        steps: int = 20) -> float:
    """The largest ‖f(x) − f(x′)‖ / ‖x − x′‖ over random pairs, near pairs and pairs searched by gradient ascent."""
    import torch

    def ratio(a, b):
        return (embed(a) - embed(b)).flatten(1).norm(dim=1) / (a - b).flatten(1).norm(dim=1)

    n = images.shape[0]
    best = 0.0
    with torch.no_grad():
        first = torch.as_tensor(rng.integers(n, size=random_pairs))
        second = torch.as_tensor(rng.integers(n, size=random_pairs))
        keep = first != second
        if bool(keep.any()):
            best = max(best, float(ratio(images[first[keep]], images[second[keep]]).max()))
        noise = torch.as_tensor(rng.standard_normal((random_pairs, *images.shape[1:])), dtype=images.dtype, device=images.device)
        near = images[first] + 1e-2 * noise
        best = max(best, float(ratio(images[first], near).max()))
    # PGD-style: ascend the log-ratio in both endpoints from random starts near test images
    start = images[torch.as_tensor(rng.integers(n, size=searched_pairs))]
    direction = torch.as_tensor(rng.standard_normal(start.shape), dtype=images.dtype, device=images.device)
    scale = torch.as_tensor(rng.choice([0.01, 0.1, 1.0], size=searched_pairs), dtype=images.dtype, device=images.device)
    x = start.clone().requires_grad_(True)
    delta = (direction / direction.flatten(1).norm(dim=1).view(-1, *[1] * (start.dim() - 1))
             * scale.view(-1, *[1] * (start.dim() - 1))).requires_grad_(True)
    optimizer = torch.optim.Adam([x, delta], lr=1e-2)
    for _ in range(steps):
        values = ratio(x, x + delta)
        best = max(best, float(values.detach().max()))
        optimizer.zero_grad()
        (-values.log().sum()).backward()
        optimizer.step()
    with torch.no_grad():
        best = max(best, float(ratio(x, x + delta).max()))
    return best


def _certified_data(arrays, epochs: int, batch_size: int, lr: float) -> CertifiedData:
    (train_x, train_y), (val_x, val_y), (test_x, test_y), classes = arrays
    return CertifiedData(TrainingSet(train_x, train_y, classes, int(epochs), int(batch_size), float(lr)),
                         val_x, val_y, test_x, test_y)


def cifar10_certified(context: Context, *, root: str | None = None, image_size: int = 32, val_fraction: float = 0.1,
                      max_train: int | None = None, max_test: int | None = None, epochs: int = 200,
                      batch_size: int = 256, lr: float = 1e-3) -> CertifiedData:
    """CIFAR-10 (python pickle batches under ``DATA_DIR/cifar-10-batches-py``), 32×32 RGB in [0, 1].

    The seed draws a stratified validation split (``val_fraction``) of the 50,000 training
    images and, with ``max_train`` / ``max_test``, stratified subsamples of the training and
    the test images; the test images are the official test batch. ``image_size`` below 32
    averages pixel blocks (8: 4×4 blocks), for networks a CPU can train. See
    :mod:`harness.tasks.robustness.images` for the layout and the checks.
    """
    from harness.tasks.robustness.images import cifar_arrays

    _budget(epochs, batch_size, lr)
    arrays = cifar_arrays(context, "cifar10", root=root, val_fraction=val_fraction, max_train=max_train, max_test=max_test,
                          image_size=int(image_size))
    return _certified_data(arrays, epochs, batch_size, lr)


def cifar100_certified(context: Context, *, root: str | None = None, image_size: int = 32, val_fraction: float = 0.1,
                       max_train: int | None = None, max_test: int | None = None, epochs: int = 200,
                       batch_size: int = 256, lr: float = 1e-3) -> CertifiedData:
    """CIFAR-100 (``DATA_DIR/cifar-100-python/train`` and ``test``, the 100 fine labels); as :func:`cifar10_certified`."""
    from harness.tasks.robustness.images import cifar_arrays

    _budget(epochs, batch_size, lr)
    arrays = cifar_arrays(context, "cifar100", root=root, val_fraction=val_fraction, max_train=max_train, max_test=max_test,
                          image_size=int(image_size))
    return _certified_data(arrays, epochs, batch_size, lr)


def tiny_imagenet_certified(context: Context, *, root: str | None = None, classes: int = 200, image_size: int = 64,
                            val_fraction: float = 0.1,
                            max_train: int | None = None, max_test: int | None = None, epochs: int = 200,
                            batch_size: int = 256, lr: float = 1e-3) -> CertifiedData:
    """Tiny-ImageNet (``DATA_DIR/tiny-imagenet-200``, ``classes`` = 200 class folders of 64×64 RGB in [0, 1]);
    its labelled validation set is the test set; otherwise as :func:`cifar10_certified`."""
    from harness.tasks.robustness.images import tiny_imagenet_arrays

    _budget(epochs, batch_size, lr)
    arrays = tiny_imagenet_arrays(context, root=root, val_fraction=val_fraction, max_train=max_train,
                                  max_test=max_test, classes=int(classes), image_size=int(image_size),
                                  threads=max(1, int(context.threads)))
    return _certified_data(arrays, epochs, batch_size, lr)


# --------------------------------------------------------------------------- the task


class CertifiedRobustnessTask(Task):
    """Train on the dataset's budget, then certify ℓ2 radii from the logit margin and the layers' bounds."""

    name = "robustness.certified"
    version = "1"
    metrics = ("clean_accuracy", *EPSILONS, "average_certified_radius", "seconds_per_epoch", "seconds_per_epoch_cpu",
               "seconds_per_epoch_spread", "parameters", "empirical_lipschitz_ratio")
    protocol = CertifiedClassifier
    framework = "torch"

    def tiny(self, workdir: Path) -> dict[str, dict[str, Any]]:
        """Small configurations for the conformance test; the real-data ones read miniatures written in ``workdir``."""
        from harness.tasks.robustness.images import write_cifar, write_tiny_imagenet

        small = {"epochs": 1, "batch_size": 64}
        root = Path(workdir) / "certified-data"
        write_cifar(root, "cifar10", train_per_class=8, test_per_class=3)
        write_cifar(root, "cifar100", train_per_class=3, test_per_class=1)
        write_tiny_imagenet(root, classes=4, train_per_class=6, val_per_class=2)
        return {
            "digits-certified": {"max_images": 300, **small},
            # 4 px: the methods' default dense networks square their input dimension (SOC, Cayley)
            "cifar10-certified": {"root": str(root), "image_size": 4, "val_fraction": 0.25, **small},
            "cifar100-certified": {"root": str(root), "image_size": 4, "val_fraction": 0.34, **small},
            "tiny-imagenet-certified": {"root": str(root), "classes": 4, "image_size": 4, "val_fraction": 0.34, **small},
        }

    def chance(self, dataset: str, params: dict[str, Any]) -> dict[str, float]:
        classes = {"cifar100-certified": 100, "tiny-imagenet-certified": int(params.get("classes", 200))}.get(dataset, 10)
        return {"clean_accuracy": 100.0 / classes}  # balanced classes

    def evaluate(self, method: CertifiedClassifier, data: CertifiedData, context: Context) -> dict[str, float]:
        import torch

        from harness.tasks.timing import time_call

        who = type(method).__name__
        model = method.fit(data.train, context)
        # the cost of an epoch, timed apart from the real fit: one-epoch fits of the same method on the same budget
        # (building the network, one pass of shuffled mini-batches), a warm-up fit excluded, the median of the repeats
        sync = torch.cuda.synchronize if str(context.device).startswith("cuda") else None
        _, timing = time_call(method.fit, dataclasses.replace(data.train, epochs=1), context, repeats=TIMING_REPEATS,
                              warmup=TIMING_WARMUP, sync=sync)
        if not hasattr(model, "lipschitz_factors") or not hasattr(model, "embed"):
            raise TypeError(f"{who}.fit returned {type(model).__name__}, not a model with embed() and lipschitz_factors()")
        parameters = sum(p.numel() for p in model.parameters() if p.requires_grad)
        # certify a float64 copy in evaluation mode (cached weights), on the cell's device
        model = copy.deepcopy(model).to(device=context.device, dtype=torch.float64).eval()
        images, labels = (data.val_images, data.val_labels) if context.split == "val" else (data.test_images, data.test_labels)
        x = torch.as_tensor(images, dtype=torch.float64, device=context.device)
        bound, _ = lipschitz_bound(model, device=context.device)
        with torch.no_grad():
            logits = model(x).cpu().numpy()
            weight = model.head_weight()
        if model.head_kind == "lln" and weight is None:
            raise TypeError(f"{who}'s model has an LLN head but head_weight() is None")
        weight = None if model.head_kind == "plain" else weight.cpu().numpy()
        radii = certified_radii(logits, bound, weight)
        correct = logits.argmax(axis=1) == labels
        scores = {"clean_accuracy": 100.0 * float(correct.mean())}
        for metric, epsilon in EPSILONS.items():
            scores[metric] = 100.0 * float((correct & (radii > epsilon)).mean())
        scores["average_certified_radius"] = float(np.where(correct, radii, 0.0).mean())
        scores.update(timing.metrics("seconds_per_epoch"))
        scores["parameters"] = float(parameters)
        if math.isfinite(bound):
            observed = empirical_lipschitz(model.embed, x, rng=context.rng("certificate-check"))
            ratio = observed / bound
            if ratio > 1.0 + TOLERANCE:
                raise CertificateViolation(
                    f"{who}: a pair of inputs has ‖f(x) − f(x′)‖/‖x − x′‖ = {observed:.9g} above the certified bound "
                    f"{bound:.9g} (ratio {ratio:.9g}): the certificate does not hold")
            scores["empirical_lipschitz_ratio"] = ratio
        else:
            scores["empirical_lipschitz_ratio"] = 0.0  # no certificate to check
        return scores


TASK = CertifiedRobustnessTask()
