"""Task ``np.regression``: train a conditional neural process on 2-D GP regression tasks, score it on fresh tasks.

Every method builds a torch model (:class:`NeuralProcess`) that maps a batch of tasks (xc, yc, xt) to a Gaussian
predictive per target; the **task** trains it, so every method gets the same budget: the same stream of training
tasks (drawn by the seed, identical for every method), the same number of AdamW steps at the same learning rate,
batch size and gradient clipping. Training tasks come from a random-Fourier-feature approximation of the GP prior
(``features`` cosines; cheap at any context size, as the paper pre-generates its training tasks with KISS-GP);
evaluation tasks are drawn exactly, by a Cholesky factor of the RBF kernel matrix in float64.

A trained model does not depend on the evaluation dataset, so it is trained once per seed and method on a worker
and reused by that method's other datasets (:class:`harness.tasks.base.SourceTraining`); ``train_s`` reports the
original training's seconds.

Metrics, all from the dataset's evaluation tasks (``tasks`` of them; validation tasks while tuning):

* ``log_likelihood``: the mean over tasks of the mean log predictive density per target point (nats);
* ``gp_log_likelihood``: the same for the ground-truth GP's predictive (the true kernel and noise): the ceiling,
  the same for every method at a seed; ``gap_to_gp`` = gp_log_likelihood − log_likelihood;
* ``rmse`` of the predictive mean;
* ``infer_s``: the median over ``timing_repeats`` of one forward pass on the first evaluation task (batch 1, no
  gradients, after a warm-up pass) at the dataset's context size, in CPU time on one CPU thread and wall time
  otherwise (:func:`inference_clock`);
* ``peak_activation_mib``: the peak of the bytes held by tensors that the forward pass allocated, counted op by
  op (a ``TorchDispatchMode`` that adds each new output storage and subtracts it when its last tensor dies),
  on the same task: the model's weights and the inputs are not counted, so it is the inference's own memory;
* ``train_s``, ``train_log_likelihood`` (the mean over the last tenth of the steps), ``parameters``;
* ``validation_log_likelihood``: the log-likelihood on the seed's validation tasks (drawn exactly on the training
  square, never the test tasks) at the end of training, with its curve at ten fractions of the budget (a training
  objective: ``harness audit`` reads from the curve whether the training reached its plateau).
"""
from __future__ import annotations

import dataclasses
import math
import statistics
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from harness.tasks.base import Context, DataError, SourceTraining, Task, WorkerCache
from harness.tasks.evaluation import Evaluation
from harness.tasks.training import TrainingLog, train_to_plateau

_TASKS = WorkerCache(32)
VALIDATE_EVERY = 50  # steps between readings of the validation log-likelihood when training to the plateau
PLATEAU_TOLERANCE = 0.02  # nats per target the last fifth may still gain at a plateau (the catalogue's tolerance)
_TRAINING = SourceTraining(4)
X_DIM = 2


@dataclass(frozen=True)
class ProblemShape:
    """What a method's ``build`` is told: the input dimension, the width of the training domain, and the square
    [low, high]² that a model with a grid lays it over: fixed, the same for training and every evaluation set, so a
    shifted set is read on grid nodes that training never filled (the paper's set-up for translation tests)."""

    x_dim: int
    domain_width: float
    domain: tuple[float, float] = (-2.0, 2.0)


@dataclass(frozen=True)
class TrainingPlan:
    """The budget and the training distribution, the same for every method of a spec."""

    steps: int
    batch_size: int
    lr: float
    clip: float
    context: tuple[int, int]
    targets: int
    features: int
    warmup: int = 0  # steps of linear warm-up of the learning rate from lr / warmup to lr
    min_steps: int | None = None  # given: train to the plateau, at least this many steps and at most ``steps``


@dataclass(frozen=True)
class Prior:
    """The GP prior of every task: RBF kernel, unit signal variance, Gaussian noise, inputs uniform on a square."""

    lengthscale: float
    noise: float
    width: float  # the training square is [−width/2, width/2]²


