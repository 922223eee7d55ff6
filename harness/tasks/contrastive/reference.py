"""Task ``contrastive.reference``: train a two-tower contrastive model on image-text pairs, with a pretrained
reference model at hand, and score it zero-shot.

The **task** draws the pairs, trains the reference (the same two-tower architecture, narrower, trained with CLIP's
loss on a separate clean pool of pairs until its zero-shot accuracy on the checkpoint-selection pairs stops rising),
and hands each method a :class:`ContrastiveSession`: the frozen reference, the training pairs and the task's one
training loop (:meth:`ContrastiveSession.train`: the same initial weights, batches, Adam learning rate and number
of steps for every method that trains, and the same checkpoint selection, the best zero-shot accuracy on the
selection pairs). A method gives the loss of a batch; the loop counts the samples it trains on
(``samples_seen``, the budget: equal for every arm) and those it only scores (``scored_samples``: JEST's
super-batch). The method hands back an :class:`Embedder`, which the task scores on held-out pairs (the tuning
pairs while tuning, the test pairs for the leaderboard): ``zero_shot_top1`` (each image's class is the caption its
embedding is nearest to, the primary metric) and ``i2t_recall1`` (each image's nearest text among the held-out
pairs is its own).

Data: :func:`paired_mixture`, two views of a latent class mixture through different random maps, with the share of
the training pool used (``fraction``) and the number of classes (the density of same-class "negatives" in a batch)
as parameters, and optionally mismatched training pairs; :func:`paired_digits`, scikit-learn's bundled digits with a
coarse second view.
"""
from __future__ import annotations

import copy
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Protocol

import numpy as np

from harness.tasks.base import Context, DataError, Task, WorkerCache
from harness.tasks.evaluation import Evaluation
from harness.tasks.parameters import count, non_negative, positive
from harness.tasks.training import TrainingLog, train_to_plateau

_REFERENCES = WorkerCache(8)


# --------------------------------------------------------------------------- what a method sees


class Embedder(Protocol):
    def embed_images(self, images) -> Any:
        """(N, E) unit-norm torch embeddings of (N, image_dim) float32 images."""
        ...

    def embed_texts(self, texts) -> Any:
        """(N, E) unit-norm torch embeddings of (N, text_dim) float32 texts (captions included)."""
        ...


class ContrastiveMethod(Protocol):
    """What a method of this task implements."""

    def fit(self, session: "ContrastiveSession") -> Embedder:
        """Train (through ``session.train``) or build an embedder from the session's pairs; the embedder to score."""
        ...


@dataclass(frozen=True)
class PairBatch:
    """A training batch: its (B, image_dim) ``images`` and (B, text_dim) ``texts`` and the target network's (B, B)
    similarities ``s`` (with gradients)."""

    images: Any
    texts: Any
    s: Any


Loss = Callable[[PairBatch], Any]  # a batch → scalar tensor
Selector = Callable[[Any, Any, Any, int], Any]  # (network, images, texts, keep) → indices of the kept rows


@dataclass(frozen=True)
class TrainPlan:
    """The target's training, the same for every method: ``steps`` Adam steps at ``lr`` on batches of
    ``batch_size``; the network ``width`` hidden units per tower, ``embed`` dimensions; the zero-shot accuracy on the
    selection pairs read every ``every`` steps, the best checkpoint kept."""

    steps: int
    batch_size: int
    lr: float
    every: int
    width: int
    embed: int


@dataclass(frozen=True)
class ReferencePlan:
    """The reference's training: CLIP's loss (learnable scale) with Adam at ``lr`` on batches of ``batch_size`` of
    the reference pool, to the plateau of its zero-shot accuracy on the selection pairs (read every ``every`` steps,
    the last fifth gaining at most ``tolerance``, between ``min_steps`` and ``max_steps``); ``width`` hidden units."""

    width: int
    batch_size: int
    lr: float
    every: int
    min_steps: int
    max_steps: int
    tolerance: float


