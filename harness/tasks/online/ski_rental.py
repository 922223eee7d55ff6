"""Task ``online.ski_rental``: ski rental with a learned prediction (Shen, Vitercik and Wikum, ICML 2025, §3).

Continuous ski rental: skiing lasts z > 0 days (unknown), renting costs 1 per day, buying costs b. A policy picks,
per instance, the day k it buys on if it is still skiing: its cost is z if z ≤ k, else k + b; the offline optimum
pays min(z, b). The measured expected competitive ratio is the mean of ALG/OPT over the test instances.

A method sees a :class:`SkiProblem`: b, the training and validation samples (features x and durations z, from
which it fits and calibrates whatever predictor it uses). It then gets the test features only, and returns a
buying day per test instance, and, if it has one, its predicted probability f(x) of Z > b. The task scores the days against
the test durations it alone holds, and the predictor against the outcomes 1{Z > b}: the max calibration error α̂
(largest |mean f − mean y| over ``calibration_bins`` equal-mass bins of f), the mean squared error η, and the
paper's bound (Thm 3.1), 1 + 2α + min{E f + α, 2√(η + 3α)}. The theorem's α is the bound on the calibration
error the algorithm was run with: a method that has one (Algorithm 1's α, which it estimated before seeing the
test split) reports it through ``error_bound`` and the bound is evaluated at it (``bound_alpha``); a method
without one is scored at the test split's α̂. A method without a probability predictor is scored on the
no-feature predictor f ≡ the training base rate P̂(Z > b) (the predictor a calibrated algorithm would have with
no features), so that every row has the same columns. Each method with a predictor also returns a curve: the
mean ratio in each decile of f, beside the mean of the per-prediction bound (Thm 3.3)
1 + 2α + min{v + α, 2√((v + α)(1 − v + α))} over the same instances, at the same α.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, Sequence

import numpy as np

from harness.tasks.base import Context, DataError, Task
from harness.tasks.evaluation import Curve, Evaluation
from harness.tasks.online.tables import locate, read_columns, write_citibike_like

CURVE_DECILES = 10


@dataclass(frozen=True)
class Sample:
    x: np.ndarray  # (n, d) features
    z: np.ndarray  # (n,) durations, > 0


@dataclass(frozen=True)
class SkiProblem:
    """What a method sees before the test instances."""

    b: float
    train: Sample
    val: Sample


@dataclass(frozen=True)
class SkiInstance:
    problem: SkiProblem
    test: Sample


class SkiRentalPolicy(Protocol):
    """What a method of this task implements."""

    def fit(self, problem: SkiProblem, rng: np.random.Generator) -> None:
        """Fit and calibrate the method's predictor (if any) on ``problem.train`` and ``problem.val``."""
        ...

    def buy_days(self, x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """(n,) the day each test instance buys on if still skiing (≥ 0; +inf never buys)."""
        ...

    def probabilities(self, x: np.ndarray) -> np.ndarray | None:
        """(n,) the method's predicted P(Z > b | x) used by its decisions, or None if it has no such predictor."""
        ...

    def error_bound(self) -> float | None:
        """The bound α on its predictor's max calibration error that the method's decisions assume (fixed before
        the test split), or None if its decisions assume none."""
        ...


# --------------------------------------------------------------------------- costs and the paper's bounds


def ski_cost(k: np.ndarray, z: np.ndarray, b: float) -> np.ndarray:
    """Rent until day k, then buy: z if z ≤ k, else k + b."""
    k, z = np.asarray(k, dtype=float), np.asarray(z, dtype=float)
    return np.where(z <= k, z, k + b)


def optimum_cost(z: np.ndarray, b: float) -> np.ndarray:
    return np.minimum(np.asarray(z, dtype=float), b)


def per_prediction_bound(v: np.ndarray, alpha: float) -> np.ndarray:
    """Thm 3.3: E[CR | f = v] ≤ 1 + 2α + min{v + α, 2√((v + α)(1 − v + α))}."""
    v = np.asarray(v, dtype=float)
    return 1 + 2 * alpha + np.minimum(v + alpha, 2 * np.sqrt((v + alpha) * (1 - v + alpha)))


def global_bound(alpha: float, mean_f: float, mse: float) -> float:
    """Thm 3.1: E[CR] ≤ 1 + 2α + min{E f + α, 2√(η + 3α)}, η = E (f − 1{Z > b})²."""
    return float(1 + 2 * alpha + min(mean_f + alpha, 2 * math.sqrt(mse + 3 * alpha)))


def equal_mass_calibration_error(f: np.ndarray, y: np.ndarray, bins: int) -> float:
    """α̂ on held-out data: max over ``bins`` equal-mass bins of f (sorted; ties split arbitrarily, which cannot
    move a bin's mean f) of |mean f − mean y|."""
    order = np.argsort(f, kind="stable")
    return float(max(abs(float(np.mean(f[part]) - np.mean(y[part])))
                     for part in np.array_split(order, min(bins, f.size)) if part.size))


# --------------------------------------------------------------------------- datasets


def _sizes(**sizes) -> dict[str, int]:
    for name, value in sizes.items():
        if not (isinstance(value, (int, np.integer)) and int(value) >= 10):
            raise DataError(f"{name} = {value!r}: expected an integer of at least 10")
    return {k: int(v) for k, v in sizes.items()}


def _split(x, z, n_train, n_val) -> tuple[Sample, Sample, Sample]:
    return (Sample(x[:n_train], z[:n_train]), Sample(x[n_train:n_train + n_val], z[n_train:n_train + n_val]),
            Sample(x[n_train + n_val:], z[n_train + n_val:]))


def _direction(context: Context, dim: int) -> np.ndarray:
    if not (isinstance(dim, (int, np.integer)) and int(dim) >= 1):
        raise DataError(f"dim = {dim!r}: expected an integer of at least 1")
    w = context.rng("direction").standard_normal(int(dim))
    return w / np.linalg.norm(w)


def ski_smooth(context: Context, *, n_train: int = 6400, n_val: int = 1600, n_test: int = 2000, dim: int = 5,
               sigma: float = 1.0, b: float = 1.0) -> SkiInstance:
    """Design A (the note's smooth noise): X ~ N(0, I_dim), Z = b·exp(wᵀX + σε), ε ~ N(0, 1), ‖w‖ = 1 drawn by
    the seed; P(Z > b | X) = Φ(wᵀX/σ), which varies with X (less as σ grows)."""
    n = _sizes(n_train=n_train, n_val=n_val, n_test=n_test)
    if not (float(sigma) > 0 and float(b) > 0):
        raise DataError(f"ski-smooth: sigma = {sigma}, b = {b}; expected both > 0")
    w, s, b = _direction(context, dim), float(sigma), float(b)
    rng = context.rng("data")
    total = sum(n.values())
    x = rng.standard_normal((total, w.size))
    z = b * np.exp(x @ w + s * rng.standard_normal(total))
    train, val, test = _split(x, z, n["n_train"], n["n_val"])
    return SkiInstance(SkiProblem(b, train, val), test)


def ski_bimodal(context: Context, *, n_train: int = 6400, n_val: int = 1600, n_test: int = 2000, dim: int = 5,
                gamma: float = 8.0, base: float = 0.5, b: float = 1.0) -> SkiInstance:
    """Design B (Lemma 3.6's two modes): p(X) = sigmoid(logit(base) + γ·wᵀX), X ~ N(0, I_dim); Z ~ U(2b, 4b)
    with probability p(X), else Z ~ U(0.1b, 0.5b). γ = 0 is the lemma's own family, P(Z > b | X) = base for
    every x; γ > 0 makes it vary with X."""
    n = _sizes(n_train=n_train, n_val=n_val, n_test=n_test)
    if not (0 < float(base) < 1 and float(gamma) >= 0 and float(b) > 0):
        raise DataError(f"ski-bimodal: base = {base}, gamma = {gamma}, b = {b}; expected 0 < base < 1, gamma ≥ 0, b > 0")
    w, g, b = _direction(context, dim), float(gamma), float(b)
    offset = math.log(float(base) / (1 - float(base)))

    def probability(q):
        return 1 / (1 + np.exp(-(offset + g * (np.asarray(q) @ w))))

    rng = context.rng("data")
    total = sum(n.values())
    x = rng.standard_normal((total, w.size))
    high = rng.random(total) < probability(x)
    z = np.where(high, rng.uniform(2 * b, 4 * b, total), rng.uniform(0.1 * b, 0.5 * b, total))
    train, val, test = _split(x, z, n["n_train"], n["n_val"])
    return SkiInstance(SkiProblem(b, train, val), test)


CITIBIKE_FEATURES = ("birth year", "gender", "start hour", "start station latitude", "start station longitude")


def ski_csv(context: Context, *, file: str = "citibike.csv", root: str | None = None, b: float = 600.0,
            duration: str = "tripduration", features: Sequence[str] = CITIBIKE_FEATURES, rows: int = 10000,
            train_fraction: float = 0.64, val_fraction: float = 0.16) -> SkiInstance:
    """Trip durations from ``DATA_DIR/citibike/<file>`` (or ``root/<file>``), the paper's CitiBike setting: a
    header row, the ``duration`` column (the paper's ``tripduration``, seconds) and numeric ``features``
    (categories encoded as numbers; the default is the paper's "no information" set, with the start hour as its
    own column). Rows with a missing cell (empty, ``\\N``) in a used column and rows with duration ≤ 0 (OPT = 0)
    are dropped. The seed draws ``rows`` rows and the 64/16/20 train/validation/test split; b is in the duration's
    unit (the paper: 200 … 1000 s)."""
    if not (0 < float(train_fraction) and 0 < float(val_fraction) and float(train_fraction) + float(val_fraction) < 1):
        raise DataError(f"ski-csv: train_fraction = {train_fraction}, val_fraction = {val_fraction}; expected "
                        "positive fractions summing to less than 1")
    path = locate(context, "ski-csv", "citibike", file, root)
    columns = [duration, *[f for f in features if f != duration]]
    if len(columns) < 2:
        raise DataError(f"ski-csv: features = {list(features)}; expected at least one feature column besides {duration!r}")
    table, _ = read_columns(path, columns, loader="ski-csv")
    z = table[duration]
    keep = z > 0
    x = np.column_stack([table[c] for c in columns[1:]])[keep]
    z = z[keep]
    if z.size < 30:
        raise DataError(f"ski-csv: {path} has {z.size} usable rows (duration > 0, no missing cell); expected at least 30")
    b = float(b)
    share = float(np.mean(z > b))
    if not 0 < share < 1:
        raise DataError(f"ski-csv: b = {b:g}: {share:.0%} of the durations in {path} exceed it; choose b between "
                        f"{z.min():g} and {z.max():g} so that both outcomes occur")
    rng = dataclasses.replace(context, dataset=f"ski-csv:{path.name}:{rows}").rng("data")
    take = rng.permutation(z.size)[: min(int(rows), z.size)]
    n_train = int(round(float(train_fraction) * take.size))
    n_val = int(round(float(val_fraction) * take.size))
    train, val, test = _split(x[take], z[take], n_train, n_val)
    return SkiInstance(SkiProblem(b, train, val), test)


# --------------------------------------------------------------------------- the task


class SkiRentalTask(Task):
    name = "online.ski_rental"
    version = "2"
    metrics = ("competitive_ratio", "worst_ratio", "calibration_error", "bound_alpha", "predictor_mse",
               "theory_bound", "ratio_over_bound")
    protocol = SkiRentalPolicy
    framework = None
    calibration_bins = 20  # equal-mass bins of f for α̂ on the test split

    def tiny(self, workdir: Path) -> dict[str, dict[str, Any]]:
        root = Path(workdir) / "citibike"
        write_citibike_like(root / "tiny.csv", 300)
        small = {"n_train": 200, "n_val": 100, "n_test": 100}
        return {"ski-smooth": small, "ski-bimodal": small,
                "ski-csv": {"file": "tiny.csv", "root": str(root), "rows": 300, "b": 600.0}}

    def evaluate(self, method: SkiRentalPolicy, data: SkiInstance, context: Context) -> Evaluation:
        who = type(method).__name__
        problem, test = data.problem, data.test
        method.fit(problem, context.rng("method", "fit"))
        k = np.asarray(method.buy_days(test.x.copy(), context.rng("method", "decide")), dtype=float)
        if k.shape != test.z.shape or np.isnan(k).any() or (k < 0).any():
            raise TypeError(f"{who}.buy_days returned {k.shape} days (min {np.nanmin(k) if k.size else None}); "
                            f"expected {test.z.shape} days ≥ 0")
        ratio = ski_cost(k, test.z, problem.b) / optimum_cost(test.z, problem.b)
        f = method.probabilities(test.x.copy())
        y = (test.z > problem.b).astype(float)
        own = f is not None
        if own:
            f = np.asarray(f, dtype=float)
            if f.shape != y.shape or not np.all((f >= 0) & (f <= 1)):
                raise TypeError(f"{who}.probabilities returned {f.shape} values outside [0, 1]; expected {y.shape} in [0, 1]")
        else:
            f = np.full(y.shape, float(np.mean(problem.train.z > problem.b)))
        alpha = equal_mass_calibration_error(f, y, self.calibration_bins)
        assumed = method.error_bound()
        if assumed is not None and not (math.isfinite(float(assumed)) and float(assumed) >= 0):
            raise TypeError(f"{who}.error_bound returned {assumed!r}; expected a finite α ≥ 0 or None")
        used = alpha if assumed is None else float(assumed)
        mse = float(np.mean((f - y) ** 2))
        bound = global_bound(used, float(f.mean()), mse)
        cr = float(ratio.mean())
        metrics = {"competitive_ratio": cr, "worst_ratio": float(ratio.max()), "calibration_error": alpha,
                   "bound_alpha": used, "predictor_mse": mse, "theory_bound": bound, "ratio_over_bound": cr / bound}
        curves = {}
        if own:
            parts = np.array_split(np.argsort(f, kind="stable"), CURVE_DECILES)
            curves["ratio_by_prediction"] = Curve(
                x=list(range(1, CURVE_DECILES + 1)), y=[float(ratio[p].mean()) for p in parts],
                x_label="decile of f(X)", y_label="E[ALG/OPT] (theory: Thm 3.3 at the method's α)",
                theory=[float(per_prediction_bound(f[p], used).mean()) for p in parts])
        return Evaluation(metrics=metrics, curves=curves)


TASK = SkiRentalTask()
