"""Task ``spatial.expression``: predict every spot's gene expression on held-out whole slides.

A dataset is three sets of slides, split by slide: training slides to fit on, validation slides that stop the
training and pick its checkpoint (never the test slides: upstream selects its epoch on the test fold), and held-out
slides to score. A slide is N spots, each with 2-D coordinates, an image-feature vector and its measured log1p
expression of G genes.

A method (:class:`ExpressionMethod`) gets a :class:`SlideSession` and hands back a :class:`Predictor`. The session
holds the training and validation slides and the task's one training loop (:meth:`SlideSession.train`), the same
for every network: Adam at the plan's learning rate, the same random crops (the ⌊u·N⌋ spots nearest a random centre
spot, u uniform in [min_crop, 1], as upstream's), gradient norm clipped, the validation slides' Pearson read every
``every`` steps, training until it stops rising (:func:`~harness.tasks.training.train_to_plateau`, the same cap for
every network) and the best checkpoint kept. The task then predicts each held-out slide (a generative method: one
sample, the same generator for every method of a seed) and scores it:

* ``pearson`` (primary): per gene over every held-out spot together, averaged over genes, as the paper's;
* ``mse``; ``moran_gap``: how far the prediction's spatial autocorrelation (Moran's I on the k-nearest-spot graph)
  is from the measured expression's, since a point metric cannot show joint modelling;
* ``infer_s`` (median of repeats, CPU time and spread beside it) and ``peak_activation_mib`` of predicting the
  first held-out slide, with ``spots``, its size: a size sweep (``test_spots``) reads their scaling.

The trained network is kept per worker (:class:`~harness.tasks.base.SourceTraining`) and reused by the cells that
differ only in their held-out slides (rotated slides, the size sweep), so those cells train nothing.
"""
from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Protocol

import numpy as np

from harness.tasks.base import Context, DataError, DataUnavailable, SourceTraining, Task, WorkerCache
from harness.tasks.evaluation import Evaluation
from harness.tasks.parameters import count, non_negative, positive
from harness.tasks.spatial.slides import Slide, SlideData, SlideTensors, TrainPlan, knn_index, train_plan
from harness.tasks.timing import time_call
from harness.tasks.training import TrainingLog, train_to_plateau

_TRAINING = SourceTraining(16)
# a seed's tissue, training and validation slides, shared by every dataset of the seed that draws them alike (the
# rotated and swept held-out sets): drawn once per worker, not once per dataset (their oracle is most of a load)
_SHARED_SLIDES = WorkerCache(4)


# --------------------------------------------------------------------------- what a method sees


class Predictor(Protocol):
    def predict(self, slide: SlideTensors, generator) -> Any:
        """(N, G) predicted log1p expression of ``slide`` (its ``expression`` is empty); ``generator`` (a
        ``torch.Generator``) draws any randomness, e.g. a flow's prior sample."""
        ...


class ExpressionMethod(Protocol):
    """What a method of this task implements."""

    def fit(self, session: "SlideSession") -> Predictor:
        """Train (through ``session.train``) or fit on ``session.train_slides``; the predictor to score."""
        ...


# --------------------------------------------------------------------------- the simulator


def hex_spots(rng: np.random.Generator, spots: int, jitter: float = 0.1) -> np.ndarray:
    """``spots`` points of a hexagonal grid of spacing 1 nearest the origin (a round slide), each jittered."""
    radius = math.sqrt(spots * math.sqrt(3) / 2 / math.pi) * 1.3 + 2
    rows = np.arange(-math.ceil(radius / (math.sqrt(3) / 2)), math.ceil(radius / (math.sqrt(3) / 2)) + 1)
    cols = np.arange(-math.ceil(radius) - 1, math.ceil(radius) + 2)
    x = cols[None, :] + 0.5 * (rows[:, None] % 2)
    y = np.repeat(rows[:, None] * math.sqrt(3) / 2, len(cols), 1)
    points = np.stack([x.ravel(), y.ravel()], 1)
    points = points[np.argsort((points**2).sum(1), kind="stable")[:spots]]
    return points + rng.uniform(-jitter, jitter, points.shape)