@dataclass(frozen=True)
class PairedData:
    """A dataset. ``instance`` names what the reference depends on (the views' maps, the reference pool, the
    selection pairs): the same for every ``fraction`` of the training pool and for both splits. ``scoring_*`` are
    the split's held-out pairs (tuning pairs while tuning, test pairs for the leaderboard)."""

    instance: str
    train_images: np.ndarray
    train_texts: np.ndarray
    reference_images: np.ndarray
    reference_texts: np.ndarray
    selection_images: np.ndarray
    selection_texts: np.ndarray
    selection_labels: np.ndarray
    scoring_images: np.ndarray
    scoring_texts: np.ndarray
    scoring_labels: np.ndarray
    captions: np.ndarray  # (classes, text_dim): class k's caption
    plan: TrainPlan
    reference_plan: ReferencePlan

    @property
    def classes(self) -> int:
        return len(self.captions)


# --------------------------------------------------------------------------- datasets


def _plans(steps, batch_size, lr, every, width, embed, reference_width, reference_batch, reference_lr,
           reference_every, reference_min_steps, reference_max_steps, reference_tolerance) -> tuple[TrainPlan, ReferencePlan]:
    plan = TrainPlan(count("steps", steps), count("batch_size", batch_size, 2), positive("lr", lr),
                     count("every", every), count("width", width), count("embed", embed))
    if plan.every > plan.steps:
        raise DataError(f"every = {every} is above steps = {steps}: no checkpoint would be read")
    reference = ReferencePlan(count("reference_width", reference_width), count("reference_batch", reference_batch, 2),
                              positive("reference_lr", reference_lr), count("reference_every", reference_every),
                              count("reference_min_steps", reference_min_steps),
                              count("reference_max_steps", reference_max_steps),
                              non_negative("reference_tolerance", reference_tolerance))
    if reference.min_steps > reference.max_steps:
        raise DataError(f"reference_min_steps = {reference_min_steps} is above reference_max_steps = "
                        f"{reference_max_steps}: the reference trains to its plateau between the two")
    return plan, reference


def _mismatch(rng: np.random.Generator, texts: np.ndarray, share: float) -> np.ndarray:
    """``texts`` with a ``share`` of its rows replaced by other rows' texts (a derangement of the chosen rows)."""
    if not 0 <= share < 1:
        raise DataError(f"mismatched = {share!r}: expected a share in [0, 1)")
    chosen = rng.choice(len(texts), int(round(share * len(texts))), replace=False)
    if len(chosen) < 2:
        return texts
    out = texts.copy()
    out[chosen] = texts[np.roll(chosen, 1)]
    return out


