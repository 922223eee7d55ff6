"""Task ``generative.finetune``: fine-tune a pretrained, under-capacity generative model and score its samples.

The **task** pretrains the reference, a model of its dataset's :class:`Family`: an EDM-preconditioned MLP denoiser
(:mod:`harness.tasks.generative.edm`) on continuous data, a causal model (MADE, :mod:`harness.tasks.generative.causal`)
on binary pixels; small enough that maximum likelihood covers every mode and smears mass between them, trained
with Adam on the seed's training data until its loss on the checkpoint-selection set (the denoising loss at fixed
noise draws; the exact negative log-likelihood) stops falling (:func:`~harness.tasks.training.train_to_plateau`).
The pretraining depends on the seed and the data only, so every
method of a seed starts from the same reference (one pretraining per worker, deterministic, so two workers train
the same one), and its curve is kept in every row: the page shows it flat.

Each method then gets a :class:`FinetuneSession`: the frozen reference, the training data and the task's one
training loop (:meth:`FinetuneSession.train_rounds`: the same real batches, noise draws, Adam learning rate, steps
per round, reference samples per round and checkpoint selection for every method that trains). A method hands
back a :class:`Sampler`; the task draws ``samples`` from it with the same initial noise for every method of a
seed (paired comparisons) and scores them against held-out data (the tuning images or draws while tuning, the test
ones for the leaderboard): ``mmd`` (the primary metric) and ``energy_distance`` on every dataset, ``precision``, ``recall`` and ``sample_nll`` on
the mixtures (their density is known), ``frechet_distance`` and ``classifier_confidence`` on the digits (features of
a small classifier trained once per seed on the training images), ``data_nll`` where the method's model has an exact
likelihood (the causal models, the independent pixels). A method reads its model's log-likelihood through the
session (:meth:`FinetuneSession.nll`: exact for the causal model, the ELBO's weighted denoising error for the
denoiser), so one method runs on both families. Digit samples are clipped to the pixel range
[−1, 1] before scoring, as image generators' are.
"""
from __future__ import annotations

import copy
import dataclasses
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Protocol

import numpy as np

from harness.tasks.base import Context, DataError, Task, WorkerCache
from harness.tasks.evaluation import Curve, Evaluation
from harness.tasks.parameters import count, positive
from harness.tasks.training import TrainingLog, train_to_plateau

_REFERENCES = WorkerCache(8)
_CLASSIFIERS = WorkerCache(8)
ANNEAL = 0.1  # the pretraining's second phase runs at this share of its learning rate


# --------------------------------------------------------------------------- what a method sees


class Sampler(Protocol):
    def sample(self, count: int, generator) -> Any:
        """(count, dim) float32 torch samples; ``generator`` (a ``torch.Generator``) draws any randomness."""
        ...


@dataclass(frozen=True)
class Batch:
    """Data with its noise draw: x (B, dim), σ (B, 1), n (B, dim). Every model that a loss evaluates on a batch sees
    the same (σ, n). A causal model's batch has no noise (σ and n are None): its likelihood is exact."""

    x: Any
    sigma: Any = None
    noise: Any = None


class Finetuner(Protocol):
    """What a method of this task implements."""

    def finetune(self, session: "FinetuneSession") -> Sampler:
        """Fine-tune (through ``session.train_rounds``) or re-sample the session's reference; the sampler to score."""
        ...


Loss = Callable[[Any, Any, Batch, "Batch | None"], Any]  # (model, round's reference, real, fake) → scalar tensor


@dataclass(frozen=True)
class PretrainPlan:
    """The reference's size and its pretraining, the same for every method (Adam, a plateau rule)."""

    width: int
    depth: int
    batch_size: int
    lr: float
    every: int
    min_steps: int
    max_steps: int
    tolerance: float
    validation_draws: int  # noise draws per selection point in the plateau's fixed validation loss


@dataclass(frozen=True)
class FinetunePlan:
    """One round of fine-tuning, the same for every method that trains."""

    steps: int  # Adam steps per round
    batch_size: int
    lr: float
    every: int  # steps between checkpoint readings
    reference_pool: int  # reference samples drawn per round (the fakes)
    sampling_steps: int  # Heun steps of every sampler (2 × steps − 1 denoiser calls)
    validation_samples: int  # samples per checkpoint reading


@dataclass(frozen=True)
class Mixture:
    """An isotropic Gaussian mixture with equal weights: ``modes`` (K, dim), standard deviation ``sigma``."""

    modes: np.ndarray
    sigma: float

    def draw(self, rng: np.random.Generator, count: int) -> np.ndarray:
        which = rng.integers(len(self.modes), size=count)
        return self.modes[which] + self.sigma * rng.standard_normal((count, self.modes.shape[1]))

    def log_density(self, x: np.ndarray) -> np.ndarray:
        from scipy.special import logsumexp

        d = self.modes.shape[1]
        squared = ((x[:, None, :] - self.modes[None]) ** 2).sum(-1)
        log_normal = -0.5 * squared / self.sigma**2 - d * math.log(self.sigma) - 0.5 * d * math.log(2 * math.pi)
        return logsumexp(log_normal, axis=1) - math.log(len(self.modes))

    def coverage(self, x: np.ndarray) -> tuple[float, float]:
        """(precision, recall): the share of ``x`` within 3σ of its nearest mode, and the share of modes holding at
        least a quarter of their fair share len(x) / K of such samples."""
        distance = np.sqrt(((x[:, None, :] - self.modes[None]) ** 2).sum(-1))
        nearest, within = distance.argmin(1), distance.min(1) <= 3 * self.sigma
        held = np.bincount(nearest[within], minlength=len(self.modes))
        return float(within.mean()), float((held >= 0.25 * len(x) / len(self.modes)).mean())