def smooth_fields(rng: np.random.Generator, coordinates: np.ndarray, fields: int, length_scale: float,
                  features: int = 128) -> np.ndarray:
    """(N, fields) draws of unit-variance Gaussian fields with a squared-exponential kernel of ``length_scale``
    (random Fourier features)."""
    frequencies = rng.standard_normal((fields, features, 2)) / length_scale
    phases = rng.uniform(0, 2 * math.pi, (fields, features))
    weights = rng.standard_normal((fields, features))
    angles = np.einsum("nd,fmd->nfm", coordinates, frequencies) + phases[None]
    return math.sqrt(2.0 / features) * (np.cos(angles) * weights[None]).sum(-1)


def neighbour_mean(coordinates: np.ndarray, values: np.ndarray, k: int) -> np.ndarray:
    """Each spot's mean of ``values`` over its k nearest other spots."""
    from scipy.spatial import cKDTree

    _, index = cKDTree(coordinates).query(coordinates, k=k + 1)
    return values[index[:, 1:]].mean(1)


@dataclass(frozen=True)
class Tissue:
    """What every slide of a dataset shares: how cell-type mix makes features and expression."""

    feature_map: np.ndarray  # (K, D)
    feature_bias: np.ndarray  # (D,)
    base: np.ndarray  # (G,) log mean count
    own: np.ndarray  # (K, G) effect of the spot's own mix
    neighbour: np.ndarray  # (K, G) effect of its neighbours' mean mix
    hidden: np.ndarray  # (R, G) loadings of the fields the features do not show

    @staticmethod
    def draw(rng, cell_types: int, feature_dim: int, genes: int, neighbour_effect: float, hidden_scale: float,
             hidden_fields: int) -> "Tissue":
        return Tissue(rng.standard_normal((cell_types, feature_dim)) * 2.0, rng.standard_normal(feature_dim) * 0.5,
                      rng.uniform(1.0, 3.0, genes), rng.standard_normal((cell_types, genes)),
                      rng.standard_normal((cell_types, genes)) * neighbour_effect,
                      rng.standard_normal((hidden_fields, genes)) * hidden_scale / math.sqrt(hidden_fields))


def simulate_slide(rng: np.random.Generator, name: str, tissue: Tissue, spots: int, *, length_scale: float,
                   contrast: float, feature_noise: float, hidden_length: float, dispersion: float, k: int,
                   oracle_draws: int) -> Slide:
    """One slide: cell-type mix softmax(contrast · smooth fields), features tanh(mix A + b) + noise, counts
    NB(mean exp(base + mix W + neighbours' mix U + hidden fields L), inverse dispersion θ), log1p; the oracle is
    E[log1p Y | mix] by Monte Carlo over the hidden fields (marginally N(0, Σ_r L_rg²) at a spot) and the counts."""
    coordinates = hex_spots(rng, spots)
    latent = contrast * smooth_fields(rng, coordinates, tissue.own.shape[0], length_scale)
    mix = np.exp(latent - latent.max(1, keepdims=True))
    mix /= mix.sum(1, keepdims=True)
    features = np.tanh(mix @ tissue.feature_map + tissue.feature_bias)
    features = features + feature_noise * rng.standard_normal(features.shape)
    visible = tissue.base + mix @ tissue.own + neighbour_mean(coordinates, mix, k) @ tissue.neighbour
    hidden = smooth_fields(rng, coordinates, tissue.hidden.shape[0], hidden_length) @ tissue.hidden
    counts = negative_binomial(rng, np.exp(visible + hidden), dispersion)
    oracle = None
    if oracle_draws:
        spread = np.sqrt((tissue.hidden**2).sum(0))
        total = np.zeros(visible.shape)
        for _ in range(oracle_draws):
            total += np.log1p(negative_binomial(rng, np.exp(visible + spread * rng.standard_normal(visible.shape)),
                                                dispersion))
        oracle = (total / oracle_draws).astype(np.float32)
    return Slide(name, coordinates, features.astype(np.float32), np.log1p(counts).astype(np.float32), oracle)


