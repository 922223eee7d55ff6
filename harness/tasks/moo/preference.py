"""Task ``moo.preference``: reach the preferred point of a two-objective problem, F = (f1, f2) under H = a f1 - b f2.

A preference ray (a, b) asks for the Pareto point where a f1 = b f2 (Chen et al., FERERO, 2024a; FOOPS, ICML 2025).
For each ray of a dataset every method is handed the same :class:`Problem`: the start x0 (drawn by the seed), the
ray, its budget, and the objectives oracle ``objectives(x) -> (F, J)`` with F the two values and J the 2 x P Jacobian.

The budget is counted in oracle calls, one call being F and both gradients at one point (the unit of the paper's
"first-order" cost). Where a dataset sets ``evaluations``, every method gets that many calls per run and runs until
they are spent: a method whose outer step costs c calls (FOOPS: K + 2) takes ``evaluations // c`` whole outer steps
(:meth:`Problem.outer_steps`). The task hands the method a :class:`CountedObjectives` that refuses the call past the
budget, failing the cell, and records what was spent (``gradient_evaluations``). A method that runs several
independent runs per ray and keeps one (linear scalarisation's sweep of weights) says so by its ``runs``, gets
``runs`` times the budget, and its ``gradient_evaluations`` show it. Where a dataset sets ``steps`` instead (the
setting before budgets were counted), every method takes that many outer steps whatever each costs, nothing is
refused, and the calls are still recorded.

A method returns a :class:`Trajectory`: the final x and F at the outer iterates it evaluated, with the calls it had
spent to reach each. The task alone computes the scores at the final points, with the uncounted oracle:

* ``violation`` |H(x)|, ``preference_objective`` H(x)^2 (FOOPS's upper level f0), ``mean_objective`` (f1 + f2)/2;
* ``preferred_distance``: ||F(x) − F*||, F* the preferred Pareto point of the ray, where the dataset knows it (the
  toy: :func:`exp_preferred_point`); |H| alone also rewards points off the front where a f1 = b f2 holds;
* ``on_front``: 1 where x lies within the dataset's tolerance of the Pareto set, else 0 (the toy: the segment
  between the minimisers), telling a stationary point on the front from the plateau where every gradient vanishes;
* ``stationarity``: the norm of the min-norm convex combination of the two gradients (0 iff x is Pareto
  stationary), computed in closed form for two objectives (:func:`min_norm_weight`);
* ``hypervolume``: the exact 2-D hypervolume (:func:`hypervolume_2d`) of the final points of all rays w.r.t. the
  dataset's reference point; on two-digits the points are the held-out canvases' losses;
* ``gradient_evaluations``: the oracle calls the method made (all its runs).

Every score is averaged over the rays; the mean |H| over rays against the calls spent is kept as a curve.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any, Callable, Protocol

import numpy as np

from harness.tasks.base import Context, DataError, Task
from harness.tasks.evaluation import Curve, Evaluation

_CURVE_POINTS = 40
FRONT_TOLERANCE = 0.01  # on_front: within this share of ||c|| of the toy's Pareto segment (fixed before any run)


@dataclass(frozen=True)
class Problem:
    """What a method sees: one ray of one instance."""

    objectives: Callable  # x (P,) -> (F (2,), J (2, P)), float64 numpy; one call is one oracle call of the budget
    x0: np.ndarray  # (P,) the start, the same for every method
    ray: tuple[float, float]  # (a, b): H(x) = a f1(x) - b f2(x)
    steps: int | None  # outer steps, where the dataset sets no budget; None where it does
    evaluations: int | None = None  # the oracle calls one run may make; None: no budget (``steps`` outer steps)

    def outer_steps(self, cost: int) -> int:
        """The outer steps a method whose outer step costs ``cost`` oracle calls takes: as many whole steps as the
        budget holds, or ``steps`` where the dataset sets no budget."""
        if self.evaluations is None:
            return int(self.steps)
        return self.evaluations // int(cost)


class Trajectory(Protocol):
    x: Any  # (P,) the final point
    values: Any  # (n, 2): F at the outer iterates the method evaluated, x0 first (the task evaluates the final x)
    spent: Any  # (n,): the oracle calls the run had made to reach each iterate (0 for x0; increasing)


@dataclass(frozen=True)
class Run:
    """A plain :class:`Trajectory`."""

    x: np.ndarray
    values: np.ndarray
    spent: np.ndarray


class PreferenceSolver(Protocol):
    """What a method of this task implements. A method that makes several independent runs per ray and keeps one
    (a sweep) sets ``runs`` to their number: it gets the budget once per run."""

    def solve(self, problem: Problem) -> Trajectory:
        """Outer steps from ``problem.x0`` (:meth:`Problem.outer_steps` of them) using only ``problem.objectives``
        and ``problem.ray``."""
        ...


class BudgetSpent(Exception):
    """A method asked the oracle for a call past its budget."""


class CountedObjectives:
    """The oracle a method is handed: the problem's, counting its calls and refusing the one past ``limit``."""

    def __init__(self, objectives: Callable, limit: int | None, where: str):
        self.objectives, self.limit, self.where, self.calls = objectives, limit, where, 0

    def __call__(self, x):
        if self.limit is not None and self.calls >= self.limit:
            raise BudgetSpent(f"{self.where}: oracle call {self.calls + 1} is past the budget of {self.limit} calls "
                              f"(F and both gradients at one point each); a method stops when its budget is spent")
        self.calls += 1
        return self.objectives(x)