@dataclass(frozen=True)
class GenerativeData:
    """A dataset: the seed's ``train`` and ``selection`` sets (the same for both splits), the ``scoring`` set of the
    split (tuning draws while tuning, test draws for the leaderboard), and the sanity row's ``fresh`` sample,
    disjoint from all of them. ``mixture`` where the density is known; ``labels`` of the training images for the
    digits' classifier."""

    instance: str  # what identifies the training data and the pretraining (not the split)
    train: np.ndarray
    selection: np.ndarray
    scoring: np.ndarray
    fresh: np.ndarray
    pretrain: PretrainPlan
    plan: FinetunePlan
    bandwidth: float = 1.0  # the MMD's kernel width
    mixture: Mixture | None = None
    labels: np.ndarray | None = None
    clip: tuple[float, float] | None = None
    family: str = "diffusion"  # the reference's kind: a key of FAMILIES

    @property
    def model_family(self) -> "Family":
        return FAMILIES[self.family]

    @property
    def dim(self) -> int:
        return self.train.shape[1]

    @property
    def sigma_data(self) -> float:
        return float(self.train.std())


# --------------------------------------------------------------------------- datasets


def _plans(width, depth, batch_size, pretrain_lr, pretrain_every, min_steps, max_steps, tolerance, validation_draws,
           finetune_steps, finetune_batch, finetune_lr, checkpoint_every, sampling_steps, validation_samples, *,
           reference_pool) -> tuple[PretrainPlan, FinetunePlan]:
    pretrain = PretrainPlan(count("width", width), count("depth", depth), count("batch_size", batch_size),
                            positive("pretrain_lr", pretrain_lr), count("pretrain_every", pretrain_every),
                            count("min_steps", min_steps), count("max_steps", max_steps),
                            positive("tolerance", tolerance), count("validation_draws", validation_draws))
    if pretrain.min_steps > pretrain.max_steps:
        raise DataError(f"min_steps = {min_steps} is above max_steps = {max_steps}: pretraining stops at its plateau "
                        "between the two")
    plan = FinetunePlan(count("finetune_steps", finetune_steps), count("finetune_batch", finetune_batch),
                        positive("finetune_lr", finetune_lr), count("checkpoint_every", checkpoint_every),
                        count("reference_pool", reference_pool), count("sampling_steps", sampling_steps, 2),
                        count("validation_samples", validation_samples, 2))
    if plan.every > plan.steps:
        raise DataError(f"checkpoint_every = {checkpoint_every} is above finetune_steps = {finetune_steps}: a round "
                        "would never read a checkpoint")
    return pretrain, plan


def _mixture_data(context: Context, name: str, mixture: Mixture, train: int, selection: int, scoring: int,
                  bandwidth, plans: tuple[PretrainPlan, FinetunePlan]) -> GenerativeData:
    counts = {k: count(k, v, 2) for k, v in (("train", train), ("selection", selection), ("scoring", scoring))}
    pretrain, finetune = plans
    instance = f"{name}:{mixture.sigma}:train{counts['train']}:selection{counts['selection']}"
    shared = Context(seed=context.seed, split="train", dataset=instance)  # the same for tuning and test cells
    return GenerativeData(
        instance, mixture.draw(shared.rng("train"), counts["train"]).astype(np.float32),
        mixture.draw(shared.rng("selection"), counts["selection"]).astype(np.float32),
        mixture.draw(dataclasses.replace(context, dataset=instance).rng("scoring"), counts["scoring"]).astype(np.float32),
        mixture.draw(dataclasses.replace(context, dataset=instance).rng("fresh"), counts["scoring"]).astype(np.float32),
        pretrain, finetune, positive("bandwidth", bandwidth), mixture=mixture)


def ring_8(context: Context, *, modes: int = 8, radius: float = 2.0, sigma: float = 0.05, train: int = 20000,
           selection: int = 2000, scoring: int = 2000, width: int = 64, depth: int = 2, reference_pool: int = 8000,
           bandwidth: float = 0.1, batch_size: int = 256, pretrain_lr: float = 1e-3, pretrain_every: int = 100,
           min_steps: int = 10000, max_steps: int = 30000, tolerance: float = 0.002, validation_draws: int = 4,
           finetune_steps: int = 500, finetune_batch: int = 256, finetune_lr: float = 1e-4,
           checkpoint_every: int = 50, sampling_steps: int = 32, validation_samples: int = 1000) -> GenerativeData:
    """``modes`` Gaussians of standard deviation ``sigma`` evenly on a circle of ``radius``. ``train`` points to
    pretrain and fine-tune on, ``selection`` to stop pretraining and pick checkpoints, ``scoring`` held-out points
    to score against (the fresh row draws as many again). The reference is a ``depth`` × ``width`` MLP denoiser,
    pretrained with Adam at ``pretrain_lr`` on batches of ``batch_size``, its selection loss (``validation_draws``
    noise draws per point) read every ``pretrain_every`` steps, until its last fifth fell by at most ``tolerance``
    (between ``min_steps`` and ``max_steps``). A fine-tuning round: ``finetune_steps`` Adam steps at
    ``finetune_lr`` on batches of ``finetune_batch``, ``reference_pool`` reference samples, a checkpoint read every
    ``checkpoint_every`` steps on ``validation_samples`` samples; every sampler takes ``sampling_steps`` Heun
    steps. ``bandwidth``: the MMD's kernel width (0.1 = 2σ at the default σ: it sees mass smeared between modes,
    which the energy distance, dominated by the layout's scale, barely does)."""
    k = count("modes", modes, 2)
    angles = 2 * math.pi * np.arange(k) / k
    centres = positive("radius", radius) * np.stack([np.cos(angles), np.sin(angles)], 1)
    plans = _plans(width, depth, batch_size, pretrain_lr, pretrain_every, min_steps, max_steps, tolerance,
                         validation_draws, finetune_steps, finetune_batch, finetune_lr, checkpoint_every,
                         sampling_steps, validation_samples, reference_pool=reference_pool)
    return _mixture_data(context, f"ring-{k}:r{radius}", Mixture(centres, positive("sigma", sigma)), train,
                         selection, scoring, bandwidth, plans)