def negative_binomial(rng: np.random.Generator, mean: np.ndarray, dispersion: float) -> np.ndarray:
    """Counts of mean ``mean`` and inverse dispersion θ (variance μ + μ²/θ), as a gamma-Poisson mixture."""
    return rng.poisson(rng.gamma(dispersion, mean / dispersion)).astype(np.float64)


def rotate(slide: Slide, rng: np.random.Generator) -> Slide:
    """The slide turned by a random angle about its centre and, half the time, mirrored: the same tissue."""
    angle = rng.uniform(0, 2 * math.pi)
    turn = np.array([[math.cos(angle), -math.sin(angle)], [math.sin(angle), math.cos(angle)]])
    if rng.random() < 0.5:
        turn = turn @ np.diag([1.0, -1.0])
    centre = slide.coordinates.mean(0)
    return dataclasses.replace(slide, name=slide.name + ":rotated", coordinates=(slide.coordinates - centre) @ turn.T
                               + centre)


def synthetic_slides(context: Context, *, train_slides: int = 12, validation_slides: int = 4, test_slides: int = 4,
                     spots=(300, 700), genes: int = 20, cell_types: int = 4, feature_dim: int = 32,
                     feature_noise: float = 1.0, length_scale: float = 4.0, contrast: float = 2.0,
                     neighbour_effect: float = 0.7, hidden_scale: float = 0.6, hidden_fields: int = 3,
                     hidden_length: float = 3.0, dispersion: float = 2.0, rotate_test: bool = False,
                     test_spots: int | None = None, oracle_draws: int = 256, neighbours: int = 8, lr: float = 5e-4,
                     crops_per_step: int = 2, min_crop: float = 0.25, clip: float = 1.0, every: int = 50,
                     min_steps: int = 500, max_steps: int = 3000, tolerance: float = 0.005,
                     timing_repeats: int = 3) -> SlideData:
    """Simulated whole slides of ``spots`` = [min, max] spots each (a jittered hexagonal grid, spacing 1):
    ``cell_types`` smooth latent fields (length ``length_scale``) make each spot's cell-type mix
    (softmax(``contrast`` · fields)); its ``feature_dim`` image features are tanh(mix A + b) plus Gaussian noise of
    std ``feature_noise``; its ``genes`` counts are negative binomial (inverse dispersion ``dispersion``) with log
    mean base + mix W + (mean mix of its ``neighbours`` nearest spots) U (std ``neighbour_effect``) + ``hidden_fields``
    smooth fields of length ``hidden_length`` that no feature shows (std ``hidden_scale`` in all): the spatial
    texture beyond the features, which a sample can reproduce and a mean cannot. A, b, W, U, the base and the
    loadings are the tissue's, shared by every slide of the seed. Slides: ``train_slides``, ``validation_slides``
    (both the same for tuning and test cells) and ``test_slides`` held out; ``rotate_test`` turns and mirrors each
    held-out slide (the same slides); ``test_spots`` makes the held-out set one slide of exactly that many spots
    (the size sweep). The training: see :class:`TrainPlan` (``neighbours`` is also the graphs' k)."""
    low, high = _spot_range(spots)
    plan = train_plan(lr, crops_per_step, min_crop, clip, every, min_steps, max_steps, tolerance, neighbours)
    repeats = count("timing_repeats", timing_repeats)
    shape = dict(genes=count("genes", genes, 2), cell_types=count("cell_types", cell_types, 2),
                 feature_dim=count("feature_dim", feature_dim), feature_noise=non_negative("feature_noise", feature_noise),
                 length_scale=positive("length_scale", length_scale), contrast=positive("contrast", contrast),
                 neighbour_effect=non_negative("neighbour_effect", neighbour_effect),
                 hidden_scale=non_negative("hidden_scale", hidden_scale),
                 hidden_fields=count("hidden_fields", hidden_fields), hidden_length=positive("hidden_length", hidden_length),
                 dispersion=positive("dispersion", dispersion), spots=(low, high), neighbours=plan.neighbours)
    sizes = {name: count(name, value) for name, value in
             (("train_slides", train_slides), ("validation_slides", validation_slides), ("test_slides", test_slides))}
    oracle_draws = count("oracle_draws", oracle_draws)
    instance = "synthetic-slides:" + ":".join(f"{k}={v}" for k, v in sorted({**shape, **sizes}.items()))
    shared = Context(seed=context.seed, split="train", dataset=instance)  # the same for tuning and test cells
    tissue = Tissue.draw(shared.rng("tissue"), shape["cell_types"], shape["feature_dim"], shape["genes"],
                         shape["neighbour_effect"], shape["hidden_scale"], shape["hidden_fields"])
    slide_args = dict(length_scale=shape["length_scale"], contrast=shape["contrast"],
                      feature_noise=shape["feature_noise"], hidden_length=shape["hidden_length"],
                      dispersion=shape["dispersion"], k=plan.neighbours)

    def slides(part: str, how_many: int, source: Context, size: int | None = None,
               oracle: bool = True) -> tuple[Slide, ...]:
        out = []
        for i in range(how_many):
            rng = source.rng(part, str(i))
            n = size if size is not None else int(rng.integers(low, high + 1))
            out.append(simulate_slide(rng, f"{part}-{i}", tissue, n, **slide_args,
                                      oracle_draws=oracle_draws if oracle else 0))
        return tuple(out)

    held_out = dataclasses.replace(context, dataset=instance)
    if test_spots is not None:  # the cost sweep's slide: timed and scored, its oracle not drawn (no sanity row there)
        test = slides(f"sweep-{count('test_spots', test_spots, plan.neighbours + 1)}", 1, held_out, int(test_spots),
                      oracle=False)
    else:
        test = slides("test", sizes["test_slides"], held_out)
    if rotate_test:
        test = tuple(rotate(s, held_out.rng("rotation", s.name)) for s in test)
    train, validation = _SHARED_SLIDES.get_or_build(
        (instance, context.seed, oracle_draws, tuple(sorted(slide_args.items()))),
        lambda: (slides("train", sizes["train_slides"], shared, oracle=False),
                 slides("validation", sizes["validation_slides"], shared)))
    return SlideData(f"{instance}:{plan}", tuple(f"gene-{g}" for g in range(shape["genes"])), train, validation, test,
                     plan, repeats)