@dataclass(frozen=True)
class EvaluationTasks:
    """Batches of exactly drawn tasks (float64 numpy): xc (B, Nc, 2), yc (B, Nc), xt (B, Nt, 2), yt (B, Nt), and the
    ground-truth GP's mean log predictive density per target point of each task, gp_ll (B,)."""

    batches: tuple[dict, ...]


@dataclass(frozen=True)
class NPData:
    problem: ProblemShape
    prior: Prior
    plan: TrainingPlan
    tasks: EvaluationTasks
    validation: EvaluationTasks  # drawn from the training square at the seed, the same for every dataset of a spec
    timing_repeats: int
    instance: str
    validation_key: str = ""  # what the validation tasks were drawn as: part of what identifies a training


class NeuralProcess(Protocol):
    """What a method of this task implements."""

    def build(self, problem: ProblemShape) -> Any:
        """A fresh ``torch.nn.Module`` whose forward(xc (B, Nc, dx), yc (B, Nc, 1), xt (B, Nt, dx)) returns the
        predictive mean and standard deviation, each (B, Nt, 1)."""
        ...


# --------------------------------------------------------------------------- data


def rbf(a, b, lengthscale: float):
    """exp(−‖a − b‖² / 2ℓ²) between the rows of a (…, N, d) and b (…, M, d)."""
    import torch

    return torch.exp(-0.5 * torch.cdist(a, b).square() / lengthscale**2)


def gp_posterior_log_likelihood(chol_context, k_target_context, yc, yt, noise: float):
    """(B,) the mean over targets of log N(yt; μ*, σ*² + noise²) under the true GP, from the Cholesky factor of the
    contexts' noisy covariance K_cc + noise² I (B, Nc, Nc) and the cross-covariance K_tc (B, Nt, Nc) (float64 torch)."""
    import torch

    alpha = torch.cholesky_solve(yc[..., None], chol_context)
    mean = (k_target_context @ alpha)[..., 0]
    v = torch.linalg.solve_triangular(chol_context, k_target_context.transpose(1, 2), upper=False)
    var = (1.0 - v.square().sum(1)).clamp_min(0.0) + noise**2
    return (-0.5 * (torch.log(2 * math.pi * var) + (yt - mean).square() / var)).mean(1)


def draw_exact_tasks(rng: np.random.Generator, prior: Prior, count: int, batch_size: int, context: tuple[int, int],
                     targets: int, shift: float) -> EvaluationTasks:
    """``count`` tasks in batches (a batch shares its context size, drawn uniformly in ``context``); inputs uniform
    on the training square moved by ``shift`` along both axes; y ~ N(0, K + noise² I) drawn exactly by a float64
    Cholesky factor L. The leading Nc × Nc block of L is the Cholesky factor of the contexts' own K_cc + noise² I, so
    the true GP's predictive needs no second factorisation."""
    import torch

    batches = []
    for start in range(0, count, batch_size):
        b = min(batch_size, count - start)
        n_c = int(rng.integers(context[0], context[1] + 1))
        n = n_c + targets
        x = rng.uniform(-prior.width / 2, prior.width / 2, size=(b, n, X_DIM)) + shift
        k = rbf(torch.as_tensor(x), torch.as_tensor(x), prior.lengthscale)
        k.diagonal(dim1=-2, dim2=-1).add_(prior.noise**2)
        chol = torch.linalg.cholesky(k)
        y = (chol @ torch.as_tensor(rng.standard_normal((b, n, 1))))[..., 0]
        gp_ll = gp_posterior_log_likelihood(chol[:, :n_c, :n_c], k[:, n_c:, :n_c], y[:, :n_c], y[:, n_c:], prior.noise)
        y = y.numpy()
        batches.append({"xc": x[:, :n_c], "yc": y[:, :n_c], "xt": x[:, n_c:], "yt": y[:, n_c:], "gp_ll": gp_ll.numpy()})
    return EvaluationTasks(tuple(batches))