@dataclass(frozen=True)
class Instance:
    """A dataset: one problem per ray, and what the task scores them with."""

    problems: tuple[Problem, ...]
    reference: tuple[float, float]  # the hypervolume's reference point
    scored: Callable  # x -> F of the final point used for the hypervolume (held-out losses on two-digits)
    preferred: tuple[np.ndarray, ...] | None = None  # F* of each problem's ray; None where unknown (the network)
    pareto_distance: Callable | None = None  # x -> its distance to the Pareto set; None where unknown
    front_tolerance: float = 0.0  # on_front: pareto_distance(x) at most this


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


def _budget(steps, evaluations, default_steps: int) -> tuple[int | None, int | None]:
    """(steps, evaluations): the oracle-call budget where ``evaluations`` is given, else ``steps`` outer steps for
    every method (``default_steps`` when neither is given)."""
    if steps is not None and evaluations is not None:
        raise DataError(f"steps = {steps!r} and evaluations = {evaluations!r}: give one, evaluations (the oracle "
                        f"calls every method spends) or steps (outer steps for every method, whatever each costs)")
    for name, value in (("steps", steps), ("evaluations", evaluations)):
        if value is not None and not (isinstance(value, (int, np.integer)) and int(value) >= 1):
            raise DataError(f"{name} = {value!r}: expected a positive integer")
    if evaluations is not None:
        return None, int(evaluations)
    return int(default_steps if steps is None else steps), None