def paired_mixture(context: Context, *, classes: int = 20, latent_dim: int = 8, image_dim: int = 32,
                   text_dim: int = 16, spread: float = 1.0, within: float = 0.5, gain: float = 1.0, noise: float = 0.1,
                   pool: int = 10000, fraction: float = 1.0, mismatched: float = 0.0, reference_pairs: int = 2000,
                   selection: int = 1000, scoring: int = 2000, steps: int = 1500, batch_size: int = 256,
                   lr: float = 1e-3, every: int = 50, width: int = 64, embed: int = 32, reference_width: int = 32,
                   reference_batch: int = 256, reference_lr: float = 1e-3, reference_every: int = 50,
                   reference_min_steps: int = 500, reference_max_steps: int = 5000,
                   reference_tolerance: float = 0.005) -> PairedData:
    """Two views of a latent class mixture. The seed draws ``classes`` class centres μ_k ~ N(0, ``spread``² I) in
    ``latent_dim`` dimensions and two random maps (A's entries N(0, ``gain``² / latent_dim): a larger gain saturates
    the tanh more); a pair's latent is z = μ_c + ``within`` · N(0, I) (c uniform), its image
    x = tanh(A z) + ``noise`` · N(0, I) (``image_dim``) and its text t = B z + ``noise`` · N(0, I)
    (``text_dim``); class k's caption is B μ_k. The seed draws a training pool of ``pool`` pairs, of which the first
    ``fraction`` is used (so a smaller fraction is a subset of a larger one), ``mismatched`` of them given another
    pair's text (web noise; 0 in the main comparison), a separate clean pool of ``reference_pairs`` for the
    reference, ``selection`` pairs for checkpoints and the reference's plateau, and ``scoring`` tuning and as many
    test pairs. The plans' parameters: :class:`TrainPlan` and :class:`ReferencePlan`."""
    k = count("classes", classes, 2)
    dims = {name: count(name, value) for name, value in
            (("latent_dim", latent_dim), ("image_dim", image_dim), ("text_dim", text_dim))}
    sizes = {name: count(name, value, 2) for name, value in
             (("pool", pool), ("reference_pairs", reference_pairs), ("selection", selection), ("scoring", scoring))}
    if not 0 < fraction <= 1 or isinstance(fraction, bool):
        raise DataError(f"fraction = {fraction!r}: expected a share of the training pool in (0, 1]")
    used = int(round(fraction * sizes["pool"]))
    plan, reference_plan = _plans(steps, batch_size, lr, every, width, embed, reference_width, reference_batch,
                                  reference_lr, reference_every, reference_min_steps, reference_max_steps,
                                  reference_tolerance)
    if used < plan.batch_size:
        raise DataError(f"fraction = {fraction} of pool = {pool} leaves {used} training pairs, fewer than a batch "
                        f"(batch_size = {plan.batch_size})")
    spread_, within_, noise_ = positive("spread", spread), non_negative("within", within), non_negative("noise", noise)
    gain_ = positive("gain", gain)
    instance = (f"paired-mixture:k{k}:d{dims['latent_dim']}-{dims['image_dim']}-{dims['text_dim']}:s{spread_}:"
                f"w{within_}:g{gain_}:n{noise_}:ref{sizes['reference_pairs']}:sel{sizes['selection']}")
    shared = Context(seed=context.seed, split="train", dataset=instance)  # the same for tuning and test cells
    maps = shared.rng("maps")
    centres = maps.normal(0.0, spread_, (k, dims["latent_dim"]))
    image_map = maps.normal(0.0, gain_ / np.sqrt(dims["latent_dim"]), (dims["image_dim"], dims["latent_dim"]))
    text_map = maps.normal(0.0, 1.0 / np.sqrt(dims["latent_dim"]), (dims["text_dim"], dims["latent_dim"]))

    def draw(rng: np.random.Generator, n: int):
        labels = rng.integers(0, k, n)
        z = centres[labels] + within_ * rng.standard_normal((n, dims["latent_dim"]))
        images = np.tanh(z @ image_map.T) + noise_ * rng.standard_normal((n, dims["image_dim"]))
        texts = z @ text_map.T + noise_ * rng.standard_normal((n, dims["text_dim"]))
        return images.astype(np.float32), texts.astype(np.float32), labels

    train_images, train_texts, _ = draw(shared.rng("pool"), sizes["pool"])
    train_images, train_texts = train_images[:used], train_texts[:used]
    if mismatched:
        train_texts = _mismatch(shared.rng("mismatch", f"{fraction}"), train_texts, float(mismatched))
    reference_images, reference_texts, _ = draw(shared.rng("reference"), sizes["reference_pairs"])
    selection_images, selection_texts, selection_labels = draw(shared.rng("selection"), sizes["selection"])
    held_out = Context(seed=context.seed, split=context.split, dataset=instance).rng("scoring")
    scoring_images, scoring_texts, scoring_labels = draw(held_out, sizes["scoring"])
    return PairedData(instance, train_images, train_texts, reference_images, reference_texts, selection_images,
                      selection_texts, selection_labels, scoring_images, scoring_texts, scoring_labels,
                      (centres @ text_map.T).astype(np.float32), plan, reference_plan)


def _load_digits(limit):
    from sklearn.datasets import load_digits

    images, labels = load_digits(return_X_y=True)
    if limit is not None:
        images, labels = images[:count("limit", limit, 20)], labels[:limit]
    return images, labels


