"""Task ``gp.regression``: fit a GP's hyper-parameters by the method's bound, predict held-out targets.

Every method is handed the same :class:`TrainingSet`: standardised training inputs and
targets, the initial hyper-parameters (ARD lengthscale, signal variance, noise variance),
the inducing inputs (k-means on the training inputs, drawn by the seed: the same for every
method) and the budget (Adam's learning rate, the iterations, the minibatch size of the
uncollapsed bounds). It returns a fitted model; the task then scores it:

* ``bound`` and ``bound_at_init``: the method's own objective per training point, after
  training and at the shared initialisation (the bounds' ordering at equal hyper-parameters);
* ``test_log_likelihood`` and ``rmse``: the predictive N(μ*, var_f* + σ²) on held-out points,
  in the standardised units of the training targets;
* ``noise_variance``, and ``noise_log_ratio_to_exact``: |log σ²/σ²_exact| against the task's
  own exact GP (:func:`exact_reference`, pure torch, the same initialisation, optimiser and
  budget; a seeded subset of ``exact_max`` training points where the set is larger);
* ``fit_seconds``.

The instance (subsample, noise, split, k-means start) depends on the seed and the data's own
parameters, not on ``num_inducing`` or the budget: datasets that differ only in M see the
same points at a seed, so a sweep over M is paired.
"""
from __future__ import annotations

import csv
import dataclasses
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from harness.tasks.base import Context, DataError, DataUnavailable, Task, WorkerCache
from harness.tasks.evaluation import Evaluation
from harness.tasks.gp.plateau import lbfgs_to_plateau
from harness.tasks.training import TrainingLog

INIT = {"lengthscale": 1.0, "outputscale": 1.0, "noise": 0.1}  # standardised inputs and targets
_REFERENCES = WorkerCache(16)
INIT_EXACT_MAX = 20000  # log p(y) at the start (one Cholesky of N × N) up to this N; init_under_exact beyond it is left out


@dataclass(frozen=True)
class TrainingSet:
    """What a method sees: standardised x (N, D) and y (N,), the inducing inputs (M, D), the initial values and the budget."""

    x: np.ndarray
    y: np.ndarray
    inducing: np.ndarray
    init: dict
    iterations: int  # Adam's most steps (the minibatch bounds)
    lr: float
    batch_size: int
    lbfgs_iterations: int = 1000  # L-BFGS's most iterations (the full-batch bounds)


@dataclass(frozen=True)
class RegressionData:
    train: TrainingSet
    val_x: np.ndarray
    val_y: np.ndarray
    test_x: np.ndarray
    test_y: np.ndarray
    instance: str  # what the draw depends on (loader and data parameters), keys the exact reference
    exact_max: int


class FittedGP(Protocol):
    """What :meth:`GPRegressor.fit` returns."""

    bound: float  # the objective on the whole training set after training, per point
    initial_bound: float  # the same at the shared initialisation (uncollapsed bounds: at their optimal q(u))
    noise_variance: float
    training: TrainingLog  # the objective "bound" at 10 fractions of the steps the training ran

    def predict(self, x_new) -> tuple[np.ndarray, np.ndarray]:
        """Mean and marginal variance of the latent f at ``x_new`` (numpy arrays, shape (n,))."""
        ...


class GPRegressor(Protocol):
    """What a method of this task implements."""

    def fit(self, train: TrainingSet, context: Context) -> FittedGP:
        """Train from ``train.init`` and ``train.inducing`` to the plateau (:func:`harness.tasks.gp.plateau.
        train_to_plateau`): L-BFGS for a full-batch objective, Adam at ``train.lr`` for a minibatch one."""
        ...


# --------------------------------------------------------------------------- data


def _budget(num_inducing, iterations, lr, batch_size, lbfgs_iterations) -> None:
    for name, value in (("num_inducing", num_inducing), ("iterations", iterations), ("batch_size", batch_size),
                        ("lbfgs_iterations", lbfgs_iterations)):
        if int(value) < 1:
            raise DataError(f"{name} = {value}: expected a positive integer")
    if not float(lr) > 0:
        raise DataError(f"lr = {lr}: expected a positive learning rate")