def exp_objectives(x: np.ndarray, shift: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """Ex. 3.12: f1 = 1 - exp(-||x - c||²), f2 = 1 - exp(-||x + c||²) with c = shift·1, and their gradients
    2(x ∓ c) exp(-||x ∓ c||²)."""
    x = np.asarray(x, dtype=np.float64)
    d1, d2 = x - shift, x + shift
    e1, e2 = math.exp(-float(d1 @ d1)), math.exp(-float(d2 @ d2))
    return np.array([1.0 - e1, 1.0 - e2]), np.stack([2.0 * d1 * e1, 2.0 * d2 * e2])


_CENTRES = ("ones", "unit")
_STARTS = ("hard", "drawn")
_DRAWN_SPAN = 1.2  # start: drawn: x0 = u c + spread N(0, I), u ~ U[-1.2, 1.2] (the segment ±c and a little beyond)


def exp_preferred_point(ray, shift: float, dim: int) -> tuple[np.ndarray, float]:
    """F* of Ex. 3.12 for the ray (a, b), and s* with x* = s* c: the Pareto set is the segment x = s c, s in
    [-1, 1], where f1 = 1 - exp(-(1 - s)² r²) and f2 = 1 - exp(-(1 + s)² r²) with r = ||c||; H = a f1 - b f2
    falls from a(1 - e^{-4r²}) > 0 at s = -1 to -b(1 - e^{-4r²}) < 0 at s = 1, so its one root is found by Brent's
    method."""
    from scipy.optimize import brentq

    a, b = float(ray[0]), float(ray[1])
    r2 = float(shift) ** 2 * int(dim)

    def on_segment(s: float) -> np.ndarray:
        return np.array([-math.expm1(-(1.0 - s) ** 2 * r2), -math.expm1(-(1.0 + s) ** 2 * r2)])

    s_star = brentq(lambda s: float(preference(on_segment(s), (a, b))), -1.0, 1.0, xtol=1e-15,
                    rtol=4 * np.finfo(float).eps)
    return on_segment(s_star), float(s_star)


def segment_distance(x: np.ndarray, centre: np.ndarray) -> float:
    """The distance from x to the segment between -centre and centre (the toy's Pareto set)."""
    x = np.asarray(x, dtype=np.float64)
    s = float(np.clip(x @ centre / float(centre @ centre), -1.0, 1.0))
    return float(np.linalg.norm(x - s * centre))


def exp_toy(context: Context, *, dim: int = 1, rays=((5.0, 4.0),), spread: float = 0.1, steps: int | None = None,
            evaluations: int | None = None, centre: str = "ones", start: str = "hard") -> Instance:
    """Ex. 3.12 in R^dim (the paper's H = 5 f1 - 4 f2 by default), the objectives' minimisers at ±c:

    * ``centre: ones``: c = 1_q, (12a) as printed (the all-ones vector);
    * ``centre: unit``: c = 1_q/√q (||c|| = 1 in every dimension), the toy of Lin et al. (2019) and Mahapatra & Rajan
      (2020), which the paper says its q = 20 experiment follows (their public toy code, reused by FERERO's, defines
      f_1,2 = 1 - exp(-||x ∓ 1/√q||²)). The same in R (q = 1).

    The seed draws the start, with ``start: hard`` (the default, the setting of the results before issue 29)
    s·c + spread·N(0, I) with a random sign s, i.e. near the minimiser of f1 (s = +1) or f2 (s = -1); with
    ``start: drawn`` u·c + spread·N(0, I) with u ~ U[-1.2, 1.2], anywhere along the Pareto segment and a little
    beyond. The budget: ``evaluations`` oracle calls, else ``steps`` outer steps (2000 when neither is set). The
    Pareto set is the segment between -c and c; the reference point of the hypervolume is (1, 1), the objectives'
    supremum; F* of each ray by :func:`exp_preferred_point`; on the front: within 1% of ||c|| of the segment."""
    if not (isinstance(dim, (int, np.integer)) and int(dim) >= 1):
        raise DataError(f"exp-toy: dim = {dim!r}; expected a positive integer")
    if not (float(spread) >= 0.0 and math.isfinite(float(spread))):
        raise DataError(f"exp-toy: spread = {spread!r}; expected a finite number >= 0")
    if centre not in _CENTRES:
        raise DataError(f"exp-toy: centre = {centre!r}; expected one of {', '.join(_CENTRES)}")
    if start not in _STARTS:
        raise DataError(f"exp-toy: start = {start!r}; expected one of {', '.join(_STARTS)}")
    rays = _rays(rays)
    steps, evaluations = _budget(steps, evaluations, 2000)
    shift = 1.0 if centre == "ones" else 1.0 / math.sqrt(int(dim))
    objectives = partial(exp_objectives, shift=shift)
    c = shift * np.ones(int(dim))
    rng = context.rng("start")
    if start == "hard":
        along = 1.0 if rng.random() < 0.5 else -1.0
    else:
        along = float(rng.uniform(-_DRAWN_SPAN, _DRAWN_SPAN))
    x0 = along * c + float(spread) * rng.standard_normal(int(dim))
    problems = tuple(Problem(objectives, x0.copy(), ray, steps, evaluations) for ray in rays)
    preferred = tuple(exp_preferred_point(ray, shift, int(dim))[0] for ray in rays)
    return Instance(problems, (1.0, 1.0), lambda x: objectives(x)[0], preferred,
                    partial(segment_distance, centre=c), FRONT_TOLERANCE * float(np.linalg.norm(c)))


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
               steps: int | None = None, evaluations: int | None = None) -> Instance:
    """Two-digit canvases from scikit-learn's bundled digits (1797 8x8 images, pixels / 16): the seed splits the
    images 2:1 into training and held-out pools, draws ``train`` and ``test`` random pairs within each pool and the
    network's initial weights. f_m is task m's mean cross-entropy on the training canvases (full batch); the
    hypervolume is taken on the held-out canvases' losses with reference point (ln 10, ln 10), the loss of a
    uniform prediction. The budget: ``evaluations`` oracle calls, else ``steps`` outer steps (300 when neither is
    set). The preferred point and the Pareto set are unknown here: no ``preferred_distance``, no ``on_front``."""
    from sklearn.datasets import load_digits

    for name, value, low in (("train", train, 10), ("test", test, 10), ("hidden", hidden, 1)):
        if not (isinstance(value, (int, np.integer)) and int(value) >= low):
            raise DataError(f"two-digits: {name} = {value!r}; expected an integer of at least {low}")
    if not (isinstance(offset, (int, np.integer)) and isinstance(canvas, (int, np.integer))
            and 0 <= int(offset) and int(offset) + 8 <= int(canvas) and int(canvas) >= 8):
        raise DataError(f"two-digits: canvas = {canvas!r}, offset = {offset!r}; expected integers with "
                        f"8 <= canvas and 0 <= offset <= canvas - 8")
    rays = _rays(rays)
    steps, evaluations = _budget(steps, evaluations, 300)
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
    problems = tuple(Problem(network, x0.copy(), ray, steps, evaluations) for ray in rays)
    chance = math.log(10.0)
    return Instance(problems, (chance, chance), lambda x: held_out(x)[0])