def paired_digits(context: Context, *, text_dim: int = 16, noise: float = 0.1, reference_pairs: int = 300,
                  selection: int = 200, scoring: int = 300, mismatched: float = 0.0, limit: int | None = None,
                  steps: int = 1500, batch_size: int = 128, lr: float = 1e-3, every: int = 50, width: int = 64,
                  embed: int = 32, reference_width: int = 32, reference_batch: int = 128, reference_lr: float = 1e-3,
                  reference_every: int = 50, reference_min_steps: int = 500, reference_max_steps: int = 5000,
                  reference_tolerance: float = 0.005) -> PairedData:
    """scikit-learn's bundled digits as images (64 pixels scaled to [0, 1]) paired with a coarse second view: the
    digit averaged over 2 × 2 blocks (16 values) through a random linear map to ``text_dim`` dimensions (drawn by the
    seed) plus ``noise``; class k's caption is the mean second view of its training digits (a prompt per class). The
    seed permutes the digits into ``reference_pairs`` (the reference's pool), ``selection``, ``scoring`` tuning,
    ``scoring`` test pairs and the rest for training; ``limit`` keeps only the first digits (the tests'
    miniature)."""
    raw, labels = _load_digits(limit)
    sizes = {name: count(name, value, 2) for name, value in
             (("reference_pairs", reference_pairs), ("selection", selection), ("scoring", scoring))}
    plan, reference_plan = _plans(steps, batch_size, lr, every, width, embed, reference_width, reference_batch,
                                  reference_lr, reference_every, reference_min_steps, reference_max_steps,
                                  reference_tolerance)
    n_train = len(raw) - sizes["reference_pairs"] - sizes["selection"] - 2 * sizes["scoring"]
    if n_train < plan.batch_size:
        raise DataError(f"reference_pairs = {reference_pairs}, selection = {selection} and scoring = {scoring} (twice: "
                        f"tuning and test) leave {n_train} of the {len(raw)} digits for training, fewer than a batch "
                        f"(batch_size = {plan.batch_size}); lower them")
    noise_, t_dim = non_negative("noise", noise), count("text_dim", text_dim)
    instance = f"paired-digits:n{len(raw)}:t{t_dim}:n{noise_}:ref{sizes['reference_pairs']}:sel{sizes['selection']}"
    shared = Context(seed=context.seed, split="train", dataset=instance)
    images = (raw / 16.0).astype(np.float32)
    coarse = images.reshape(-1, 4, 2, 4, 2).mean(axis=(2, 4)).reshape(-1, 16)
    text_map = shared.rng("maps").normal(0.0, 1.0 / 4.0, (t_dim, 16))
    texts = (coarse @ text_map.T + noise_ * shared.rng("noise").standard_normal((len(raw), t_dim))).astype(np.float32)
    order = shared.rng("split").permutation(len(raw))
    ref_i, sel_i, tune_i, test_i, train_i = np.split(order, np.cumsum(
        [sizes["reference_pairs"], sizes["selection"], sizes["scoring"], sizes["scoring"]]))
    score_i = tune_i if context.split == "val" else test_i
    captions = np.stack([(coarse[train_i][labels[train_i] == c] @ text_map.T).mean(0) for c in range(10)])
    train_texts = texts[train_i]
    if mismatched:
        train_texts = _mismatch(shared.rng("mismatch"), train_texts, float(mismatched))
    return PairedData(instance, images[train_i], train_texts, images[ref_i], texts[ref_i], images[sel_i], texts[sel_i],
                      labels[sel_i], images[score_i], texts[score_i], labels[score_i], captions.astype(np.float32),
                      plan, reference_plan)


# --------------------------------------------------------------------------- scoring


def zero_shot_top1(embedder: Embedder, images: np.ndarray, labels: np.ndarray, captions: np.ndarray) -> float:
    """The share of ``images`` whose embedding is nearest (cosine) to its class's caption's embedding."""
    import torch

    with torch.no_grad():
        scores = embedder.embed_images(torch.as_tensor(images)) @ embedder.embed_texts(torch.as_tensor(captions)).T
    return float((scores.argmax(1).cpu().numpy() == labels).mean())


def i2t_recall1(embedder: Embedder, images: np.ndarray, texts: np.ndarray) -> float:
    """The share of ``images`` whose nearest text among ``texts`` (cosine) is its own pair's."""
    import torch

    with torch.no_grad():
        scores = embedder.embed_images(torch.as_tensor(images)) @ embedder.embed_texts(torch.as_tensor(texts)).T
    return float((scores.argmax(1).cpu().numpy() == np.arange(len(images))).mean())


def _torch_generator(context: Context, instance: str, purpose: str):
    import torch

    seed = int(Context(seed=context.seed, split="train", dataset=instance).rng(purpose).integers(2**62))
    return torch.Generator().manual_seed(seed)


def new_network(data: PairedData, context: Context, width: int, purpose: str = "init"):
    """A :class:`~harness.tasks.contrastive.towers.TwoTower` of ``width`` whose initial weights depend on the seed, the
    instance and ``purpose`` only (every method of a seed starts from the same network)."""
    import torch

    from harness.tasks.contrastive.towers import TwoTower

    seed = int(Context(seed=context.seed, split="train", dataset=data.instance).rng(purpose).integers(2**62))
    with torch.random.fork_rng(devices=[]):  # PyTorch's own initialisation, from the seed's stream only
        torch.manual_seed(seed)
        network = TwoTower(data.train_images.shape[1], data.train_texts.shape[1], width, data.plan.embed)
    return network


