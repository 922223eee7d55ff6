"""Task ``moo.preference``: reach the preferred point of a two-objective problem, F = (f1, f2) under H = a f1 - b f2.

A preference ray (a, b) asks for the Pareto point where a f1 = b f2 (Chen et al., FERERO, 2024a; FOOPS, ICML 2025).
For each ray of a dataset every method is handed the same :class:`Problem`: the start x0 (drawn by the seed), the
ray, the number of outer steps, and the objectives oracle ``objectives(x) -> (F, J)`` with F the two values and J the
2 x P Jacobian. It returns a :class:`Trajectory`: the final x and F at each outer iterate. The task alone computes
the scores at the final points:

* ``violation`` |H(x)|, ``preference_objective`` H(x)^2 (FOOPS's upper level f0), ``mean_objective`` (f1 + f2)/2;
* ``stationarity``: the norm of the min-norm convex combination of the two gradients (0 iff x is Pareto
  stationary), computed in closed form for two objectives (:func:`min_norm_weight`);
* ``hypervolume``: the exact 2-D hypervolume (:func:`hypervolume_2d`) of the final points of all rays w.r.t. the
  dataset's reference point; on two-digits the points are the held-out canvases' losses.

Every score is averaged over the rays; the per-step mean |H| is kept as a curve.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Callable, Protocol

import numpy as np

from harness.tasks.base import Context, DataError, Task
from harness.tasks.evaluation import Curve, Evaluation

_CURVE_POINTS = 40


@dataclass(frozen=True)
class Problem:
    """What a method sees: one ray of one instance."""

    objectives: Callable  # x (P,) -> (F (2,), J (2, P)), float64 numpy
    x0: np.ndarray  # (P,) the start, the same for every method
    ray: tuple[float, float]  # (a, b): H(x) = a f1(x) - b f2(x)
    steps: int  # outer steps (one x update each)


class Trajectory(Protocol):
    x: Any  # (P,) the final point
    values: Any  # (steps + 1, 2): F at x0 and after each outer step


@dataclass(frozen=True)
class Run:
    """A plain :class:`Trajectory`."""

    x: np.ndarray
    values: np.ndarray


class PreferenceSolver(Protocol):
    """What a method of this task implements."""

    def solve(self, problem: Problem) -> Trajectory:
        """``problem.steps`` outer steps from ``problem.x0`` using only ``problem.objectives`` and ``problem.ray``."""
        ...


@dataclass(frozen=True)
class Instance:
    """A dataset: one problem per ray, and what the task scores them with."""

    problems: tuple[Problem, ...]
    reference: tuple[float, float]  # the hypervolume's reference point
    scored: Callable  # x -> F of the final point used for the hypervolume (held-out losses on two-digits)


# --------------------------------------------------------------------------- scores


def preference(values: np.ndarray, ray) -> np.ndarray:
    """H = a f1 - b f2 of F values (..., 2)."""
    a, b = ray
    values = np.asarray(values, dtype=np.float64)
    return a * values[..., 0] - b * values[..., 1]


def min_norm_weight(jacobian: np.ndarray) -> float:
    """λ in [0, 1] minimising ||λ g1 + (1 - λ) g2||: clip(<g2 - g1, g2> / ||g1 - g2||², 0, 1) (0.5 if g1 = g2)."""
    g1, g2 = np.asarray(jacobian[0], dtype=np.float64), np.asarray(jacobian[1], dtype=np.float64)
    diff = g1 - g2
    denominator = float(diff @ diff)
    if denominator <= 0.0:
        return 0.5
    return float(np.clip((g2 - g1) @ g2 / denominator, 0.0, 1.0))


def min_norm_direction(jacobian: np.ndarray) -> np.ndarray:
    """The min-norm element of the convex hull of the two gradients (MGDA's common descent direction, negated)."""
    lam = min_norm_weight(jacobian)
    return lam * np.asarray(jacobian[0], dtype=np.float64) + (1.0 - lam) * np.asarray(jacobian[1], dtype=np.float64)


def stationarity(jacobian: np.ndarray) -> float:
    """||min over the simplex of Σ λ_m ∇f_m||: 0 exactly at Pareto-stationary points."""
    return float(np.linalg.norm(min_norm_direction(jacobian)))


def hypervolume_2d(points: np.ndarray, reference) -> float:
    """The exact area dominated by ``points`` (n, 2) (minimisation) and bounded by ``reference``: sort by f1 and sum
    the rectangles of the non-dominated staircase; points not strictly better than the reference in both add 0."""
    points = np.asarray(points, dtype=np.float64).reshape(-1, 2)
    r1, r2 = float(reference[0]), float(reference[1])
    inside = points[(points[:, 0] < r1) & (points[:, 1] < r2)]
    if inside.size == 0:
        return 0.0
    inside = inside[np.lexsort((inside[:, 1], inside[:, 0]))]
    area, level = 0.0, r2
    for f1, f2 in inside:
        if f2 < level:
            area += (r1 - f1) * (level - f2)
            level = f2
    return float(area)


# --------------------------------------------------------------------------- datasets


def _rays(rays) -> tuple[tuple[float, float], ...]:
    try:
        out = tuple((float(a), float(b)) for a, b in rays)
    except (TypeError, ValueError):
        raise DataError(f"rays = {rays!r}: expected a list of [a, b] pairs") from None
    if not out or any(not (a > 0 and b > 0 and math.isfinite(a) and math.isfinite(b)) for a, b in out):
        raise DataError(f"rays = {rays!r}: expected at least one [a, b] pair with a > 0 and b > 0")
    return out


def _steps(steps) -> int:
    if not (isinstance(steps, (int, np.integer)) and int(steps) >= 1):
        raise DataError(f"steps = {steps!r}: expected a positive integer")
    return int(steps)


def exp_objectives(x: np.ndarray, shift: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """Ex. 3.12: f1 = 1 - exp(-||x - c||²), f2 = 1 - exp(-||x + c||²) with c = shift·1, and their gradients
    2(x ∓ c) exp(-||x ∓ c||²)."""
    x = np.asarray(x, dtype=np.float64)
    d1, d2 = x - shift, x + shift
    e1, e2 = math.exp(-float(d1 @ d1)), math.exp(-float(d2 @ d2))
    return np.array([1.0 - e1, 1.0 - e2]), np.stack([2.0 * d1 * e1, 2.0 * d2 * e2])


_CENTRES = ("ones", "unit")


def exp_toy(context: Context, *, dim: int = 1, rays=((5.0, 4.0),), spread: float = 0.1, steps: int = 2000,
            centre: str = "ones") -> Instance:
    """Ex. 3.12 in R^dim (the paper's H = 5 f1 - 4 f2 by default), the objectives' minimisers at ±c:

    * ``centre: ones``: c = 1_q, (12a) as printed (the all-ones vector);
    * ``centre: unit``: c = 1_q/√q (||c|| = 1 in every dimension), the toy of Lin et al. (2019) and Mahapatra & Rajan
      (2020), which the paper says its q = 20 experiment follows (their public toy code, reused by FERERO's, defines
      f_1,2 = 1 - exp(-||x ∓ 1/√q||²)). The same in R (q = 1).

    The seed draws a hard start: s·c + spread·N(0, I) with a random sign s, i.e. near the minimiser of f1 (s = +1) or
    f2 (s = -1). The Pareto set is the segment between -c and c; the reference point of the hypervolume is (1, 1),
    the objectives' supremum."""
    if not (isinstance(dim, (int, np.integer)) and int(dim) >= 1):
        raise DataError(f"exp-toy: dim = {dim!r}; expected a positive integer")
    if not (float(spread) >= 0.0 and math.isfinite(float(spread))):
        raise DataError(f"exp-toy: spread = {spread!r}; expected a finite number >= 0")
    if centre not in _CENTRES:
        raise DataError(f"exp-toy: centre = {centre!r}; expected one of {', '.join(_CENTRES)}")
    rays, steps = _rays(rays), _steps(steps)
    shift = 1.0 if centre == "ones" else 1.0 / math.sqrt(int(dim))
    objectives = partial(exp_objectives, shift=shift)
    rng = context.rng("start")
    sign = 1.0 if rng.random() < 0.5 else -1.0
    x0 = sign * shift * np.ones(int(dim)) + float(spread) * rng.standard_normal(int(dim))
    problems = tuple(Problem(objectives, x0.copy(), ray, steps) for ray in rays)
    return Instance(problems, (1.0, 1.0), lambda x: objectives(x)[0])


def two_digit_canvases(images: np.ndarray, labels: np.ndarray, pairs: np.ndarray, canvas: int, offset: int):
    """Canvases (n, canvas²) with image pairs[:, 0] at the top left and pairs[:, 1] shifted by ``offset`` pixels
    down and right, overlapping pixels combined by max; and the two labels (n,), (n,)."""
    n = pairs.shape[0]
    out = np.zeros((n, canvas, canvas))
    first = images[pairs[:, 0]].reshape(n, 8, 8)
    second = images[pairs[:, 1]].reshape(n, 8, 8)
    out[:, :8, :8] = first
    out[:, offset:offset + 8, offset:offset + 8] = np.maximum(out[:, offset:offset + 8, offset:offset + 8], second)
    return out.reshape(n, canvas * canvas), labels[pairs[:, 0]], labels[pairs[:, 1]]


class TwoTaskNetwork:
    """A shared ReLU layer and one softmax head per task, its parameters one flat vector
    (W1 (d, h), b1 (h), W2 (h, 10), b2 (10), W3 (h, 10), b3 (10)); the losses and their gradients by hand."""

    def __init__(self, inputs: np.ndarray, first: np.ndarray, second: np.ndarray, hidden: int):
        self.inputs, self.first, self.second, self.hidden = inputs, first, second, int(hidden)
        d, h = inputs.shape[1], self.hidden
        self.shapes = [(d, h), (h,), (h, 10), (10,), (h, 10), (10,)]
        self.size = sum(int(np.prod(s)) for s in self.shapes)

    def unpack(self, x: np.ndarray) -> list[np.ndarray]:
        out, at = [], 0
        for shape in self.shapes:
            k = int(np.prod(shape))
            out.append(x[at:at + k].reshape(shape))
            at += k
        return out

    def initial(self, rng: np.random.Generator) -> np.ndarray:
        """U(±1/√fan_in) for every weight and bias (PyTorch's default for a linear layer)."""
        fans = [self.shapes[0][0]] * 2 + [self.hidden] * 4
        return np.concatenate([rng.uniform(-1, 1, int(np.prod(s))) / math.sqrt(f) for s, f in zip(self.shapes, fans)])

    def __call__(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        w1, b1, w2, b2, w3, b3 = self.unpack(np.asarray(x, dtype=np.float64))
        n = self.inputs.shape[0]
        pre = self.inputs @ w1 + b1
        h = np.maximum(pre, 0.0)
        values, jac = np.empty(2), np.zeros((2, self.size))
        for m, (w, b, y) in enumerate(((w2, b2, self.first), (w3, b3, self.second))):
            logits = h @ w + b
            logits = logits - logits.max(1, keepdims=True)
            log_p = logits - np.log(np.exp(logits).sum(1, keepdims=True))
            values[m] = -log_p[np.arange(n), y].mean()
            dlogits = np.exp(log_p)
            dlogits[np.arange(n), y] -= 1.0
            dlogits /= n
            dpre = (dlogits @ w.T) * (pre > 0)
            grads = [self.inputs.T @ dpre, dpre.sum(0)]
            grads += [h.T @ dlogits, dlogits.sum(0)] if m == 0 else [np.zeros_like(w2), np.zeros_like(b2)]
            grads += [h.T @ dlogits, dlogits.sum(0)] if m == 1 else [np.zeros_like(w3), np.zeros_like(b3)]
            jac[m] = np.concatenate([g.ravel() for g in grads])
        return values, jac


def two_digits(context: Context, *, train: int = 1000, test: int = 500, canvas: int = 12, offset: int = 4,
               hidden: int = 32, rays=((1.0, 4.0), (2.0, 3.0), (1.0, 1.0), (3.0, 2.0), (4.0, 1.0)),
               steps: int = 300) -> Instance:
    """Two-digit canvases from scikit-learn's bundled digits (1797 8x8 images, pixels / 16): the seed splits the
    images 2:1 into training and held-out pools, draws ``train`` and ``test`` random pairs within each pool and the
    network's initial weights. f_m is task m's mean cross-entropy on the training canvases (full batch); the
    hypervolume is taken on the held-out canvases' losses with reference point (ln 10, ln 10), the loss of a
    uniform prediction."""
    from sklearn.datasets import load_digits

    for name, value, low in (("train", train, 10), ("test", test, 10), ("hidden", hidden, 1)):
        if not (isinstance(value, (int, np.integer)) and int(value) >= low):
            raise DataError(f"two-digits: {name} = {value!r}; expected an integer of at least {low}")
    if not (isinstance(offset, (int, np.integer)) and isinstance(canvas, (int, np.integer))
            and 0 <= int(offset) and int(offset) + 8 <= int(canvas) and int(canvas) >= 8):
        raise DataError(f"two-digits: canvas = {canvas!r}, offset = {offset!r}; expected integers with "
                        f"8 <= canvas and 0 <= offset <= canvas - 8")
    rays, steps = _rays(rays), _steps(steps)
    digits = load_digits()
    images, labels = digits.data / 16.0, digits.target.astype(np.int64)
    rng = context.rng("data")
    order = rng.permutation(images.shape[0])
    cut = 2 * images.shape[0] // 3
    pools = order[:cut], order[cut:]
    sets = []
    for pool, n in zip(pools, (int(train), int(test))):
        pairs = np.stack([rng.choice(pool, n), rng.choice(pool, n)], axis=1)
        sets.append(two_digit_canvases(images, labels, pairs, int(canvas), int(offset)))
    network = TwoTaskNetwork(*sets[0], hidden=int(hidden))
    held_out = TwoTaskNetwork(*sets[1], hidden=int(hidden))
    x0 = network.initial(context.rng("init"))
    problems = tuple(Problem(network, x0.copy(), ray, steps) for ray in rays)
    chance = math.log(10.0)
    return Instance(problems, (chance, chance), lambda x: held_out(x)[0])


# --------------------------------------------------------------------------- the task


class MethodFailed(Exception):
    """A method returned something that is not a trajectory of the problem."""


class PreferenceTask(Task):
    """Run a method once per ray from the shared start; score the final points."""

    name = "moo.preference"
    version = "1"
    metrics = ("violation", "stationarity", "preference_objective", "hypervolume", "mean_objective")
    protocol = PreferenceSolver
    framework = None

    def tiny(self, workdir: Path) -> dict[str, dict[str, Any]]:
        """Small configurations for the conformance test."""
        return {
            "exp-toy": {"dim": 2, "steps": 20},
            "two-digits": {"train": 40, "test": 20, "hidden": 4, "steps": 3, "rays": [[1, 1], [2, 1]]},
        }

    def evaluate(self, method: PreferenceSolver, data: Instance, context: Context) -> Evaluation:
        who = type(method).__name__
        finals, scored, curves = [], [], []
        for problem in data.problems:
            run = method.solve(problem)
            x = np.asarray(run.x, dtype=np.float64)
            values = np.asarray(run.values, dtype=np.float64)
            if x.shape != problem.x0.shape or values.shape != (problem.steps + 1, 2):
                raise MethodFailed(f"{who}.solve returned x {x.shape} and values {values.shape}; expected "
                                   f"{problem.x0.shape} and ({problem.steps + 1}, 2)")
            if not (np.isfinite(x).all() and np.isfinite(values).all()):
                raise MethodFailed(f"{who}: non-finite x or objective values on ray {problem.ray}")
            f, jac = problem.objectives(x)
            h = float(preference(f, problem.ray))
            finals.append((abs(h), h * h, stationarity(jac), float(f.mean())))
            scored.append(data.scored(x))
            curves.append(np.abs(preference(values, problem.ray)))
        finals = np.asarray(finals)
        steps = data.problems[0].steps
        at = np.unique(np.linspace(0, steps, min(_CURVE_POINTS, steps + 1)).round().astype(int))
        mean_curve = np.mean([c[at] for c in curves], axis=0) if len({len(c) for c in curves}) == 1 else None
        metrics = {
            "violation": float(finals[:, 0].mean()),
            "preference_objective": float(finals[:, 1].mean()),
            "stationarity": float(finals[:, 2].mean()),
            "mean_objective": float(finals[:, 3].mean()),
            "hypervolume": hypervolume_2d(np.asarray(scored), data.reference),
        }
        out = {} if mean_curve is None else {
            "violation": Curve(x=at.tolist(), y=mean_curve.tolist(), x_label="outer step",
                               y_label="|H(x_t)| (mean over rays)")}
        return Evaluation(metrics=metrics, curves=out)


TASK = PreferenceTask()