def grid_25(context: Context, *, side: int = 5, spacing: float = 1.0, sigma: float = 0.05, train: int = 20000,
            selection: int = 2000, scoring: int = 2000, width: int = 64, depth: int = 2, reference_pool: int = 8000,
            bandwidth: float = 0.1, batch_size: int = 256, pretrain_lr: float = 1e-3, pretrain_every: int = 100,
           min_steps: int = 10000, max_steps: int = 30000, tolerance: float = 0.002, validation_draws: int = 4,
           finetune_steps: int = 500, finetune_batch: int = 256, finetune_lr: float = 1e-4,
           checkpoint_every: int = 50, sampling_steps: int = 32, validation_samples: int = 1000) -> GenerativeData:
    """A ``side`` × ``side`` grid of Gaussians ``spacing`` apart, centred at 0, each of standard deviation
    ``sigma``; the other parameters as :func:`ring_8`'s."""
    s = count("side", side, 2)
    axis = (np.arange(s) - (s - 1) / 2) * positive("spacing", spacing)
    centres = np.stack(np.meshgrid(axis, axis, indexing="ij"), -1).reshape(-1, 2)
    plans = _plans(width, depth, batch_size, pretrain_lr, pretrain_every, min_steps, max_steps, tolerance,
                         validation_draws, finetune_steps, finetune_batch, finetune_lr, checkpoint_every,
                         sampling_steps, validation_samples, reference_pool=reference_pool)
    return _mixture_data(context, f"grid-{s}x{s}:d{spacing}", Mixture(centres, positive("sigma", sigma)), train,
                         selection, scoring, bandwidth, plans)


def _digit_parts(context: Context, images: np.ndarray, selection, scoring, instance_name: str):
    """The instance's name and the seed's permutation of the digits into training, selection, tuning, test and fresh
    indices."""
    n_sel, n_score = count("selection", selection, 2), count("scoring", scoring, 2)
    n_train = len(images) - n_sel - 3 * n_score
    if n_train < 2:
        raise DataError(f"selection = {selection} and scoring = {scoring} (three sets of it: tuning, test, fresh) "
                        f"leave {n_train} of the {len(images)} digits for training; lower them")
    sets = f"n{len(images)}:selection{n_sel}:scoring{n_score}"
    # one permutation for every form of the digits (grey or binarised): the same images in the same sets
    order = Context(seed=context.seed, split="train", dataset=f"digits-64:{sets}").rng("split").permutation(len(images))
    return f"{instance_name}:{sets}", np.split(order, np.cumsum([n_train, n_sel, n_score, n_score]))


def _load_digits(limit):
    from sklearn.datasets import load_digits

    images, labels = load_digits(return_X_y=True)
    if limit is not None:
        images, labels = images[:count("limit", limit, 10)], labels[:limit]
    return images, labels


def digits_64(context: Context, *, selection: int = 200, scoring: int = 200, width: int = 256, depth: int = 3,
              reference_pool: int = 2000, limit: int | None = None, bandwidth: float | None = None, batch_size: int = 128, pretrain_lr: float = 1e-3, pretrain_every: int = 100,
           min_steps: int = 10000, max_steps: int = 30000, tolerance: float = 0.002, validation_draws: int = 4,
           finetune_steps: int = 500, finetune_batch: int = 128, finetune_lr: float = 1e-4,
           checkpoint_every: int = 50, sampling_steps: int = 32, validation_samples: int = 200) -> GenerativeData:
    """scikit-learn's bundled digits (8 × 8, values 0-16) scaled to [−1, 1], permuted by the seed and split into
    ``selection`` images (pretraining's plateau, checkpoints), ``scoring`` tuning images, ``scoring`` test images,
    ``scoring`` fresh images (the sanity row) and the rest for training; ``limit`` keeps only the first images (the
    tests' miniature). ``bandwidth``: the MMD's kernel width, by default the median distance between training
    images (the median heuristic). The plan's parameters as :func:`ring_8`'s."""
    images, labels = _load_digits(limit)
    instance, (train_i, sel_i, tune_i, test_i, fresh_i) = _digit_parts(context, images, selection, scoring,
                                                                        "digits-64")
    pretrain, finetune = _plans(width, depth, batch_size, pretrain_lr, pretrain_every, min_steps, max_steps, tolerance,
                         validation_draws, finetune_steps, finetune_batch, finetune_lr, checkpoint_every,
                         sampling_steps, validation_samples,
                                reference_pool=reference_pool)
    x = (images / 8.0 - 1.0).astype(np.float32)
    width_ = median_distance(x[train_i]) if bandwidth is None else positive("bandwidth", bandwidth)
    return GenerativeData(instance, x[train_i], x[sel_i], x[tune_i if context.split == "val" else test_i],
                          x[fresh_i], pretrain, finetune, width_, labels=labels[train_i], clip=(-1.0, 1.0))