def pretrain_reference(data: PairedData, context: Context):
    """The reference: a :class:`TwoTower` of the plan's ``width`` trained with CLIP's loss (learnable logit scale,
    from 1/0.07, at most 100) on the reference pool, to the plateau of its zero-shot accuracy on the selection pairs,
    the best checkpoint kept. Returns the frozen network and its training log."""
    import torch

    from harness.tasks.contrastive.towers import clip_loss

    plan = data.reference_plan
    network = new_network(data, context, plan.width, "reference-init")
    log_scale = torch.nn.Parameter(torch.tensor(float(np.log(1 / 0.07))))
    optimizer = torch.optim.Adam([*network.parameters(), log_scale], lr=plan.lr)
    images, texts = torch.as_tensor(data.reference_images), torch.as_tensor(data.reference_texts)
    generator = _torch_generator(context, data.instance, "reference-batches")
    best = {"value": -1.0, "state": copy.deepcopy(network.state_dict())}

    def step():
        rows = torch.randint(len(images), (plan.batch_size,), generator=generator)
        loss = clip_loss(network(images[rows], texts[rows]), log_scale.exp().clamp(max=100.0))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()

    def value():
        network.eval()
        reading = zero_shot_top1(network, data.selection_images, data.selection_labels, data.captions)
        network.train()
        if reading > best["value"]:
            best.update(value=reading, state=copy.deepcopy(network.state_dict()))
        return reading

    log = train_to_plateau(step, value, every=plan.every, min_steps=plan.min_steps, max_steps=plan.max_steps,
                           tolerance=plan.tolerance, name="reference_validation_top1")
    network.load_state_dict(best["state"])
    return network.eval().requires_grad_(False), log


class ContrastiveSession:
    """What a method works with: the frozen ``reference``, the training pairs (numpy), a random reference for the
    ablation, and the task's one training loop. It counts what the method spends."""

    def __init__(self, data: PairedData, reference, context: Context):
        self.data, self.reference, self.context = data, reference, context
        self.train_images, self.train_texts = data.train_images, data.train_texts
        self.samples_seen = 0
        self.scored_samples = 0
        self.steps = 0
        self.validation_log: TrainingLog | None = None
        self.best_validation: float | None = None

    def random_reference(self):
        """A network of the reference's width at its random initialisation (frozen): the ablation that checks a
        reference's information, not its presence, is what matters."""
        return new_network(self.data, self.context, self.data.reference_plan.width,
                           "random-reference").eval().requires_grad_(False)

    def similarities(self, network, images, texts):
        """(B, B) similarities of a frozen ``network`` (the reference) on a batch, without gradients."""
        import torch

        with torch.no_grad():
            return network(images, texts)

    def new_network(self):
        """The target network at the seed's initial weights (the same for every method)."""
        return new_network(self.data, self.context, self.data.plan.width)

    def train(self, loss: Loss, parameters=(), select: Selector | None = None, candidates: int = 1):
        """The task's training loop, the same for every method that trains: ``plan.steps`` Adam steps at ``plan.lr``
        (on the network and the extra ``parameters``, e.g. a learnable temperature) from the seed's initial weights,
        each on a batch of ``plan.batch_size`` training pairs. Without ``select`` the batches are the same for every
        method of a seed; with it, each step draws ``candidates`` × batch_size pairs (counted in ``scored_samples``)
        and ``select(network, images, texts, batch_size)`` picks the rows to train on. Every ``plan.every`` steps the
        zero-shot accuracy on the selection pairs is read and the best checkpoint kept (its curve is the row's
        ``validation_top1``). Returns the trained network (eval mode, no gradients)."""
        import torch

        plan = self.data.plan
        network = self.new_network()
        optimizer = torch.optim.Adam([*network.parameters(), *parameters], lr=plan.lr)
        images, texts = torch.as_tensor(self.train_images), torch.as_tensor(self.train_texts)
        generator = _torch_generator(self.context, self.data.instance, "batches")
        log = TrainingLog("validation_top1", budget=plan.steps)
        best, best_state = -1.0, copy.deepcopy(network.state_dict())
        draw = plan.batch_size * (candidates if select is not None else 1)
        for step in range(plan.steps):
            rows = torch.randint(len(images), (draw,), generator=generator)
            if select is not None:
                self.scored_samples += draw
                network.eval()
                kept = select(network, images[rows], texts[rows], plan.batch_size)
                network.train()
                if len(kept) != plan.batch_size:
                    raise ValueError(f"the selector kept {len(kept)} of {draw} pairs; expected {plan.batch_size}")
                rows = rows[kept]
            batch_images, batch_texts = images[rows], texts[rows]
            value = loss(PairBatch(batch_images, batch_texts, network(batch_images, batch_texts)))
            if not torch.isfinite(value):
                raise FloatingPointError(f"training diverged at step {step + 1}: the loss is {value.item()}")
            optimizer.zero_grad(set_to_none=True)
            value.backward()
            optimizer.step()
            self.samples_seen += plan.batch_size
            self.steps += 1
            if (step + 1) % plan.every == 0 or log.due(step):
                network.eval()
                reading = zero_shot_top1(network, self.data.selection_images, self.data.selection_labels,
                                         self.data.captions)
                network.train()
                log.record(step, reading)
                if reading > best:
                    best, best_state = reading, copy.deepcopy(network.state_dict())
        network.load_state_dict(best_state)
        self.validation_log, self.best_validation = log, best
        return network.eval().requires_grad_(False)