def _spot_range(spots) -> tuple[int, int]:
    if isinstance(spots, (int, np.integer)) and not isinstance(spots, bool):
        spots = (spots, spots)
    if not (isinstance(spots, (list, tuple)) and len(spots) == 2):
        raise DataError(f"spots = {spots!r}: expected a number or [min, max] of spots a slide")
    low, high = count("spots", spots[0], 16), count("spots", spots[1], 16)
    if low > high:
        raise DataError(f"spots = {list(spots)}: the minimum is above the maximum")
    return low, high


# --------------------------------------------------------------------------- measurement


def pearson_per_gene(predicted: np.ndarray, measured: np.ndarray) -> np.ndarray:
    """(G,) Pearson correlations of the columns; NaN where the measured gene is constant (left out by the mean),
    0 where only the prediction is (it tells nothing)."""
    predicted, measured = np.asarray(predicted, np.float64), np.asarray(measured, np.float64)
    p = predicted - predicted.mean(0)
    m = measured - measured.mean(0)
    p_norm, m_norm = np.sqrt((p**2).sum(0)), np.sqrt((m**2).sum(0))
    out = np.zeros(predicted.shape[1])
    constant = measured.std(0) <= 1e-9 * max(1.0, float(np.abs(measured).max(initial=0.0)))
    usable = (predicted.std(0) > 1e-9 * max(1.0, float(np.abs(predicted).max(initial=0.0)))) & ~constant
    out[usable] = (p[:, usable] * m[:, usable]).sum(0) / (p_norm[usable] * m_norm[usable])
    out[constant] = np.nan
    return out