def fourier_feature_batch(generator, prior: Prior, batch_size: int, n_context: int, targets: int, features: int):
    """A training batch from the random-Fourier-feature GP prior: f(x) = √(2/F) Σ_i w_i cos(ω_iᵀx + b_i) with
    ω_i ~ N(0, ℓ⁻² I), b_i ~ U[0, 2π), w_i ~ N(0, 1): covariance → exp(−‖x − x'‖²/2ℓ²) as F grows. float32 torch."""
    import torch

    n = n_context + targets
    x = (torch.rand(batch_size, n, X_DIM, generator=generator) - 0.5) * prior.width
    omega = torch.randn(batch_size, X_DIM, features, generator=generator) / prior.lengthscale
    phase = torch.rand(batch_size, 1, features, generator=generator) * (2 * math.pi)
    weights = torch.randn(batch_size, features, 1, generator=generator)
    f = (torch.cos(x @ omega + phase) @ weights) * math.sqrt(2.0 / features)
    y = f + prior.noise * torch.randn(batch_size, n, 1, generator=generator)
    return x[:, :n_context], y[:, :n_context], x[:, n_context:], y[:, n_context:]


def _pair(name: str, value, low: int = 1) -> tuple[int, int]:
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        value = (value, value)
    if not (isinstance(value, (list, tuple)) and len(value) == 2
            and all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in value)
            and low <= value[0] <= value[1]):
        raise DataError(f"{name} = {value!r}: expected an integer of at least {low}, or [min, max] with "
                        f"{low} ≤ min ≤ max")
    return int(value[0]), int(value[1])