def _instance_context(context: Context, instance: str) -> Context:
    # the stream depends on the seed, the split and the data's own parameters, not on the dataset id (M, budget)
    return dataclasses.replace(context, dataset=instance)


def kmeans_inducing(x: np.ndarray, m: int, rng: np.random.Generator) -> np.ndarray:
    """M inducing inputs: k-means centres of the training inputs (the same for every method of a cell)."""
    from sklearn.cluster import KMeans

    m = min(int(m), x.shape[0])
    model = KMeans(n_clusters=m, n_init=4, random_state=int(rng.integers(2**31 - 1))).fit(x)
    return np.asarray(model.cluster_centers_, dtype=np.float64)


def _assemble(context: Context, instance: str, x: np.ndarray, y: np.ndarray, *, n_train: int, n_val: int, n_test: int,
              num_inducing: int, iterations: int, lr: float, batch_size: int, lbfgs_iterations: int,
              exact_max: int, rng: np.random.Generator) -> RegressionData:
    """Shuffle, split train/val/test, standardise by the training part, pick the inducing inputs."""
    order = rng.permutation(x.shape[0])
    x, y = x[order], y[order]
    need = n_train + n_val + n_test
    if x.shape[0] < need:
        raise DataError(f"{instance}: {x.shape[0]} rows, fewer than the {need} the split needs "
                        f"({n_train} train + {n_val} validation + {n_test} test)")
    parts = np.split(np.arange(need), [n_train, n_train + n_val])
    (tx, ty), (vx, vy), (sx, sy) = [(x[p], y[p]) for p in parts]
    x_mean, x_std = tx.mean(0), tx.std(0)
    x_std = np.where(x_std > 0, x_std, 1.0)
    y_mean, y_std = ty.mean(), ty.std()
    if not y_std > 0:
        raise DataError(f"{instance}: the training targets are constant; a GP regression needs them to vary")

    def xs(a):
        return (a - x_mean) / x_std

    def ys(a):
        return (a - y_mean) / y_std

    inducing = kmeans_inducing(xs(tx), num_inducing, rng)
    train = TrainingSet(xs(tx), ys(ty), inducing, dict(INIT), int(iterations), float(lr), int(batch_size),
                        int(lbfgs_iterations))
    return RegressionData(train, xs(vx), ys(vy), xs(sx), ys(sy), instance, int(exact_max))


def snelson_like(context: Context, *, n_train: int = 200, n_val: int = 100, n_test: int = 500, noise: float = 0.3,
                 num_inducing: int = 5, iterations: int = 10000, lr: float = 0.05, batch_size: int = 256,
                 lbfgs_iterations: int = 1000, exact_max: int = 4000) -> RegressionData:
    """1-D: f(x) = sin(2.7x) + 0.5 sin(6.1x + 1) + 0.3 cos(0.9x) on x ~ U(0, 6), y = f + N(0, noise²)."""
    _budget(num_inducing, iterations, lr, batch_size, lbfgs_iterations)
    n = int(n_train) + int(n_val) + int(n_test)
    instance = f"snelson-like:n{n_train}/{n_val}/{n_test}:noise{noise}"
    rng = _instance_context(context, instance).rng("data")
    x = rng.uniform(0.0, 6.0, size=(n, 1))
    f = np.sin(2.7 * x[:, 0]) + 0.5 * np.sin(6.1 * x[:, 0] + 1.0) + 0.3 * np.cos(0.9 * x[:, 0])
    y = f + float(noise) * rng.standard_normal(n)
    return _assemble(context, instance, x, y, n_train=int(n_train), n_val=int(n_val), n_test=int(n_test),
                     num_inducing=num_inducing, iterations=iterations, lr=lr, batch_size=batch_size,
                     lbfgs_iterations=lbfgs_iterations, exact_max=exact_max, rng=rng)