def mean_pearson(predicted: np.ndarray, measured: np.ndarray) -> float:
    """The genes' mean Pearson over the spots (constant measured genes left out); 0 if every gene is constant."""
    values = pearson_per_gene(predicted, measured)
    return float(np.nanmean(values)) if np.isfinite(values).any() else 0.0


def morans_i(values: np.ndarray, neighbours: np.ndarray) -> np.ndarray:
    """(G,) Moran's I of each column of ``values`` (N, G) on the graph of each spot's ``neighbours`` (N, k), binary
    weights: (N / W) Σ_ij w_ij z_i z_j / Σ_i z_i²; 0 for a constant column."""
    z = values - values.mean(0)
    cross = (z[:, None, :] * z[neighbours]).sum((0, 1))
    total = (z**2).sum(0)
    out = np.zeros(values.shape[1])
    usable = total > 1e-12
    out[usable] = (len(values) / neighbours.size) * cross[usable] / total[usable]
    return out


def _torch_generator(seed: int, *purpose: str, split: str = "train", dataset: str = ""):
    import torch

    value = int(Context(seed=seed, split=split, dataset=dataset).rng(*purpose).integers(2**62))
    return torch.Generator().manual_seed(value)


def _as_array(prediction, slide: SlideTensors, who: str) -> np.ndarray:
    if hasattr(prediction, "detach"):
        prediction = prediction.detach().float().cpu().numpy()
    prediction = np.asarray(prediction, dtype=np.float64)
    genes = slide.expression.shape[1] if slide.expression.shape[1] else None
    if prediction.ndim != 2 or prediction.shape[0] != slide.spots or (genes and prediction.shape[1] != genes):
        raise TypeError(f"{who} predicted shape {prediction.shape} for a slide of {slide.spots} spots; expected "
                        f"(spots, genes)")
    if not np.isfinite(prediction).all():
        raise FloatingPointError(f"{who} predicted non-finite expression")
    return prediction


# --------------------------------------------------------------------------- the session and its training loop


Loss = Callable[[Any, SlideTensors, Any], Any]  # (network, training crop, torch generator) → scalar tensor