def _positive(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise DataError(f"{name} = {value!r}: expected a positive number")
    return float(value)


def _count(name: str, value, low: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        raise DataError(f"{name} = {value!r}: expected an integer of at least {low}")
    return int(value)


def gp_2d(context: Context, *, lengthscale: float = 0.25, noise: float = 0.05, width: float = 4.0,
          shift: float = 0.0, domain=None, n_context=(200, 800), targets: int = 200, tasks: int = 64,
          batch_size: int = 8, train_steps: int = 300, min_steps=None, lr: float = 5e-4, warmup: int = 0,
          clip: float = 0.5,
          train_context=(200, 800), train_targets: int = 200, features: int = 512, validation_tasks: int = 16,
          timing_repeats: int = 5) -> NPData:
    """2-D GP regression: RBF kernel of ``lengthscale`` (unit signal variance), noise std ``noise``, inputs uniform
    on [−width/2, width/2]², the evaluation square moved by ``shift`` along both axes (0: in the training domain).

    ``n_context``: the evaluation tasks' context size, a number or [min, max] (uniform per batch of
    ``batch_size`` tasks); ``targets`` per task. The training budget (``train_steps`` AdamW steps at ``lr`` with
    gradient norm clipped to ``clip``, ``batch_size`` tasks per step of ``train_context`` contexts and
    ``train_targets`` targets, ``features`` random Fourier features) is the same for every method and should be
    the same for every dataset of a spec, so that one training serves them all; ``warmup`` steps raise the learning
    rate linearly to ``lr``. With ``min_steps``, each model trains to its plateau instead, by the same rule for
    every method (:func:`train_model`), for at least ``min_steps`` and at most ``train_steps`` steps.

    ``domain``: [low, high], the square every grid model lays its grid over (default: the training square); it must
    hold the evaluation square, and should be the same for every dataset of a spec. ``validation_tasks``: exactly
    drawn tasks on the training square (a stream of the seed's own, never the test tasks) on which the
    validation log-likelihood is kept at ten fractions of the training budget: the training's curve."""
    prior = Prior(_positive("lengthscale", lengthscale), _positive("noise", noise), _positive("width", width))
    if isinstance(shift, bool) or not isinstance(shift, (int, float)):
        raise DataError(f"shift = {shift!r}: expected a number (0 for the training domain)")
    n_c = _pair("n_context", n_context, 2)
    plan = TrainingPlan(_count("train_steps", train_steps), _count("batch_size", batch_size),
                        _positive("lr", lr), _positive("clip", clip), _pair("train_context", train_context, 2),
                        _count("train_targets", train_targets), _count("features", features),
                        _count("warmup", warmup, 0), _min_steps(min_steps, train_steps))
    square = _domain(domain, prior.width, float(shift))
    targets, tasks = _count("targets", targets), _count("tasks", tasks)
    if n_c[1] + targets > 20000:
        raise DataError(f"n_context up to {n_c[1]} with {targets} targets: exact draws need a Cholesky of "
                        f"{n_c[1] + targets} points; at most 20,000 are allowed here")
    instance = f"gp-2d:{prior}:shift{float(shift)}:nc{n_c}:nt{targets}:tasks{tasks}:batch{plan.batch_size}"
    draws = _TASKS.get_or_build((instance, context.seed, context.split), lambda: draw_exact_tasks(
        dataclasses.replace(context, dataset=instance).rng("tasks"), prior, tasks, plan.batch_size, n_c, targets,
        float(shift)))
    n_validation = _count("validation_tasks", validation_tasks)
    validation_instance = f"gp-2d-validation:{prior}:nc{plan.context}:nt{plan.targets}:tasks{n_validation}"
    validation = _TASKS.get_or_build((validation_instance, context.seed), lambda: draw_exact_tasks(
        Context(seed=context.seed, split="train", dataset=validation_instance).rng("validation"), prior, n_validation,
        plan.batch_size, plan.context, plan.targets, 0.0))
    return NPData(ProblemShape(X_DIM, prior.width, square), prior, plan, draws, validation,
                  _count("timing_repeats", timing_repeats), instance, validation_instance)


def _min_steps(value, steps) -> int | None:
    if value is None:
        return None
    value = _count("min_steps", value)
    if value > steps:
        raise DataError(f"min_steps = {value} is above train_steps = {steps}: training to the plateau runs between "
                        "the two")
    return value


def _domain(value, width: float, shift: float) -> tuple[float, float]:
    """The grid models' square [low, high]: ``value``, else the training square; it must hold the evaluation square."""
    if value is None:
        value = [-width / 2, width / 2]
    if not (isinstance(value, (list, tuple)) and len(value) == 2
            and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value) and value[0] < value[1]):
        raise DataError(f"domain = {value!r}: expected [low, high] with low < high, the square the grid models cover")
    low, high = float(value[0]), float(value[1])
    lowest, highest = min(-width / 2, -width / 2 + shift), max(width / 2, width / 2 + shift)
    if low > lowest + 1e-9 or high < highest - 1e-9:
        raise DataError(f"domain = {value!r} does not hold the training square and the evaluation square "
                        f"(shift {shift:g}): it spans [{lowest:g}, {highest:g}]; give a domain that covers it")
    return low, high


# --------------------------------------------------------------------------- training and measurement


def training_stream(data: NPData, context: Context):
    """The seed's training batches (xc, yc, xt, yt), float32 torch on the CPU: one per step. They depend on the seed
    and the training distribution only, never on the method, the dataset or the split, so every method trains on
    the same tasks and one training serves every dataset of the seed."""
    import torch

    plan, prior = data.plan, data.prior
    stream = Context(seed=context.seed, split="train", dataset=f"gp-2d-train:{prior}:{plan}").rng("training")
    generator = torch.Generator().manual_seed(int(stream.integers(2**62)))
    for n_c in stream.integers(plan.context[0], plan.context[1] + 1, size=plan.steps):
        yield fourier_feature_batch(generator, prior, plan.batch_size, int(n_c), plan.targets, plan.features)


def train_model(model, data: NPData, context: Context) -> tuple[list[float], TrainingLog]:
    """AdamW on the negative mean target log-likelihood over the seed's :func:`training_stream`, the gradient norm
    clipped, the learning rate warmed up linearly over ``plan.warmup`` steps. With ``plan.min_steps`` the training
    stops at its plateau (:func:`~harness.tasks.training.train_to_plateau`: the validation tasks' log-likelihood,
    read every ``VALIDATE_EVERY`` steps, gained at most ``PLATEAU_TOLERANCE`` over the last fifth of the steps run,
    between ``min_steps`` and ``steps``); without, it runs ``plan.steps``. Returns the per-step training
    log-likelihoods and the validation curve. A non-finite loss stops it with a FloatingPointError."""
    import torch

    plan = data.plan
    optimizer = torch.optim.AdamW(model.parameters(), lr=plan.lr)
    warmup = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda done: min(1.0, (done + 1) / max(1, plan.warmup)))
    stream = training_stream(data, context)
    history: list[float] = []

    def step() -> None:
        model.train()
        xc, yc, xt, yt = (a.to(context.device) for a in next(stream))
        mean, std = model(xc, yc, xt)
        log_likelihood = gaussian_log_density(yt, mean, std).mean()
        if not torch.isfinite(log_likelihood):
            raise FloatingPointError(f"training diverged at step {len(history) + 1} of {plan.steps}: the batch's "
                                     f"log-likelihood is {log_likelihood.item()} (the model's predictive is not finite)")
        optimizer.zero_grad(set_to_none=True)
        (-log_likelihood).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), plan.clip)
        optimizer.step()
        warmup.step()
        history.append(log_likelihood.item())

    def validation() -> float:
        model.eval()
        return score(model, data.validation, context.device)[0]

    name = "validation_log_likelihood"
    if plan.min_steps is not None:
        log = train_to_plateau(step, validation, every=VALIDATE_EVERY, min_steps=plan.min_steps,
                               max_steps=plan.steps, tolerance=PLATEAU_TOLERANCE, name=name)
    else:
        log = TrainingLog(name, budget=plan.steps)
        for done in range(plan.steps):
            step()
            if log.due(done):
                log.record(done, validation())
    model.eval()
    return history, log


