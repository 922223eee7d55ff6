"""Task ``sco.multipass``: projected SGD's population and empirical loss per epoch, on instances where both are exact.

Vansover-Hager, Koren & Livni (ICML 2025) prove that multi-pass SGD with the step size that is optimal for one
pass, η = Θ(1/√n), can reach population excess Ω(1) after its second pass while its training loss is minimal.
Their instance (App. B) is replaced here by the paper note's CPU simplification, **not the paper's exact
instance**:

* a packing U ⊂ {0,1}^d of |U| = packing · 2^n random vectors with exactly 7d/16 ones (the loader checks that
  the vector u0 the oracle walks to has ⟨u0, v⟩ ≤ 5d/16 with every other v);
* a sample is a subset V ⊆ U holding each u with probability ½ (a Bernoulli mask over U);
* f(w, V) = d^{-1/2} max{c, max_{v∈V} ⟨v, w⟩} + α h(w), h(w) = max{0, max_{|I|≤B} −w(I)}, w(I) = Σ_{i∈I} w_i/√B
  (blocks normalised by √B, not √|I|, so a partial last block ends at the same height), with
  α = min{1, 1/(η₀√T₀)} and c = η₀α · 5d/(16√B) for the step size η₀ = n^(−design_step_exponent) and the number of
  steps T₀ = design_epochs · n the dataset names: a lower bound's instance depends on (η, T), and fixing them in the
  dataset makes every method of a spec run on the same function (a method with η > η₀ would also lift the other
  packing vectors above c: the closed-form prediction below assumes η ≤ η₀);
* w lives in the unit ball of R^d (App. B's two halves, its shift inside g and its 5/7 and 2/7 weights are left
  out, so only the last iterate and suffixes with at least 5/7 of their weight after the walk show the excess).

The oracle is **sample-dependent**, as the paper's is before its Lemma D.2 reduction, which this task does not
implement: the task tests the lower bound for a sample-dependent oracle (the statement that reduction turns into
Thm 3.1 for every oracle), not Thm 3.1 itself. ``adversarial`` returns the subgradient of the active terms, and,
once every training sample has been drawn (from the second pass of a shuffled order; after coupon-collector time with replacement) and w ≥ 0, the
valid subgradient −α e_I of the guide term for the first block I of u0's support still at 0, where u0 is the
first packing vector in no training sample. ``lazy`` (the ordinary-oracle control) returns 0 wherever 0 is a
subgradient, so SGD never leaves w = 0. The population loss is exact: with s = U w sorted in decreasing order,
E_V max{c, max_{u∈V} s_u} = Σ_{k≤m} 2^{-k} s_(k) + 2^{-m} c, m = #{u : s_u > c}; w = 0 is a population and an
empirical minimiser (f ≥ c/√d pointwise), so min F = min F_S = c/√d.

The smooth control is least squares on the unit sphere (``least_squares_sphere``), whose population excess is
‖w − w*‖²/(2d) exactly and whose empirical minimum over the unit ball is a trust-region problem solved to
machine precision.

Every cell also reports its steps T (the budget: one oracle call each) and ``prediction_error``, the gap between
its measured excess and the task's own account of it (the construction's closed form on the hard instance,
projected SGD replayed on the indices the method asked for on the smooth control), 0 up to rounding.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Protocol

import numpy as np

from harness.tasks.base import Context, DataError, Task
from harness.tasks.evaluation import Curve, Evaluation

MAX_PACKING_ENTRIES = 60_000_000  # |U| · d bytes of the packing (uint8)


@dataclass(frozen=True)
class Problem:
    """What a method sees: the sample size, the step size and number of steps it planned, and two callables."""

    n: int
    dim: int
    eta: float
    steps: int
    subgradient: Callable[[np.ndarray, int], np.ndarray]  # (w, i) → a subgradient of f(·, z_i) at w
    project: Callable[[np.ndarray], np.ndarray]  # onto the unit ball


class SGDMethod(Protocol):
    """What a method of this task implements."""

    def plan(self, n: int) -> tuple[float, int]:
        """(η, T): the constant step size and the number of steps for n training samples. The instance is built
        for them (a lower bound's instance may depend on η and T)."""
        ...

    def run(self, problem: Problem, rng: np.random.Generator) -> np.ndarray:
        """The iterates w_0 = 0, w_1, …, w_T as a (T + 1, d) array; sample indices drawn from ``rng`` only."""
        ...


# --------------------------------------------------------------------------- the hard instance


@dataclass(frozen=True)
class FeldmanBlocks:
    packing: np.ndarray  # (|U|, d) uint8 0/1, each row with 7d/16 ones
    masks: np.ndarray  # (n, |U|) bool: the training samples V_1 … V_n
    block: int  # B
    oracle: str  # "adversarial" | "lazy"
    free: int  # index of u0, the first packing vector in no training sample; −1 when there is none
    alpha: float  # the guide term's weight α = min{1, 1/(η₀√T₀)}
    floor: float  # c = η₀α · 5d/(16√B), the max term's floor
    design_eta: float  # η₀, the step size the instance is built for
    sparse: Any  # the packing as a scipy.sparse CSR matrix (float64), for s = U w

    @property
    def n(self) -> int:
        return self.masks.shape[0]

    @property
    def dim(self) -> int:
        return self.packing.shape[1]

    def walk_blocks(self) -> list[np.ndarray]:
        """u0's support in increasing order, cut into consecutive blocks of B (the last one may be partial)."""
        if self.free < 0:
            return []
        support = np.flatnonzero(self.packing[self.free])
        return [support[i:i + self.block] for i in range(0, support.size, self.block)]


def feldman_blocks(context: Context, *, n: int = 10, dim: int = 2000, packing: int = 2, block: int = 0,
                   oracle: str = "adversarial", design_epochs: int = 2,
                   design_step_exponent: float = 0.5) -> FeldmanBlocks:
    """The simplified hard instance for n training samples in R^dim: |U| = packing · 2^n random 7·dim/16-sparse
    0/1 vectors, n Bernoulli(½) subsets of U as the training set (a free vector u0 exists with probability
    1 − (1 − 2^−n)^|U|). ``block`` is B (0: round(3·dim/n), App. B's 3d/τ_epoch); the walk to u0 takes
    ⌈7·dim/(16 B)⌉ steps, which must fit in one pass. α and c are set for η₀ = n^(−design_step_exponent) and
    T₀ = design_epochs · n, whatever method then runs on the instance."""
    if not (isinstance(n, (int, np.integer)) and 2 <= int(n) <= 20):
        raise DataError(f"feldman-blocks: n = {n!r}; expected an integer from 2 to 20 (the packing has packing · 2^n vectors)")
    if not (isinstance(dim, (int, np.integer)) and int(dim) >= 16 and int(dim) % 16 == 0):
        raise DataError(f"feldman-blocks: dim = {dim!r}; expected a positive multiple of 16 (vectors have 7·dim/16 ones)")
    if not (isinstance(packing, (int, np.integer)) and int(packing) >= 1):
        raise DataError(f"feldman-blocks: packing = {packing!r}; expected an integer of at least 1 (|U| = packing · 2^n)")
    if oracle not in ("adversarial", "lazy"):
        raise DataError(f"feldman-blocks: oracle = {oracle!r}; expected 'adversarial' or 'lazy'")
    if not (isinstance(design_epochs, (int, np.integer)) and int(design_epochs) >= 1):
        raise DataError(f"feldman-blocks: design_epochs = {design_epochs!r}; expected a positive integer (T₀ = K₀ n)")
    if not (isinstance(design_step_exponent, (int, float)) and 0 < float(design_step_exponent) <= 2):
        raise DataError(f"feldman-blocks: design_step_exponent = {design_step_exponent!r}; expected a number in (0, 2] "
                        "(η₀ = n^-exponent)")
    n, d, size = int(n), int(dim), int(packing) * 2 ** int(n)
    if size * d > MAX_PACKING_ENTRIES:
        raise DataError(f"feldman-blocks: packing · 2^n · dim = {size * d:,} entries; at most {MAX_PACKING_ENTRIES:,} "
                        "(lower n, dim or packing)")
    ones = 7 * d // 16
    b = round(3 * d / n) if int(block) == 0 else int(block)
    if b < 1 or math.ceil(ones / b) > n:
        raise DataError(f"feldman-blocks: block = {block!r} (B = {b}); expected B ≥ 7·dim/(16 n) = {ones / n:.1f} so "
                        "that the walk to u0 fits in one pass, or 0 for 3·dim/n")
    rng = context.rng("packing")
    support = np.argpartition(rng.random((size, d)), ones, axis=1)[:, :ones]
    u = np.zeros((size, d), dtype=np.uint8)
    np.put_along_axis(u, support, 1, axis=1)
    masks = context.rng("samples").random((n, size)) < 0.5
    unused = np.flatnonzero(~masks.any(axis=0))
    free = int(unused[0]) if unused.size else -1
    if free >= 0:
        overlap = u @ u[free].astype(np.int64)
        overlap[free] = 0
        if overlap.max() > 5 * d // 16:
            raise DataError(f"feldman-blocks: a packing vector overlaps u0 in {int(overlap.max())} > 5·dim/16 = "
                            f"{5 * d // 16} coordinates; the instance needs a packing (raise dim)")
    eta0 = float(n) ** -float(design_step_exponent)
    alpha, c = feldman_constants(eta0, int(design_epochs) * n, d, b)
    from scipy.sparse import csr_matrix

    sparse = csr_matrix((np.ones(size * ones), support.ravel(), np.arange(0, size * ones + 1, ones)), shape=(size, d))
    return FeldmanBlocks(u, masks, b, oracle, free, alpha, c, eta0, sparse)


def feldman_constants(eta: float, steps: int, dim: int, block: int) -> tuple[float, float]:
    """(α, c) = (min{1, 1/(η√T)}, ηα · 5d/(16√B)): the guide term's weight and the floor of the max term."""
    alpha = min(1.0, 1.0 / (eta * math.sqrt(steps)))
    return alpha, eta * alpha * 5 * dim / (16 * math.sqrt(block))


def predicted_excess(eta: float, alpha: float, c: float, dim: int, block: int, walked: int) -> float:
    """Population excess after the oracle's walk has set ``walked`` coordinates of u0's support to ηα/√B (the
    rest of w at 0): ½ · max{0, ηα·walked/√B − c} / √d, since a fresh sample holds u0 with probability ½ and
    every other packing vector (overlap ≤ 5d/16 with u0) stays under c = η₀α·5d/(16√B) while η ≤ η₀. At η = η₀
    the whole walk (7d/16 coordinates) gives ηα√d/(16√B)."""
    return 0.5 * max(0.0, eta * alpha * walked / math.sqrt(block) - c) / math.sqrt(dim)


def scores(packing: np.ndarray, w: np.ndarray, sparse: Any = None) -> np.ndarray:
    """s = U w: by the sparse copy of U when given, else from the 0/1 matrix using w's support (the walk's
    iterates are sparse)."""
    if sparse is not None:
        return sparse @ w if w.any() else np.zeros(packing.shape[0])
    nz = np.flatnonzero(w)
    if nz.size == 0:
        return np.zeros(packing.shape[0])
    if nz.size <= packing.shape[1] // 2:
        return packing[:, nz] @ w[nz]
    return packing @ w


def expected_max(s: np.ndarray, c: float) -> float:
    """E_V max{c, max_{u∈V} s_u} over V holding each u independently with probability ½, exactly:
    Σ_{k≤m} 2^{-k} s_(k) + 2^{-m} c over the m scores above c in decreasing order (the chance that the k-th
    largest is V's largest is 2^{-k}; below c the floor wins)."""
    above = np.sort(s[s > c])[::-1]
    k = np.arange(1, above.size + 1)
    return float(np.sum(0.5 ** k * above) + 0.5 ** above.size * c)


def guide(w: np.ndarray, block: int) -> tuple[float, np.ndarray]:
    """h(w) = max{0, max_{|I|≤B} −w(I)} and its maximising I (the ≤ B most negative coordinates; empty when h = 0)."""
    neg = np.flatnonzero(w < 0)
    if neg.size == 0:
        return 0.0, neg
    if neg.size > block:
        neg = neg[np.argpartition(w[neg], block - 1)[:block]]
    return float(-w[neg].sum() / math.sqrt(block)), neg


class FeldmanOracle:
    """The instance's subgradient oracle for one run; it remembers which samples it has been asked about."""

    def __init__(self, instance: FeldmanBlocks, alpha: float | None = None, c: float | None = None):
        self.instance = instance
        self.alpha = instance.alpha if alpha is None else alpha
        self.c = instance.floor if c is None else c
        self.blocks = instance.walk_blocks() if instance.oracle == "adversarial" else []
        self.seen: set[int] = set()
        self.order: list[int] = []
        self.cover_step = -1  # the step at which the last unseen training sample was drawn
        self._last: tuple[np.ndarray, np.ndarray] | None = None

    def _scores(self, w: np.ndarray) -> np.ndarray:
        if self._last is None or not np.array_equal(self._last[0], w):
            self._last = (w.copy(), scores(self.instance.packing, w, self.instance.sparse))
        return self._last[1]

    def __call__(self, w: np.ndarray, i: int) -> np.ndarray:
        inst, d, b = self.instance, self.instance.dim, self.instance.block
        i = int(i)
        if not 0 <= i < inst.n:
            raise IndexError(f"sample index {i}; expected 0 … {inst.n - 1}")
        walking = len(self.seen) == inst.n  # every training sample was drawn before this step
        self.seen.add(i)
        self.order.append(i)
        if self.cover_step < 0 and len(self.seen) == inst.n:
            self.cover_step = len(self.order)
        grad = np.zeros(d)
        members = np.flatnonzero(inst.masks[i])
        s = self._scores(w)[members]
        if s.size and s.max() > self.c:  # the max term is active: the gradient of its largest linear piece
            grad += inst.packing[members[int(np.argmax(s))]] / math.sqrt(d)
        value, active = guide(w, b)
        if value > 0:
            grad[active] -= self.alpha / math.sqrt(b)
        elif walking:  # w ≥ 0, h(w) = 0: −α e_I is a subgradient for any I with w(I) = 0
            for blk in self.blocks:
                if not w[blk].any():
                    grad[blk] -= self.alpha / math.sqrt(b)
                    break
        return grad


def feldman_losses(instance: FeldmanBlocks, alpha: float | None, c: float | None,
                   w: np.ndarray) -> tuple[float, float, float]:
    """(population excess, empirical excess, F(w) − F_S(w)) at w, all exact; min F = min F_S = c/√d (at w = 0), so
    the gap is the difference of the two excesses. α and c: the instance's own when None."""
    alpha = instance.alpha if alpha is None else alpha
    c = instance.floor if c is None else c
    d = instance.dim
    s = scores(instance.packing, w, instance.sparse)
    h = alpha * guide(w, instance.block)[0]
    population = (expected_max(s, c) - c) / math.sqrt(d) + h
    masked = np.where(instance.masks, s[None, :], -np.inf).max(axis=1)
    empirical = float(np.mean(np.maximum(masked, c) - c)) / math.sqrt(d) + h
    return population, empirical, population - empirical


# --------------------------------------------------------------------------- the smooth control


@dataclass(frozen=True)
class LeastSquares:
    x: np.ndarray  # (n, d), rows on the unit sphere
    y: np.ndarray  # (n,)
    w_star: np.ndarray  # (d,), norm 1
    noise: float

    @property
    def n(self) -> int:
        return self.x.shape[0]

    @property
    def dim(self) -> int:
        return self.x.shape[1]


def least_squares_sphere(context: Context, *, n: int = 10, dim: int = 20, noise: float = 0.1) -> LeastSquares:
    """n samples x ~ Unif(S^{dim−1}), y = ⟨w*, x⟩ + noise · ε with ε = ±1 equally likely and w* ~ Unif(S^{dim−1}):
    ½(⟨w,x⟩ − y)² is 1-smooth and (2 + noise)-Lipschitz on the unit ball."""
    if not (isinstance(n, (int, np.integer)) and int(n) >= 2):
        raise DataError(f"least-squares-sphere: n = {n!r}; expected an integer of at least 2")
    if not (isinstance(dim, (int, np.integer)) and int(dim) >= 1):
        raise DataError(f"least-squares-sphere: dim = {dim!r}; expected a positive integer")
    if not (isinstance(noise, (int, float)) and 0 <= float(noise) <= 1):
        raise DataError(f"least-squares-sphere: noise = {noise!r}; expected a number from 0 to 1")
    rng = context.rng("data")
    w_star = rng.standard_normal(int(dim))
    w_star /= np.linalg.norm(w_star)
    x = rng.standard_normal((int(n), int(dim)))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    y = x @ w_star + float(noise) * rng.choice([-1.0, 1.0], size=int(n))
    return LeastSquares(x, y, w_star, float(noise))


def ball_least_squares_minimum(x: np.ndarray, y: np.ndarray) -> float:
    """min over ‖w‖ ≤ 1 of ½ mean (⟨w, x_i⟩ − y_i)²: the minimum-norm solution when it lies in the ball, else
    w(λ) = (A + λI)^{-1} b on the sphere, λ > 0 found by bisection (‖w(λ)‖ decreases in λ)."""
    n = x.shape[0]
    a, b = x.T @ x / n, x.T @ y / n
    evals, evecs = np.linalg.eigh(a)
    coef = evecs.T @ b
    keep = evals > 1e-12 * max(1.0, evals.max())
    w = evecs[:, keep] @ (coef[keep] / evals[keep])
    if np.linalg.norm(w) > 1:
        lo, hi = 0.0, np.linalg.norm(b)  # at λ = ‖b‖, ‖w(λ)‖ ≤ ‖b‖/λ = 1
        for _ in range(200):
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if np.linalg.norm(coef / (evals + mid)) > 1 else (lo, mid)
        w = evecs @ (coef / (evals + hi))
    return float(0.5 * np.mean((x @ w - y) ** 2))


def least_squares_losses(instance: LeastSquares, w: np.ndarray, train_min: float) -> tuple[float, float, float]:
    """(population excess ‖w − w*‖²/(2d), empirical excess F_S(w) − min_ball F_S, F(w) − F_S(w)) with
    F(w) = ‖w − w*‖²/(2d) + σ²/2 (E xxᵀ = I/d for x uniform on the sphere; the noise is independent of x)."""
    population = float(np.sum((w - instance.w_star) ** 2) / (2 * instance.dim))
    train = float(0.5 * np.mean((instance.x @ w - instance.y) ** 2))
    return population, train - train_min, population + 0.5 * instance.noise ** 2 - train


# --------------------------------------------------------------------------- the task


def project_ball(w: np.ndarray) -> np.ndarray:
    norm = float(np.linalg.norm(w))
    return w / norm if norm > 1 else w


def rate(eta: float, t: int, n: int) -> float:
    """The min-max rate Θ(1/(ηt) + η√t) of the paper's Thms 3.1/3.3 with its constants dropped, capped at 1; in
    the first pass (t ≤ n) the one-pass rate 1/(ηt) + η (online-to-batch)."""
    if t <= 0:
        return 1.0
    return min(1.0, 1 / (eta * t) + (eta if t <= n else eta * math.sqrt(t)))


class MultipassTask(Task):
    name = "sco.multipass"
    metrics = ("excess", "excess_suffix", "excess_average", "train_excess", "gen_gap", "steps", "prediction_error")
    protocol = SGDMethod

    def tiny(self, workdir: Path) -> dict[str, dict[str, Any]]:
        return {"feldman-blocks": {"n": 6, "dim": 320, "packing": 2},
                "least-squares-sphere": {"n": 6, "dim": 8}}

    def evaluate(self, method: SGDMethod, data: Any, context: Context) -> Evaluation:
        who = type(method).__name__
        n = data.n
        eta, steps = method.plan(n)
        eta, steps = float(eta), int(steps)
        if not (math.isfinite(eta) and eta > 0 and steps >= 0):
            raise ValueError(f"{who}.plan({n}) returned η = {eta}, T = {steps}; expected η > 0 and T ≥ 0")
        if isinstance(data, FeldmanBlocks):  # α and c are the instance's: every method runs on the same function
            alpha, c = data.alpha, data.floor
            oracle = FeldmanOracle(data)
            losses = lambda w: feldman_losses(data, None, None, w)  # noqa: E731
            subgradient: Callable = oracle
        elif isinstance(data, LeastSquares):
            train_min = ball_least_squares_minimum(data.x, data.y)
            losses = lambda w: least_squares_losses(data, w, train_min)  # noqa: E731
            asked: list[int] = []

            def subgradient(w: np.ndarray, i: int) -> np.ndarray:
                asked.append(int(i))
                return (data.x[int(i)] @ w - data.y[int(i)]) * data.x[int(i)]

            oracle = None
        else:
            raise TypeError(f"sco.multipass: data of type {type(data).__name__}; expected FeldmanBlocks or LeastSquares")
        problem = Problem(n, data.dim, eta, steps, subgradient, project_ball)
        path = np.asarray(method.run(problem, context.rng("method")), dtype=float)
        if path.shape != (steps + 1, data.dim) or not np.all(np.isfinite(path)):
            raise ValueError(f"{who}.run returned iterates of shape {path.shape}; expected ({steps + 1}, {data.dim}), finite")
        if np.any(path[0]) or np.any(np.linalg.norm(path, axis=1) > 1 + 1e-9):
            raise ValueError(f"{who}.run: iterates must start at 0 and stay in the unit ball")
        population, empirical, gap = losses(path[-1])
        tail = path[1:] if steps else path  # T = 0 (the trivial answer w0 = 0): every average is w0
        metrics = {
            "excess": population,
            "excess_suffix": losses(tail[max(0, steps - n):].mean(axis=0))[0],
            "excess_average": losses(tail.mean(axis=0))[0],
            "train_excess": empirical,
            "gen_gap": gap,
            "steps": float(steps),
        }
        epochs = list(range(0, math.ceil(steps / n) + 1))
        marks = [min(k * n, steps) for k in epochs]
        per_epoch = [losses(path[t]) for t in marks]
        theory = None
        if oracle is not None:
            walked = [self._walked(oracle, t) for t in marks]
            theory = [predicted_excess(eta, alpha, c, data.dim, data.block, w) for w in walked]
            metrics["prediction_error"] = abs(population - theory[-1])
        else:  # the smooth control has no closed form: replay projected SGD on the indices the method asked for
            w = np.zeros(data.dim)
            for i in asked:
                w = project_ball(w - eta * (data.x[i] @ w - data.y[i]) * data.x[i])
            metrics["prediction_error"] = abs(population - losses(w)[0])
        curves = {
            "excess": Curve(epochs, [p for p, _, _ in per_epoch], "epoch", "F(w) − F*; dashed: the instance's prediction", theory),
            "train_excess": Curve(epochs, [e for _, e, _ in per_epoch], "epoch", "empirical excess F_S(w) − min F_S",
                                  [0.0] * len(epochs) if oracle is not None else None),
            "gen_gap": Curve(epochs, [g for _, _, g in per_epoch], "epoch", "F(w) − F_S(w)"),
            "excess_vs_rate": Curve(epochs, [p for p, _, _ in per_epoch], "epoch",
                                    "F(w) − F*; dashed: min(1, 1/(ηt) + η√t)",
                                    [rate(eta, t, n) for t in marks]),
        }
        return Evaluation(metrics, curves)

    @staticmethod
    def _walked(oracle: FeldmanOracle, t: int) -> int:
        """Coordinates of u0's support the walk has set by step t: one block per step from the step after every
        training sample was drawn (the analysis of the construction, from the order the oracle saw)."""
        if oracle.cover_step < 0 or not oracle.blocks:
            return 0
        done = max(0, min(t - oracle.cover_step, len(oracle.blocks)))
        return int(sum(blk.size for blk in oracle.blocks[:done]))


TASK = MultipassTask()