class SlideSession:
    """What a method works with: the training and validation slides (numpy, and on the device with their graphs),
    the task's training loop, and, for the sanity row only, the simulator's oracle."""

    def __init__(self, data: SlideData, context: Context):
        self.data, self.context = data, context
        self.plan = data.plan
        self.genes = len(data.genes)
        self.feature_dim = data.feature_dim
        self.train_slides = data.train
        self.validation_slides = data.validation
        self.training_steps = 0
        self.training_log: TrainingLog | None = None
        self.validation_pearson: float | None = None
        self._validation = [SlideTensors(s, self.plan.neighbours, context.device) for s in data.validation]
        self._trees = None

    def validation_score(self, predictor: Predictor) -> float:
        """Pearson on the validation slides together, each predicted with a fixed generator."""
        predictions, measured = [], []
        for i, slide in enumerate(self._validation):
            generator = _torch_generator(self.context.seed, "validation-predictions", str(i),
                                         dataset=self.data.training_key)
            predictions.append(_as_array(predictor.predict(slide, generator), slide, "the predictor"))
            measured.append(slide.slide.expression)
        return mean_pearson(np.concatenate(predictions), np.concatenate(measured))

    def crop(self, rng: np.random.Generator) -> SlideTensors:
        """A random training crop: the ⌊u·N⌋ spots nearest a random centre spot of a random training slide."""
        from scipy.spatial import cKDTree

        if self._trees is None:
            self._trees = [cKDTree(s.coordinates) for s in self.train_slides]
        which = int(rng.integers(len(self.train_slides)))
        slide = self.train_slides[which]
        size = max(self.plan.neighbours + 1, int(rng.uniform(self.plan.min_crop, 1.0) * slide.spots))
        size = min(size, slide.spots)
        _, index = self._trees[which].query(slide.coordinates[int(rng.integers(slide.spots))], k=size)
        index = np.sort(np.atleast_1d(index))
        part = Slide(slide.name, slide.coordinates[index], slide.features[index], slide.expression[index])
        return SlideTensors(part, self.plan.neighbours, self.context.device)

    def train(self, network, loss: Loss, predictor: Predictor):
        """The task's training loop, the same for every network: Adam at ``plan.lr`` on ``plan.crops_per_step``
        crops a step (the same crops and generator draws for every method of a seed), gradient norm clipped to
        ``plan.clip``; the validation Pearson of ``predictor`` (which calls ``network``) read every ``plan.every``
        steps until it stops rising by ``plan.tolerance`` over the last fifth (between ``min_steps`` and
        ``max_steps``); the best checkpoint kept. Returns the network (eval mode, no gradients)."""
        import copy

        import torch

        plan, device = self.plan, self.context.device
        network = network.to(device)
        optimizer = torch.optim.Adam(network.parameters(), lr=plan.lr)
        crops = Context(seed=self.context.seed, split="train", dataset=self.data.training_key).rng("crops")
        generator = _torch_generator(self.context.seed, "training-draws", dataset=self.data.training_key)
        best = {"score": -math.inf, "state": copy.deepcopy(network.state_dict())}

        def step() -> None:
            network.train()
            value = sum(loss(network, self.crop(crops), generator) for _ in range(plan.crops_per_step))
            value = value / plan.crops_per_step
            if not torch.isfinite(value):
                raise FloatingPointError(f"training diverged at step {self.training_steps + 1}: the loss is "
                                         f"{value.item()}")
            optimizer.zero_grad(set_to_none=True)
            value.backward()
            torch.nn.utils.clip_grad_norm_(network.parameters(), plan.clip)
            optimizer.step()
            self.training_steps += 1

        def score() -> float:
            network.eval()
            with torch.no_grad():
                value = self.validation_score(predictor)
            if value > best["score"]:
                best["score"], best["state"] = value, copy.deepcopy(network.state_dict())
            return value

        self.training_log = train_to_plateau(step, score, every=plan.every, min_steps=plan.min_steps,
                                             max_steps=plan.max_steps, tolerance=plan.tolerance,
                                             name="validation_pearson")
        network.load_state_dict(best["state"])
        self.validation_pearson = best["score"]
        return network.eval().requires_grad_(False)

    @staticmethod
    def oracle(slide: SlideTensors) -> np.ndarray:
        """The simulator's E[log1p Y | latent mix] of a slide: the sanity row's, no other method's."""
        if slide.slide.oracle is None:
            raise DataUnavailable(f"slide {slide.slide.name} has no oracle: real slides have none, and the cost "
                                  "sweep's slides (test_spots) are drawn without one")
        return slide.slide.oracle


# --------------------------------------------------------------------------- the task