def score(model, tasks: EvaluationTasks, device: str, name: str = "model") -> tuple[float, float]:
    """The mean over ``tasks`` of the mean log predictive density per target, and the RMSE of the predictive mean
    over every target; a TypeError for wrong shapes, a FloatingPointError for a non-finite predictive."""
    import torch

    log_likelihood, squared, count = [], 0.0, 0
    with torch.no_grad():
        for batch in tasks.batches:
            xc, yc, xt, yt = _as_torch(batch, slice(None), device)
            mean, std = model(xc, yc, xt)
            if mean.shape != yt.shape or std.shape != yt.shape:
                raise TypeError(f"{name}'s model returned shapes {tuple(mean.shape)}, {tuple(std.shape)}; expected "
                                f"{tuple(yt.shape)} each")
            if not (torch.isfinite(mean).all() and torch.isfinite(std).all() and (std > 0).all()):
                raise FloatingPointError(f"{name}'s model predicts a non-finite mean or a non-positive standard "
                                         "deviation on an evaluation task")
            log_likelihood += gaussian_log_density(yt, mean, std).mean((1, 2)).tolist()
            squared += float((mean - yt).square().sum())
            count += yt.numel()
    return float(np.mean(log_likelihood)), math.sqrt(squared / count)


def gaussian_log_density(y, mean, std):
    """log N(y; mean, std²) elementwise (torch)."""
    return -0.5 * (((y - mean) / std).square() + 2 * std.log() + math.log(2 * math.pi))