def binary_digits_64(context: Context, *, threshold: int = 8, selection: int = 200, scoring: int = 200,
                     width: int = 16, depth: int = 1, reference_pool: int = 2000, limit: int | None = None,
                     bandwidth: float | None = None, batch_size: int = 128, pretrain_lr: float = 1e-3,
                     pretrain_every: int = 100, min_steps: int = 2000, max_steps: int = 30000,
                     tolerance: float = 0.002, finetune_steps: int = 500, finetune_batch: int = 128,
                     finetune_lr: float = 1e-4, checkpoint_every: int = 50,
                     validation_samples: int = 200) -> GenerativeData:
    """The bundled digits binarised (a pixel is 1 where its value 0-16 is at least ``threshold``), split as
    :func:`digits_64` splits them, for the autoregressive variant: the reference is a causal model (MADE,
    ``depth`` masked hidden layers of ``width`` units) with an exact likelihood, pretrained to its plateau on the
    exact negative log-likelihood of the selection images, sampled pixel by pixel. The other parameters as
    :func:`digits_64`'s (no noise draws and no sampler steps: the likelihood is exact, sampling ancestral)."""
    images, labels = _load_digits(limit)
    if isinstance(threshold, bool) or not isinstance(threshold, (int, np.integer)) or not 1 <= threshold <= 16:
        raise DataError(f"threshold = {threshold!r}: expected an integer pixel value from 1 to 16 (the digits' "
                        "pixels are 0-16)")
    instance, (train_i, sel_i, tune_i, test_i, fresh_i) = _digit_parts(context, images, selection, scoring,
                                                                        f"binary-digits-64:t{threshold}")
    pretrain, finetune = _plans(width, depth, batch_size, pretrain_lr, pretrain_every, min_steps, max_steps,
                                tolerance, 1, finetune_steps, finetune_batch, finetune_lr, checkpoint_every, 2,
                                validation_samples, reference_pool=reference_pool)
    x = (images >= threshold).astype(np.float32)
    width_ = median_distance(x[train_i]) if bandwidth is None else positive("bandwidth", bandwidth)
    return GenerativeData(instance, x[train_i], x[sel_i], x[tune_i if context.split == "val" else test_i],
                          x[fresh_i], pretrain, finetune, width_, labels=labels[train_i], family="autoregressive")


# --------------------------------------------------------------------------- measurement


def energy_distance(x, y) -> float:
    """2E‖X − Y‖ − E‖X − X'‖ − E‖Y − Y'‖ between the rows of x and y (torch), the within-set means without the
    diagonal (unbiased; it can fall slightly below 0 for two samples of one distribution)."""
    import torch

    x, y = x.double(), y.double()
    between = torch.cdist(x, y).mean()

    def within(a):
        n = a.shape[0]
        return torch.cdist(a, a).sum() / (n * (n - 1))

    return float(2 * between - within(x) - within(y))


def mmd(x, y, bandwidth: float) -> float:
    """The squared maximum mean discrepancy between the rows of x and y (torch) under the Gaussian kernel
    exp(−‖a − b‖² / 2h²), h = ``bandwidth``: the unbiased estimate (within-set means without the diagonal)."""
    import torch

    x, y = x.double(), y.double()

    def kernel(a, b):
        return torch.exp(-torch.cdist(a, b).square() / (2 * bandwidth**2))

    def within(a):
        n = a.shape[0]
        return (kernel(a, a).sum() - n) / (n * (n - 1))

    return float(within(x) + within(y) - 2 * kernel(x, y).mean())


def median_distance(x: np.ndarray, limit: int = 1000) -> float:
    """The median distance between two of the first ``limit`` rows of x (the median heuristic's bandwidth)."""
    from scipy.spatial.distance import pdist

    return float(np.median(pdist(x[:limit].astype(np.float64))))


def frechet_distance(a: np.ndarray, b: np.ndarray) -> float:
    """‖μ_a − μ_b‖² + tr(C_a + C_b − 2(C_a C_b)^½) between Gaussians fitted to the rows of a and b."""
    import warnings

    from scipy.linalg import LinAlgWarning, sqrtm

    mean_a, mean_b = a.mean(0), b.mean(0)
    cov_a, cov_b = np.cov(a, rowvar=False), np.cov(b, rowvar=False)
    with warnings.catch_warnings():  # a dead ReLU feature makes a covariance singular; its square root still exists
        warnings.simplefilter("ignore", LinAlgWarning)
        root = sqrtm(cov_a @ cov_b)
    root = root.real if np.iscomplexobj(root) else root
    return float(((mean_a - mean_b) ** 2).sum() + np.trace(cov_a + cov_b - 2 * root))