class ContrastiveReferenceTask(Task):
    """Train the seed's reference, let the method train its target with it, score the target zero-shot."""

    name = "contrastive.reference"
    version = "1"
    metrics = ("zero_shot_top1", "i2t_recall1", "validation_top1", "reference_validation_top1", "reference_steps",
               "samples_seen", "scored_samples", "train_s")
    protocol = ContrastiveMethod
    framework = "torch"

    def chance(self, dataset: str, params: dict[str, Any]) -> dict[str, float]:
        classes = 10 if dataset == "paired-digits" else params.get("classes", 20)
        scoring = params.get("scoring", 300 if dataset == "paired-digits" else 2000)
        if not isinstance(classes, int) or not isinstance(scoring, int) or classes < 2 or scoring < 2:
            return {}
        return {"zero_shot_top1": 1.0 / classes, "validation_top1": 1.0 / classes, "i2t_recall1": 1.0 / scoring}

    def tiny(self, workdir: Path) -> dict[str, dict[str, Any]]:
        """A few steps on small sets (the conformance test)."""
        small = {"steps": 6, "batch_size": 16, "every": 2, "width": 8, "embed": 4, "reference_width": 8,
                 "reference_batch": 16, "reference_every": 2, "reference_min_steps": 4, "reference_max_steps": 4}
        return {"paired-mixture": {"classes": 4, "pool": 128, "reference_pairs": 64, "selection": 32, "scoring": 32,
                                   **small},
                "paired-digits": {"limit": 300, "reference_pairs": 40, "selection": 40, "scoring": 40, **small}}

    def evaluate(self, method: ContrastiveMethod, data: PairedData, context: Context) -> Evaluation:
        reference, reference_log = _REFERENCES.get_or_build(
            (data.instance, context.seed, data.reference_plan, context.device), lambda: pretrain_reference(data, context))
        session = ContrastiveSession(data, reference, context)
        started = time.perf_counter()
        embedder = method.fit(session)
        train_s = time.perf_counter() - started
        for name in ("embed_images", "embed_texts"):
            if not callable(getattr(embedder, name, None)):
                raise TypeError(f"{type(method).__name__}.fit returned {type(embedder).__name__}, which has no "
                                f"{name}(); expected an embedder with embed_images and embed_texts")
        validation = session.best_validation
        if validation is None:  # a method that did not train: its embedder's own reading
            validation = zero_shot_top1(embedder, data.selection_images, data.selection_labels, data.captions)
        metrics = {
            "zero_shot_top1": zero_shot_top1(embedder, data.scoring_images, data.scoring_labels, data.captions),
            "i2t_recall1": i2t_recall1(embedder, data.scoring_images, data.scoring_texts),
            "validation_top1": validation,
            "reference_validation_top1": reference_log.final,
            "reference_steps": float(reference_log.budget),
            "samples_seen": float(session.samples_seen),
            "scored_samples": float(session.scored_samples),
            "train_s": train_s,
        }
        curves = {**reference_log.curves()}
        if session.validation_log is not None and session.validation_log.kept:
            curves.update(session.validation_log.curves())
        return Evaluation(metrics, curves)


TASK = ContrastiveReferenceTask()