def peak_activation_bytes(fn) -> int:
    """The peak number of bytes held by tensors that ``fn()`` allocates, op by op (weights and inputs not counted)."""
    import weakref

    import torch
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_leaves

    class LiveBytes(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.holders: dict[int, list] = {}  # storage pointer → [live tensors, bytes]
            self.live = self.peak = 0
            self.known: set[int] = set()

        def _released(self, pointer: int) -> None:
            holder = self.holders.get(pointer)
            if holder is None:
                return
            holder[0] -= 1
            if holder[0] == 0:
                self.live -= holder[1]
                del self.holders[pointer]

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            for t in tree_leaves((args, kwargs or {})):  # storages made before fn: weights and inputs
                if isinstance(t, torch.Tensor) and t.untyped_storage().data_ptr() not in self.holders:
                    self.known.add(t.untyped_storage().data_ptr())
            out = func(*args, **(kwargs or {}))
            for t in tree_leaves(out):
                if not isinstance(t, torch.Tensor):
                    continue
                storage = t.untyped_storage()
                pointer = storage.data_ptr()
                if pointer in self.known and pointer not in self.holders:
                    continue
                holder = self.holders.get(pointer)
                if holder is None:
                    holder = self.holders[pointer] = [0, storage.nbytes()]
                    self.live += holder[1]
                    self.peak = max(self.peak, self.live)
                holder[0] += 1
                weakref.finalize(t, self._released, pointer)
            return out

    mode = LiveBytes()
    with torch.no_grad(), mode:
        fn()
    return mode.peak


def _as_torch(batch: dict, rows: slice, device: str):
    import torch

    def t(a, *shape):
        return torch.as_tensor(a[rows], dtype=torch.float32, device=device).reshape(*shape)

    b = len(range(*rows.indices(batch["xc"].shape[0])))
    return (t(batch["xc"], b, -1, X_DIM), t(batch["yc"], b, -1, 1), t(batch["xt"], b, -1, X_DIM),
            t(batch["yt"], b, -1, 1))


def inference_clock(device: str, threads: int):
    """The clock of ``infer_s``: on the CPU with one thread, the process's CPU time, which other processes on a
    shared machine do not stretch (wall time did, by up to 3x in one run, enough to blur a scaling exponent);
    with several threads or on a GPU, wall time (CPU time would add the threads up, or miss the device's work)."""
    return time.process_time if device == "cpu" and threads == 1 else time.perf_counter


def _median_seconds(fn, repeats: int, device: str, threads: int = 1) -> float:
    import torch

    def synchronised():
        fn()
        if device.startswith("cuda"):
            torch.cuda.synchronize()

    clock = inference_clock(device, threads)
    synchronised()  # warm-up
    times = []
    for _ in range(repeats):
        started = clock()
        synchronised()
        times.append(clock() - started)
    return statistics.median(times)


class NPRegressionTask(Task):
    """Train each method's model on the shared budget, then score it on the dataset's exactly drawn tasks."""

    name = "np.regression"
    version = "2"  # 2: the grid models' square is fixed (``domain``), the learning rate warms up, the validation curve
    metrics = ("log_likelihood", "gp_log_likelihood", "gap_to_gp", "rmse", "infer_s", "peak_activation_mib",
               "train_s", "train_log_likelihood", "validation_log_likelihood", "training_steps", "parameters")
    protocol = NeuralProcess
    framework = "torch"

    def tiny(self, workdir: Path) -> dict[str, dict[str, Any]]:
        """A few training steps on small tasks (the conformance test)."""
        return {"gp-2d": {"n_context": [20, 40], "targets": 10, "tasks": 4, "batch_size": 2, "train_steps": 2,
                          "train_context": [20, 40], "train_targets": 10, "features": 64, "timing_repeats": 1,
                          "validation_tasks": 2}}

    def evaluate(self, method: NeuralProcess, data: NPData, context: Context) -> Evaluation:
        import torch

        def train() -> None:
            model = method.build(data.problem)
            if not isinstance(model, torch.nn.Module):
                raise TypeError(f"{type(method).__name__}.build returned {type(model).__name__}; expected a "
                                "torch.nn.Module")
            model = model.to(context.device)
            history, log = train_model(model, data, context)
            method.model_, method.training_log_ = model, log
            method.train_log_likelihood_ = float(np.mean(history[-max(1, len(history) // 10):]))

        train_s = _TRAINING.fit(method, context, (data.plan, data.prior, data.problem, data.validation_key), train)
        model = method.model_
        ll, rmse = score(model, data.tasks, context.device, type(method).__name__ + " (trained)")
        gp_ll = float(np.mean(np.concatenate([b["gp_ll"] for b in data.tasks.batches])))
        first = _as_torch(data.tasks.batches[0], slice(0, 1), context.device)[:3]
        with torch.no_grad():
            infer_s = _median_seconds(lambda: model(*first), data.timing_repeats, context.device, context.threads)
        peak = peak_activation_bytes(lambda: model(*first))
        log = method.training_log_
        return Evaluation({
            "log_likelihood": ll,
            "gp_log_likelihood": gp_ll,
            "gap_to_gp": gp_ll - ll,
            "rmse": rmse,
            "infer_s": infer_s,
            "peak_activation_mib": peak / 2**20,
            "train_s": train_s,
            "train_log_likelihood": method.train_log_likelihood_,
            "validation_log_likelihood": log.final,
            "training_steps": float(log.budget),
            "parameters": float(sum(p.numel() for p in model.parameters())),
        }, log.curves())


TASK = NPRegressionTask()