class DigitClassifier:
    """A small MLP classifier (64-64-16-10, ReLU) the task trains once per seed on the training images: its 16
    penultimate features for the Fréchet distance and its top-class probability for the confidence."""

    def __init__(self, images: np.ndarray, labels: np.ndarray, seed: int):
        from sklearn.neural_network import MLPClassifier

        self.model = MLPClassifier(hidden_layer_sizes=(64, 16), max_iter=600, random_state=seed).fit(images, labels)

    def features(self, x: np.ndarray) -> np.ndarray:
        h = x
        for w, b in zip(self.model.coefs_[:-1], self.model.intercepts_[:-1]):
            h = np.maximum(h @ w + b, 0.0)
        return h

    def confidence(self, x: np.ndarray) -> float:
        return float(self.model.predict_proba(x).max(1).mean())


def _torch_generator(context: Context, purpose: str):
    import torch

    seed = int(Context(seed=context.seed, split=context.split, dataset=context.dataset).rng(purpose).integers(2**62))
    return torch.Generator().manual_seed(seed)


class ODESampler:
    """Samples of a denoiser by the task's Heun sampler; ``score_scale`` w multiplies the score, D_w = x + w(D − x)
    (w > 1: a lower temperature)."""

    def __init__(self, denoiser, dim: int, sampling_steps: int, score_scale: float = 1.0):
        from harness.tasks.generative.edm import NoiseSchedule

        self.denoiser, self.dim, self.score_scale = denoiser, dim, float(score_scale)
        self.levels = NoiseSchedule().sampling_levels(sampling_steps)

    def denoise(self, x, sigma):
        denoised = self.denoiser(x, sigma)
        return denoised if self.score_scale == 1.0 else x + self.score_scale * (denoised - x)

    def sample(self, count: int, generator):
        import torch

        from harness.tasks.generative.edm import heun_sample

        device = next(self.denoiser.parameters()).device
        start = torch.randn(count, self.dim, generator=generator).to(device)
        return heun_sample(self.denoise, start, self.levels)


class ArraySampler:
    """The first ``count`` rows of a fixed array (the fresh-data row's held-out sample)."""

    def __init__(self, rows: np.ndarray):
        self.rows = rows

    def sample(self, count: int, generator):
        import torch

        if count > len(self.rows):
            raise ValueError(f"asked for {count} samples; the fresh set holds {len(self.rows)}")
        return torch.as_tensor(self.rows[:count])


class CausalSampler:
    """Ancestral samples of a causal model, its logits multiplied by ``scale`` (w > 1: a lower temperature); the
    same uniforms for every model of a seed. Its likelihood is exact (:meth:`log_prob`)."""

    def __init__(self, model, dim: int, scale: float = 1.0):
        self.model, self.dim, self.scale = model, dim, float(scale)

    def sample(self, count: int, generator):
        import torch

        device = next(self.model.parameters()).device
        return self.model.sample(torch.rand(count, self.dim, generator=generator).to(device), self.scale)

    def log_prob(self, x):
        import torch

        with torch.no_grad():
            return self.model.log_prob(x.to(next(self.model.parameters()).device), self.scale).cpu()


class Family:
    """A kind of reference model: how the task builds it, draws its training batches, reads its (estimated)
    negative log-likelihood and samples it. The pretraining, the fine-tuning loop and every method go through
    these, so one method runs on every family."""

    def build(self, data: GenerativeData):
        raise NotImplementedError

    def draw(self, pool, batch_size: int, generator, device: str) -> Batch:
        """A batch of ``batch_size`` rows of ``pool`` with its noise draw (rows, then noise, from ``generator``)."""
        raise NotImplementedError

    def fixed(self, rows, draws: int, generator, device: str) -> Batch:
        """The selection set's fixed batch (``draws`` noise draws a row where the loss is an estimate)."""
        raise NotImplementedError

    def nll(self, model, batch: Batch):
        """(B,) per-row negative log-likelihood, exact or the ELBO's estimate up to a constant of the model."""
        raise NotImplementedError

    def loss(self, model, batch: Batch):
        """Maximum likelihood's training loss on a batch."""
        raise NotImplementedError

    def sampler(self, model, data: GenerativeData, scale: float = 1.0) -> Sampler:
        raise NotImplementedError


class Diffusion(Family):
    """EDM denoisers: the loss is the denoising loss, the log-likelihood the ELBO's weighted denoising error at the
    batch's noise draw, the sampler Heun's (its score times ``scale``)."""

    def build(self, data: GenerativeData):
        from harness.tasks.generative.edm import EDMDenoiser

        return EDMDenoiser(data.dim, data.sigma_data, data.pretrain.width, data.pretrain.depth)

    def draw(self, pool, batch_size: int, generator, device: str) -> Batch:
        import torch

        from harness.tasks.generative.edm import NoiseSchedule

        index = torch.randint(len(pool), (batch_size,), generator=generator).to(device)
        sigma = NoiseSchedule().draw(batch_size, generator).to(device)
        noise = torch.randn(batch_size, pool.shape[1], generator=generator).to(device)
        return Batch(pool[index], sigma, noise)

    def fixed(self, rows, draws: int, generator, device: str) -> Batch:
        import torch

        from harness.tasks.generative.edm import NoiseSchedule

        rows = rows.repeat(draws, 1)
        sigma = NoiseSchedule().draw(len(rows), generator)
        noise = torch.randn(rows.shape, generator=generator)
        return Batch(rows.to(device), sigma.to(device), noise.to(device))

    def nll(self, model, batch: Batch):
        from harness.tasks.generative.edm import weighted_error

        return weighted_error(model, batch.x, batch.sigma, batch.noise)

    def loss(self, model, batch: Batch):
        from harness.tasks.generative.edm import denoising_loss

        return denoising_loss(model, batch.x, batch.sigma, batch.noise)

    def sampler(self, model, data: GenerativeData, scale: float = 1.0) -> Sampler:
        return ODESampler(model, data.dim, data.plan.sampling_steps, scale)