def arm_distance(angles: np.ndarray, lengths: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Distance from ``target`` of a planar arm's end effector: joint k turns by angles[:, k], link k has lengths[k]."""
    headings = np.cumsum(angles, axis=1)
    end = np.stack([(lengths * np.cos(headings)).sum(1), (lengths * np.sin(headings)).sum(1)], axis=1)
    return np.linalg.norm(end - target, axis=1)


def kin_arm(context: Context, *, n_train: int = 1000, n_val: int = 200, n_test: int = 1000, noise: float = 0.05,
            num_inducing: int = 16, iterations: int = 10000, lr: float = 0.05, batch_size: int = 256,
            lbfgs_iterations: int = 1000, exact_max: int = 4000) -> RegressionData:
    """8-D, kin40k-like: joint angles ~ U(−π/4, π/4)⁸, links of length 1, 0.9, …, 0.3, the distance of the end
    effector from the point (3, 3), plus N(0, noise²)."""
    _budget(num_inducing, iterations, lr, batch_size, lbfgs_iterations)
    n = int(n_train) + int(n_val) + int(n_test)
    instance = f"kin-arm:n{n_train}/{n_val}/{n_test}:noise{noise}"
    rng = _instance_context(context, instance).rng("data")
    angles = rng.uniform(-math.pi / 4, math.pi / 4, size=(n, 8))
    lengths = np.linspace(1.0, 0.3, 8)
    y = arm_distance(angles, lengths, np.array([3.0, 3.0])) + float(noise) * rng.standard_normal(n)
    return _assemble(context, instance, angles, y, n_train=int(n_train), n_val=int(n_val), n_test=int(n_test),
                     num_inducing=num_inducing, iterations=iterations, lr=lr, batch_size=batch_size,
                     lbfgs_iterations=lbfgs_iterations, exact_max=exact_max, rng=rng)


def diabetes_gp(context: Context, *, val_fraction: float = 0.1, test_fraction: float = 0.2, num_inducing: int = 16,
                iterations: int = 10000, lr: float = 0.05, batch_size: int = 256,
                lbfgs_iterations: int = 1000, exact_max: int = 4000) -> RegressionData:
    """scikit-learn's bundled diabetes (442 × 10): the seed draws the train/validation/test split."""
    from sklearn.datasets import load_diabetes

    _budget(num_inducing, iterations, lr, batch_size, lbfgs_iterations)
    x, y = load_diabetes(return_X_y=True)
    n = x.shape[0]
    n_test, n_val = int(round(float(test_fraction) * n)), int(round(float(val_fraction) * n))
    instance = f"diabetes:val{val_fraction}:test{test_fraction}"
    rng = _instance_context(context, instance).rng("data")
    return _assemble(context, instance, x.astype(np.float64), y.astype(np.float64), n_train=n - n_val - n_test,
                     n_val=n_val, n_test=n_test, num_inducing=num_inducing, iterations=iterations, lr=lr,
                     batch_size=batch_size, lbfgs_iterations=lbfgs_iterations, exact_max=exact_max, rng=rng)


def read_regression_csv(path: Path, target: str | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(x, y) from a CSV with a header row and numeric cells; the target is the column ``target``, else the last.

    Raises :class:`DataError` naming the file, the line and the column for a cell that is not
    a number, a row with the wrong number of cells, a missing target column or too few rows.
    """
    with open(path, newline="", encoding="utf-8") as handle:
        reader = csv.reader(handle)
        try:
            header = next(reader)
        except StopIteration:
            raise DataError(f"{path}: the file is empty; expected a header row of column names, then numeric rows") from None
        header = [h.strip() for h in header]
        if len(header) < 2:
            raise DataError(f"{path}:1: the header has {len(header)} column(s); expected at least one input and the target")
        if target is None:
            column = len(header) - 1
        elif target in header:
            column = header.index(target)
        else:
            raise DataError(f"{path}:1: no column named {target!r} (the target); the header has {', '.join(header)}")
        rows = []
        for line, row in enumerate(reader, start=2):
            if not row or all(not cell.strip() for cell in row):
                continue
            if len(row) != len(header):
                raise DataError(f"{path}:{line}: {len(row)} cell(s); expected {len(header)}, one per header column")
            values = []
            for name, cell in zip(header, row):
                try:
                    value = float(cell)
                except ValueError:
                    raise DataError(f"{path}:{line}: column {name!r} holds {cell.strip()!r}; expected a number") from None
                if not math.isfinite(value):
                    raise DataError(f"{path}:{line}: column {name!r} holds {cell.strip()!r}; expected a finite number")
                values.append(value)
            rows.append(values)
    if len(rows) < 10:
        raise DataError(f"{path}: {len(rows)} data row(s); expected at least 10")
    table = np.asarray(rows, dtype=np.float64)
    return np.delete(table, column, axis=1), table[:, column]


def uci_csv(context: Context, *, file: str = "pol", root: str | None = None, target: str | None = None,
            max_train: int | None = None, test_fraction: float = 0.1, val_fraction: float = 0.1,
            num_inducing: int = 64, iterations: int = 10000, lr: float = 0.01, batch_size: int = 1024,
            lbfgs_iterations: int = 1000,
            exact_max: int = 4000) -> RegressionData:
    """A UCI regression set, ``DATA_DIR/uci/<file>.csv`` (or ``root/<file>.csv``): header row, numeric columns, the
    target ``target`` or the last column. The seed draws the test and validation fractions and, with ``max_train``,
    a subsample of the rest for training."""
    _budget(num_inducing, iterations, lr, batch_size, lbfgs_iterations)
    folder = Path(root) if root else (Path(context.data_dir) / "uci" if context.data_dir else None)
    if folder is None:
        raise DataUnavailable(f"uci-csv ({file}): no --data-dir given; it reads DATA_DIR/uci/{file}.csv")
    path = folder / f"{file}.csv"
    if not path.is_file():
        raise DataUnavailable(f"uci-csv ({file}): {path} is not there (expected a CSV with a header row)")
    x, y = read_regression_csv(path, target)
    n = x.shape[0]
    n_test, n_val = max(1, int(round(float(test_fraction) * n))), max(1, int(round(float(val_fraction) * n)))
    n_train = n - n_test - n_val
    if max_train is not None:
        n_train = min(n_train, int(max_train))
    instance = f"uci:{file}:target{target}:max{max_train}:val{val_fraction}:test{test_fraction}"
    rng = _instance_context(context, instance).rng("data")
    return _assemble(context, instance, x, y, n_train=n_train, n_val=n_val, n_test=n_test, num_inducing=num_inducing,
                     iterations=iterations, lr=lr, batch_size=batch_size, lbfgs_iterations=lbfgs_iterations,
                     exact_max=exact_max, rng=rng)


def write_regression_csv(path: Path, rows: int, *, columns: int = 3, seed: int = 0) -> Path:
    """A small generated CSV in the layout :func:`uci_csv` reads (tests and the tiny configuration)."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, size=(rows, columns))
    y = np.sin(3 * x[:, 0]) + x[:, 1:].sum(1) + 0.1 * rng.standard_normal(rows)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow([f"x{i}" for i in range(columns)] + ["y"])
        writer.writerows(np.column_stack([x, y]).tolist())
    return path


# --------------------------------------------------------------------------- the exact reference


def exact_log_marginal(x, y, lengthscale, outputscale, noise):
    """log N(y | 0, K + σ²I) with an ARD squared-exponential K, by one Cholesky (torch, differentiable)."""
    import torch

    scaled = x / lengthscale
    sq = (scaled.square().sum(1, keepdim=True) + scaled.square().sum(1) - 2 * scaled @ scaled.T).clamp_min(0.0)
    k = outputscale * torch.exp(-0.5 * sq) + noise * torch.eye(x.shape[0], dtype=x.dtype)
    chol = torch.linalg.cholesky(k)
    alpha = torch.cholesky_solve(y.unsqueeze(-1), chol).squeeze(-1)
    n = x.shape[0]
    return -0.5 * (y @ alpha) - torch.log(torch.diagonal(chol)).sum() - 0.5 * n * math.log(2 * math.pi)


def ard_kernel(a, b, lengthscale, outputscale):
    """The ARD squared-exponential kernel matrix k(a, b) (torch)."""
    import torch

    sa, sb = a / lengthscale, b / lengthscale
    sq = (sa.square().sum(1, keepdim=True) + sb.square().sum(1) - 2 * sa @ sb.T).clamp_min(0.0)
    return outputscale * torch.exp(-0.5 * sq)


def reference_bounds(train: TrainingSet, exact_max: int, jitter: float = 1e-6) -> dict[str, float]:
    """The task's own values, per training point, of Titsias's and Artemev et al.'s collapsed bounds and (where
    N ≤ ``exact_max``) of log p(y), at the shared initial hyper-parameters and inducing inputs (torch, O(NM²)).

    Written apart from every method's code so that the checks on a method's ``bound_at_init`` compare it with an
    independent computation: whatever the data, F_new ≥ F_art ≥ F_old (log(1 + a) ≤ a and Jensen) and log p(y) is
    above every bound at the same hyper-parameters.
    """
    import torch

    x, y, z = (torch.as_tensor(a, dtype=torch.float64) for a in (train.x, train.y, train.inducing))
    n, m = x.shape[0], z.shape[0]
    ls = torch.full((x.shape[1],), float(train.init["lengthscale"]), dtype=torch.float64)
    os_, noise = float(train.init["outputscale"]), float(train.init["noise"])
    with torch.no_grad():
        chol = torch.linalg.cholesky(ard_kernel(z, z, ls, os_) + jitter * torch.eye(m, dtype=torch.float64))
        a = torch.linalg.solve_triangular(chol, ard_kernel(z, x, ls, os_), upper=False) / math.sqrt(noise)
        chol_b = torch.linalg.cholesky(torch.eye(m, dtype=torch.float64) + a @ a.T)
        c = torch.linalg.solve_triangular(chol_b, (a @ y).unsqueeze(-1), upper=False).squeeze(-1) / math.sqrt(noise)
        dtc = float(-0.5 * n * math.log(2 * math.pi) - torch.log(torch.diagonal(chol_b)).sum()
                    - 0.5 * n * math.log(noise) - 0.5 * (y @ y) / noise + 0.5 * (c @ c))
        d = (os_ - noise * a.square().sum(0)).clamp_min(0.0)
        trace = float(d.sum()) / noise
        out = {"titsias": (dtc - 0.5 * trace) / n, "artemev": (dtc - 0.5 * n * math.log1p(trace / n)) / n}
        if n <= exact_max:
            out["exact"] = float(exact_log_marginal(x, y, ls, torch.tensor(os_, dtype=torch.float64),
                                                    torch.tensor(noise, dtype=torch.float64))) / n
    return out


@dataclass(frozen=True)
class ExactReference:
    noise: float  # σ²_exact
    training: TrainingLog  # its log p(y) per point at 10 fractions of the L-BFGS iterations it ran


def exact_reference(data: RegressionData, context: Context) -> ExactReference:
    """The noise variance σ²_exact of the task's own exact GP, from the same initial values, trained to its plateau
    by the rule every method follows (L-BFGS, :func:`harness.tasks.gp.plateau.train_to_plateau`).

    The task's own code (pure torch, not a method's): the reference does not move with a bug in
    a baseline. Each positive value is softplus of a free parameter (the noise plus a floor of
    1e-4), gpytorch's default constraints, as the exact-gp method's. Cached per worker.
    """
    train = data.train

    def fit() -> ExactReference:
        import torch
        from torch.nn.functional import softplus

        x, y = torch.as_tensor(train.x), torch.as_tensor(train.y)
        if x.shape[0] > data.exact_max:
            keep = np.sort(_instance_context(context, data.instance).rng("exact-subset").choice(
                x.shape[0], data.exact_max, replace=False))
            x, y = x[keep], y[keep]

        def free(value: float, count: int | None = None):
            raw = math.log(math.expm1(value))  # softplus⁻¹
            shape = () if count is None else (count,)
            return torch.full(shape, raw, dtype=torch.float64, requires_grad=True)

        floor = 1e-4
        raw_ls, raw_os = free(train.init["lengthscale"], x.shape[1]), free(train.init["outputscale"])
        raw_noise = free(train.init["noise"] - floor)
        parameters = [raw_ls, raw_os, raw_noise]

        def objective():
            return exact_log_marginal(x, y, softplus(raw_ls), softplus(raw_os), softplus(raw_noise) + floor) / x.shape[0]

        def value():
            with torch.no_grad():
                return float(objective())

        log = lbfgs_to_plateau(parameters, lambda: -objective(), value, max_steps=train.lbfgs_iterations,
                               name="exact_reference_bound")
        return ExactReference(float(softplus(raw_noise.detach()) + floor), log)

    key = (data.instance, context.seed, context.split, train.lbfgs_iterations, data.exact_max)
    return _REFERENCES.get_or_build(key, fit)


# --------------------------------------------------------------------------- the task


def gaussian_log_density(y, mean, var) -> np.ndarray:
    return -0.5 * (np.log(2 * math.pi * var) + (y - mean) ** 2 / var)


class GPRegressionTask(Task):
    """Train by the method's bound on the dataset's budget, then score the predictive and the learned noise."""

    name = "gp.regression"
    version = "2"  # 2: every training runs to its plateau (L-BFGS or Adam) and keeps its curve; the init checks
    metrics = ("bound", "bound_at_init", "test_log_likelihood", "rmse", "noise_variance", "noise_log_ratio_to_exact",
               "fit_seconds", "training_steps", "exact_reference_bound", "init_over_titsias", "init_over_artemev",
               "init_under_exact")
    protocol = GPRegressor
    framework = "torch"

    def tiny(self, workdir: Path) -> dict[str, dict[str, Any]]:
        """Small configurations for the conformance test; ``uci-csv`` reads a generated CSV written in ``workdir``."""
        root = Path(workdir) / "gp-data"
        write_regression_csv(root / "tiny.csv", 80)
        small = {"num_inducing": 4, "iterations": 250, "lbfgs_iterations": 10, "batch_size": 16}
        return {
            "snelson-like": {"n_train": 40, "n_val": 10, "n_test": 20, **small},
            "kin-arm": {"n_train": 40, "n_val": 10, "n_test": 20, **small},
            "diabetes-gp": small,
            "uci-csv": {"file": "tiny", "root": str(root), "exact_max": 30, **small},
        }

    def evaluate(self, method: GPRegressor, data: RegressionData, context: Context) -> Evaluation:
        who = type(method).__name__
        started = time.perf_counter()
        fitted = method.fit(data.train, context)
        fit_s = time.perf_counter() - started
        for attribute in ("bound", "initial_bound", "noise_variance", "training", "predict"):
            if not hasattr(fitted, attribute):
                raise TypeError(f"{who}.fit returned {type(fitted).__name__}, which has no {attribute}")
        if not isinstance(fitted.training, TrainingLog) or fitted.training.name != "bound":
            raise TypeError(f"{who}.fit's training is {fitted.training!r}; expected a TrainingLog named 'bound'")
        x, y = (data.val_x, data.val_y) if context.split == "val" else (data.test_x, data.test_y)
        mean, var_f = (np.asarray(a, dtype=np.float64) for a in fitted.predict(x))
        if mean.shape != y.shape or var_f.shape != y.shape:
            raise TypeError(f"{who}'s predict returned shapes {mean.shape}, {var_f.shape}; expected {y.shape} each")
        noise = float(fitted.noise_variance)
        reference = exact_reference(data, context)
        at_init = reference_bounds(data.train, INIT_EXACT_MAX)
        initial = float(fitted.initial_bound)
        metrics = {
            "bound": float(fitted.bound),
            "bound_at_init": initial,
            "test_log_likelihood": float(gaussian_log_density(y, mean, var_f + noise).mean()),
            "rmse": float(np.sqrt(np.mean((y - mean) ** 2))),
            "noise_variance": noise,
            "noise_log_ratio_to_exact": abs(math.log(noise / reference.noise)),
            "fit_seconds": fit_s,
            "training_steps": float(fitted.training.budget),
            "exact_reference_bound": reference.training.final,
            "init_over_titsias": initial - at_init["titsias"],
            "init_over_artemev": initial - at_init["artemev"],
        }
        if "exact" in at_init:
            metrics["init_under_exact"] = at_init["exact"] - initial
        return Evaluation(metrics, {**fitted.training.curves(), **reference.training.curves()})


TASK = GPRegressionTask()