# --------------------------------------------------------------------------- the task


class MethodFailed(Exception):
    """A method returned something that is not a trajectory of the problem."""


class PreferenceTask(Task):
    """Run a method once per ray from the shared start, within the ray's budget; score the final points."""

    name = "moo.preference"
    version = "2"  # 2: budgets in oracle calls, trajectories with the calls spent, preferred_distance and on_front
    metrics = ("violation", "preferred_distance", "on_front", "stationarity", "preference_objective", "hypervolume",
               "mean_objective", "gradient_evaluations")
    protocol = PreferenceSolver
    framework = None

    def tiny(self, workdir: Path) -> dict[str, dict[str, Any]]:
        """Small configurations for the conformance test."""
        return {
            "exp-toy": {"dim": 2, "evaluations": 60, "start": "drawn"},
            "two-digits": {"train": 40, "test": 20, "hidden": 4, "evaluations": 21, "rays": [[1, 1], [2, 1]]},
        }

    def evaluate(self, method: PreferenceSolver, data: Instance, context: Context) -> Evaluation:
        who = type(method).__name__
        runs = int(getattr(method, "runs", 1))
        finals, scored, calls, curves = [], [], [], []
        for i, problem in enumerate(data.problems):
            limit = None if problem.evaluations is None else problem.evaluations * runs
            oracle = CountedObjectives(problem.objectives, limit, f"{who} on ray {problem.ray}")
            run = method.solve(replace(problem, objectives=oracle))
            x, values, spent = self._checked(run, problem, oracle, who)
            f, jac = problem.objectives(x)  # the uncounted oracle: scoring is the task's, not the method's budget
            h = float(preference(f, problem.ray))
            row = {"violation": abs(h), "preference_objective": h * h, "stationarity": stationarity(jac),
                   "mean_objective": float(f.mean())}
            if data.preferred is not None:
                row["preferred_distance"] = float(np.linalg.norm(f - data.preferred[i]))
            if data.pareto_distance is not None:
                row["on_front"] = float(data.pareto_distance(x) <= data.front_tolerance)
            finals.append(row)
            scored.append(data.scored(x))
            calls.append(oracle.calls)
            # |H| at each iterate against the calls spent to reach it, the final point at the calls of one run
            reached = np.append(spent, oracle.calls / runs)
            curves.append(self._sampled(reached, np.append(np.abs(preference(values, problem.ray)), abs(h)),
                                        problem.evaluations or reached[-1]))
        metrics = {name: float(np.mean([row[name] for row in finals])) for name in finals[0]}
        metrics["hypervolume"] = hypervolume_2d(np.asarray(scored), data.reference)
        metrics["gradient_evaluations"] = float(np.mean(calls))
        return Evaluation(metrics=metrics, curves=self._curves(curves))

    @staticmethod
    def _checked(run: Trajectory, problem: Problem, oracle: CountedObjectives, who: str):
        """The run's final x, values and calls spent, after checking they are a trajectory of the problem."""
        try:
            x = np.asarray(run.x, dtype=np.float64)
            values = np.asarray(run.values, dtype=np.float64)
            values = values.reshape(0, 2) if values.size == 0 else values  # no iterate evaluated: the start row
            spent = np.asarray(run.spent, dtype=np.float64).reshape(-1)
        except (AttributeError, TypeError, ValueError) as exc:
            raise MethodFailed(f"{who}.solve returned no trajectory (x, values, spent): {exc}") from None
        if x.shape != problem.x0.shape or values.ndim != 2 or values.shape[1] != 2 or values.shape[0] != spent.size:
            raise MethodFailed(f"{who}.solve returned x {x.shape}, values {values.shape} and spent {spent.shape}; "
                               f"expected {problem.x0.shape}, (n, 2) and (n,)")
        if spent.size and (spent[0] < 0 or np.any(np.diff(spent) <= 0) or spent[-1] >= oracle.calls
                           or np.any(spent != np.round(spent))):
            raise MethodFailed(f"{who}: spent must be increasing call counts from 0, below the {oracle.calls} calls "
                               f"made; found {spent[:3].tolist()} … {spent[-1]:.0f}")
        if not (np.isfinite(x).all() and np.isfinite(values).all()):
            raise MethodFailed(f"{who}: non-finite x or objective values on ray {problem.ray}")
        return x, values, spent

    @staticmethod
    def _sampled(reached: np.ndarray, violation: np.ndarray, budget: float) -> tuple[np.ndarray, np.ndarray]:
        """|H| of the latest iterate reached within each of up to :data:`_CURVE_POINTS` call counts from 0 to the
        budget: the same x for every method of a dataset, whatever each outer step costs."""
        grid = np.unique(np.linspace(0.0, float(budget), _CURVE_POINTS).round())
        return grid, violation[np.searchsorted(reached, grid, side="right") - 1]

    @staticmethod
    def _curves(curves: list[tuple[np.ndarray, np.ndarray]]) -> dict[str, Curve]:
        """The mean |H| over rays against the calls spent; none where the rays' budgets differ (``steps`` without a
        budget, runs that spent their calls differently)."""
        xs = curves[0][0]
        if any(x.shape != xs.shape or np.any(x != xs) for x, _ in curves):
            return {}
        mean = np.mean([y for _, y in curves], axis=0)
        return {"violation": Curve(x=xs.tolist(), y=mean.tolist(), x_label="oracle calls spent (one run)",
                                   y_label="|H| at the latest iterate (mean over rays)")}


TASK = PreferenceTask()