class Autoregressive(Family):
    """Causal models of binary pixels (MADE): the likelihood is exact, the loss its mean per pixel, the sampler
    ancestral (its logits times ``scale``)."""

    def build(self, data: GenerativeData):
        from harness.tasks.generative.causal import MADE

        return MADE(data.dim, data.pretrain.width, data.pretrain.depth)

    def draw(self, pool, batch_size: int, generator, device: str) -> Batch:
        import torch

        return Batch(pool[torch.randint(len(pool), (batch_size,), generator=generator).to(device)])

    def fixed(self, rows, draws: int, generator, device: str) -> Batch:
        return Batch(rows.to(device))

    def nll(self, model, batch: Batch):
        return -model.log_prob(batch.x)

    def loss(self, model, batch: Batch):
        return self.nll(model, batch).mean() / batch.x.shape[-1]

    def sampler(self, model, data: GenerativeData, scale: float = 1.0) -> Sampler:
        return CausalSampler(model, data.dim, scale)


FAMILIES: dict[str, Family] = {"diffusion": Diffusion(), "autoregressive": Autoregressive()}


def pretrain_reference(data: GenerativeData, context: Context):
    """The seed's reference (a model of the dataset's family) trained to its plateau, and its validation-loss log
    (lower is better): Adam at ``plan.lr`` until the selection loss's last fifth fell by at most ``plan.tolerance``
    (between ``min_steps`` and ``max_steps``), then at ``ANNEAL`` × ``plan.lr`` by the same rule (at least half the
    first phase's steps, at most half of ``max_steps``): without the second phase, continued training at the
    fine-tuning's lower rate still improved the samples, so a gain over the reference could have been that
    annealing, not the method."""
    import torch

    plan, family = data.pretrain, data.model_family
    generator = _torch_generator(Context(seed=context.seed, split="train", dataset=data.instance), "pretrain")
    model = family.build(data).to(context.device)
    optimizer = torch.optim.Adam(model.parameters(), lr=plan.lr)
    train = torch.as_tensor(data.train).to(context.device)
    selection = family.fixed(torch.as_tensor(data.selection), plan.validation_draws, generator, context.device)

    def step() -> None:
        loss = family.loss(model, family.draw(train, plan.batch_size, generator, context.device))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()

    def negative_validation_loss() -> float:
        with torch.no_grad():
            return -float(family.loss(model, selection))

    model.train()
    # Adam at lr to its plateau, then at lr × ANNEAL to a second one (EDM anneals by an EMA instead); the second
    # phase runs at least half the first's steps, so that its drop lies before the last fifth of the whole curve,
    # which is what the plateau is read on
    first = train_to_plateau(step, negative_validation_loss, every=plan.every, min_steps=plan.min_steps,
                             max_steps=plan.max_steps, tolerance=plan.tolerance, name="reference_validation_loss")
    for group in optimizer.param_groups:
        group["lr"] = plan.lr * ANNEAL
    low = max(10 * plan.every, first.budget // 2)
    second = train_to_plateau(step, negative_validation_loss, every=plan.every, min_steps=low,
                              max_steps=max(low, plan.max_steps // 2), tolerance=plan.tolerance,
                              name="reference_validation_loss")
    model.eval().requires_grad_(False)
    total = first.budget + second.budget
    loss_log = TrainingLog("reference_validation_loss", budget=total, x_label="fraction of the pretraining's steps")
    loss_log.kept.update({f * first.budget / total: -v for f, v in first.kept.items()})
    loss_log.kept.update({(first.budget + f * second.budget) / total: -v for f, v in second.kept.items()})
    return model, loss_log


REFERENCE_CACHE = "generative-references"  # the harness cache's folder of pretrained references


def _reference_key(data: GenerativeData, context: Context) -> str:
    """What a pretrained reference depends on: the data's identity, the seed, the plan, the device, torch's version
    and the source of the code that trains it (this module and :mod:`harness.tasks.generative.edm`)."""
    import torch

    from harness import cache
    from harness.tasks.generative import causal, edm

    sources = [Path(edm.__file__).read_bytes(), Path(causal.__file__).read_bytes(), Path(__file__).read_bytes()]
    return cache.digest(data.instance, str(context.seed), repr(data.pretrain), context.device, torch.__version__,
                        context.precision, *sources)


def shared_reference(data: GenerativeData, context: Context):
    """:func:`pretrain_reference`, once per machine: the weights and the curve are kept in the harness cache (plain
    JSON, keyed by :func:`_reference_key`), and a file lock makes a second worker that needs the same reference wait
    for the first instead of training it again (the pretraining is deterministic, so a cached reference is the one
    a fresh training gives on this machine). Without a writable cache it trains."""
    import fcntl

    from harness import cache

    key = _reference_key(data, context)
    folder = cache.cache_dir() / REFERENCE_CACHE
    try:
        folder.mkdir(parents=True, exist_ok=True)
        lock = open(folder / f".{key}.lock", "w")
    except OSError:
        return pretrain_reference(data, context)
    with lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        stored = cache.get(REFERENCE_CACHE, key)
        if stored is not None:
            try:
                return _restore(stored, data, context)
            except (KeyError, TypeError, ValueError, RuntimeError):
                pass  # damaged or of another layout: train again
        model, log = pretrain_reference(data, context)
        cache.put(REFERENCE_CACHE, key, {
            "weights": {name: value.detach().cpu().double().flatten().tolist()
                        for name, value in model.state_dict().items()},
            "budget": log.budget, "kept": sorted(log.kept.items()), "x_label": log.x_label})
        return model, log


def _restore(stored: dict, data: GenerativeData, context: Context):
    import torch

    model = data.model_family.build(data)
    state = {name: torch.tensor(stored["weights"][name], dtype=value.dtype).reshape(value.shape)
             for name, value in model.state_dict().items()}
    model.load_state_dict(state)
    model = model.to(context.device).eval().requires_grad_(False)
    log = TrainingLog("reference_validation_loss", budget=int(stored["budget"]), x_label=stored["x_label"])
    log.kept.update({float(f): float(v) for f, v in stored["kept"]})
    return model, log


class FinetuneSession:
    """What a method works with: the frozen ``reference``, the ``training_data`` (numpy), the task's samplers and
    its one training loop. It counts what the method spends (``finetune_steps``, ``reference_samples``)."""

    def __init__(self, data: GenerativeData, reference, context: Context):
        self.data, self.reference, self.context = data, reference, context
        self.training_data = data.train
        self.dim = data.dim
        self.finetune_steps = 0
        self.reference_samples = 0
        self.validation_curve: list[tuple[int, float]] = []
        self.best_validation: float | None = None
        self._validation_generator_seed = int(
            Context(seed=context.seed, split="train", dataset=data.instance).rng("checkpoints").integers(2**62))

    def sampler(self, model, scale: float = 1.0) -> Sampler:
        """The task's sampler of ``model`` (the same for every method): Heun's for a denoiser, its score times
        ``scale``; ancestral for a causal model, its logits times ``scale`` (``scale`` > 1: a lower temperature)."""
        return self.data.model_family.sampler(model, self.data, scale)

    def nll(self, model, batch: Batch):
        """(B,) the negative log-likelihood of ``model`` on the batch's rows: exact for a causal model; for a
        denoiser the ELBO's estimate at the batch's noise draw, λ(σ)‖D(x + σn; σ) − x‖² summed over dimensions (up
        to terms that do not depend on the model, so a difference of two models' is their log-ratio's estimate)."""
        return self.data.model_family.nll(model, batch)

    def mle_loss(self, model, batch: Batch):
        """Maximum likelihood's training loss of ``model`` on the batch (the pretraining's)."""
        return self.data.model_family.loss(model, batch)

    def fresh_data(self) -> ArraySampler:
        """The held-out fresh sample of the data (the sanity row only: no method that claims anything uses it)."""
        return ArraySampler(self.data.fresh)

    def validation_mmd(self, sampler: Sampler) -> float:
        """The MMD of ``sampler``'s samples (the same initial noise every reading) to the selection set."""
        import torch

        generator = torch.Generator().manual_seed(self._validation_generator_seed)
        samples = _clip(sampler.sample(self.data.plan.validation_samples, generator).cpu(), self.data.clip)
        return mmd(samples, torch.as_tensor(self.data.selection), self.data.bandwidth)

    def train_rounds(self, loss: Loss, rounds: int, reference_samples: bool):
        """The task's fine-tuning loop, the same for every method that trains: ``rounds`` rounds of ``plan.steps``
        Adam steps at ``plan.lr`` on real batches of the training data (the same batches and noise draws for every
        method of a seed), each round starting from the model the last ended with; with ``reference_samples``, a
        round first draws ``plan.reference_pool`` samples of its reference (the pretrained one, then each round's
        result) and hands the loss a batch of them beside each real batch. Every ``plan.every`` steps the model's
        :meth:`validation_mmd` is read, and a round keeps its best checkpoint (its start included), as the paper
        keeps each round's best by FID. Returns the fine-tuned model (eval mode, no gradients)."""
        import torch

        plan, family, device = self.data.plan, self.data.model_family, self.context.device
        shared = Context(seed=self.context.seed, split="train", dataset=self.data.instance)
        # two streams, so that drawing reference samples never moves the real batches: every method sees the same
        real_generator, fake_generator = _torch_generator(shared, "finetune"), _torch_generator(shared, "fakes")
        train = torch.as_tensor(self.data.train).to(device)
        model = copy.deepcopy(self.reference).requires_grad_(True)
        reference = self.reference

        def draw(pool, generator):
            return family.draw(pool, plan.batch_size, generator, device)

        for _ in range(rounds):
            fakes = None
            if reference_samples:
                fakes = self.sampler(reference).sample(plan.reference_pool, fake_generator).to(device)
                self.reference_samples += plan.reference_pool
            model.eval()
            best = self.validation_mmd(self.sampler(model))
            best_state = copy.deepcopy(model.state_dict())
            optimizer = torch.optim.Adam(model.parameters(), lr=plan.lr)
            for step in range(1, plan.steps + 1):
                model.train()
                value = loss(model, reference, draw(train, real_generator),
                             None if fakes is None else draw(fakes, fake_generator))
                if not torch.isfinite(value):
                    raise FloatingPointError(f"fine-tuning diverged at step {self.finetune_steps + 1}: the loss is "
                                             f"{value.item()}")
                optimizer.zero_grad(set_to_none=True)
                value.backward()
                optimizer.step()
                self.finetune_steps += 1
                if step % plan.every == 0:
                    model.eval()
                    reading = self.validation_mmd(self.sampler(model))
                    self.validation_curve.append((self.finetune_steps, reading))
                    if reading < best:
                        best, best_state = reading, copy.deepcopy(model.state_dict())
            model.load_state_dict(best_state)
            self.best_validation = best
            reference = copy.deepcopy(model).eval().requires_grad_(False)
        return model.eval().requires_grad_(False)


def _clip(samples, clip):
    return samples if clip is None else samples.clamp(*clip)


class GenerativeFinetuneTask(Task):
    """Pretrain the seed's reference, let the method fine-tune or re-sample it, score its samples."""

    name = "generative.finetune"
    version = "1"
    metrics = ("mmd", "energy_distance", "precision", "recall", "sample_nll", "frechet_distance", "classifier_confidence",
               "data_nll",
               "validation_mmd", "reference_validation_loss", "reference_steps", "finetune_steps",
               "reference_samples", "train_s")
    protocol = Finetuner
    framework = "torch"

    def tiny(self, workdir: Path) -> dict[str, dict[str, Any]]:
        """A few steps on small sets (the conformance test)."""
        small = {"batch_size": 32, "min_steps": 10, "max_steps": 10, "pretrain_every": 1, "finetune_steps": 4,
                 "finetune_batch": 16, "checkpoint_every": 2, "reference_pool": 64, "sampling_steps": 4,
                 "validation_samples": 16, "width": 16}
        return {"ring-8": {"train": 256, "selection": 32, "scoring": 64, **small},
                "grid-25": {"train": 256, "selection": 32, "scoring": 64, **small},
                "digits-64": {"selection": 20, "scoring": 30, "limit": 200, **small},
                "binary-digits-64": {"selection": 20, "scoring": 30, "limit": 200,
                                     **{k: v for k, v in small.items() if k != "sampling_steps"}}}

    def evaluate(self, method: Finetuner, data: GenerativeData, context: Context) -> Evaluation:
        import torch

        reference, reference_log = _REFERENCES.get_or_build(
            (data.instance, context.seed, data.pretrain, context.device), lambda: shared_reference(data, context))
        session = FinetuneSession(data, reference, context)
        started = time.perf_counter()
        sampler = method.finetune(session)
        if not hasattr(sampler, "sample"):
            raise TypeError(f"{type(method).__name__}.finetune returned {type(sampler).__name__}; expected a sampler "
                            "with sample(count, generator)")
        if session.best_validation is None:  # a method that did not train: its sampler's own reading
            session.best_validation = session.validation_mmd(sampler)
        train_s = time.perf_counter() - started
        count = len(data.fresh)
        samples = sampler.sample(count, _torch_generator(context, "samples"))
        if tuple(samples.shape) != (count, data.dim):
            raise TypeError(f"{type(method).__name__}'s sampler returned shape {tuple(samples.shape)}; expected "
                            f"{(count, data.dim)}")
        samples = _clip(samples.detach().float().cpu(), data.clip)
        if not torch.isfinite(samples).all():
            raise FloatingPointError(f"{type(method).__name__}'s sampler returned non-finite samples")
        metrics = {
            "mmd": mmd(samples, torch.as_tensor(data.scoring), data.bandwidth),
            "energy_distance": energy_distance(samples, torch.as_tensor(data.scoring)),
            "validation_mmd": session.best_validation,
            "reference_validation_loss": reference_log.final,
            "reference_steps": float(reference_log.budget),
            "finetune_steps": float(session.finetune_steps),
            "reference_samples": float(session.reference_samples),
            "train_s": train_s,
        }
        x = samples.numpy().astype(np.float64)
        if data.mixture is not None:
            metrics["precision"], metrics["recall"] = data.mixture.coverage(x)
            metrics["sample_nll"] = float(-data.mixture.log_density(x).mean())
        if data.labels is not None:
            classifier = _CLASSIFIERS.get_or_build((data.instance, context.seed), lambda: DigitClassifier(
                data.train.astype(np.float64), data.labels, context.seed))
            metrics["frechet_distance"] = frechet_distance(classifier.features(x),
                                                           classifier.features(data.scoring.astype(np.float64)))
            metrics["classifier_confidence"] = classifier.confidence(x)
        if hasattr(sampler, "log_prob"):  # an exact likelihood: the scoring images' negative log-likelihood
            metrics["data_nll"] = float(-sampler.log_prob(torch.as_tensor(data.scoring)).double().mean())
        curves = reference_log.curves()
        if session.validation_curve:
            steps, values = zip(*session.validation_curve)
            curves["validation_mmd"] = Curve(
                [s / session.finetune_steps for s in steps], list(values),
                x_label="fraction of the fine-tuning steps", y_label="validation_mmd")
        return Evaluation(metrics, curves)


TASK = GenerativeFinetuneTask()