class SpatialExpressionTask(Task):
    """Train on slides, predict held-out slides, score the predictions and time one."""

    name = "spatial.expression"
    version = "1"
    metrics = ("pearson", "mse", "moran_gap", "moran_measured", "infer_s", "infer_s_cpu", "infer_s_spread",
               "peak_activation_mib", "spots", "validation_pearson", "training_steps", "parameters", "train_s")
    protocol = ExpressionMethod
    framework = "torch"

    def chance(self, dataset: str, params: dict[str, Any]) -> dict[str, float]:
        return {"pearson": 0.0}  # a prediction independent of the measured expression

    def tiny(self, workdir: Path) -> dict[str, dict[str, Any]]:
        """Two small slides a set, a few steps (the conformance test)."""
        from harness.tasks.spatial.hest import write_miniature

        small = {"every": 2, "min_steps": 4, "max_steps": 4, "timing_repeats": 1}
        return {"synthetic-slides": {"train_slides": 2, "validation_slides": 1, "test_slides": 1, "spots": [40, 60],
                                     "genes": 5, "feature_dim": 8, "oracle_draws": 2, **small},
                "hest-1k": {"root": str(write_miniature(workdir / "hest")), "train": ["S0", "S1"],
                            "validation": ["S2"], "test": ["S3"], "genes": 5, **small}}

    def evaluate(self, method: ExpressionMethod, data: SlideData, context: Context) -> Evaluation:
        import torch

        from harness.tasks.memory import peak_activation_bytes

        def train() -> None:
            session = SlideSession(data, context)
            predictor = method.fit(session)
            if not hasattr(predictor, "predict"):
                raise TypeError(f"{type(method).__name__}.fit returned {type(predictor).__name__}; expected a "
                                "predictor with predict(slide, generator)")
            if session.validation_pearson is None:  # a closed form: its predictor's own validation reading
                session.validation_pearson = session.validation_score(predictor)
            method.predictor_ = predictor
            method.training_ = (session.training_steps, session.validation_pearson, session.training_log)

        train_s = _TRAINING.fit(method, context, (data.training_key,), train)
        predictor = method.predictor_
        steps, validation_pearson, log = method.training_
        who = type(method).__name__
        predictions, measured, gaps, morans = [], [], [], []
        first = None
        for i, slide in enumerate(data.test):
            tensors = SlideTensors(slide.without_expression(), data.plan.neighbours, context.device)
            first = tensors if first is None else first
            generator = _torch_generator(context.seed, "predictions", str(i), split=context.split,
                                         dataset=data.training_key)
            with torch.no_grad():
                prediction = _as_array(predictor.predict(tensors, generator), tensors, who)
            if prediction.shape[1] != slide.expression.shape[1]:
                raise TypeError(f"{who} predicted {prediction.shape[1]} genes; the slides have "
                                f"{slide.expression.shape[1]}")
            neighbours = knn_index(slide.coordinates, data.plan.neighbours)
            truth = morans_i(slide.expression.astype(np.float64), neighbours)
            gaps.append(np.abs(morans_i(prediction, neighbours) - truth))
            morans.append(truth)
            predictions.append(prediction)
            measured.append(slide.expression.astype(np.float64))
        predicted, actual = np.concatenate(predictions), np.concatenate(measured)
        varying = actual.std(0) > 0  # Moran's I of a constant gene says nothing

        def call():
            with torch.no_grad():
                return predictor.predict(first, _torch_generator(context.seed, "timing", dataset=data.training_key))

        sync = torch.cuda.synchronize if str(context.device).startswith("cuda") else None
        _, timing = time_call(call, repeats=data.timing_repeats, warmup=1, sync=sync)
        with torch.no_grad():
            peak = peak_activation_bytes(call)
        network = getattr(predictor, "network", None)
        metrics = {
            "pearson": mean_pearson(predicted, actual),
            "mse": float(((predicted - actual) ** 2).mean()),
            "moran_gap": float(np.mean([g[varying] for g in gaps])) if varying.any() else 0.0,
            "moran_measured": float(np.mean([m[varying] for m in morans])) if varying.any() else 0.0,
            **timing.metrics("infer_s"),
            "peak_activation_mib": peak / 2**20,
            "spots": float(first.spots),
            "validation_pearson": float(validation_pearson),
            "training_steps": float(steps),
            "parameters": float(sum(p.numel() for p in network.parameters())) if network is not None else 0.0,
            "train_s": train_s,
        }
        return Evaluation(metrics, log.curves() if log is not None else {})


TASK = SpatialExpressionTask()
