"""Task ``online.scheduling``: n unit jobs whose priority is revealed after a fraction θ of their processing
(Cho et al. 2022; Shen, Vitercik and Wikum, ICML 2025, §4).

Job i has priority y_i ∈ {1 (high), 0 (low)} and weight ω_{y_i}, ω1 > ω0 > 0; the objective is Σ ω_{y_i} C_i on one
machine. The offline optimum runs the high jobs first. A method fits a predictor on labelled training and
validation jobs, then returns, for the features of n test jobs, a *plan* in the shape of Algorithm 3: an order
and how many of its first jobs are probed. The task runs the plan against the priorities it alone holds:

* the first n1 jobs in order each get θ of processing; a job revealed high runs to completion at once, a job
  revealed low is set aside; the set-aside jobs are then completed in order;
* the remaining jobs run to completion in order (non-preemptively).

Then ALG − OPT = θω1·L + θω0·M + (ω1 − ω0)·N, where L counts the pairs among the first n1 with the low job first
and the high one after, M the pairs of low jobs among the first n1, and N the other inversions (a low job
completed before a high one). The task checks this identity on every draw, and scores E[ALG − OPT]/n (the paper's
metric) and L, M, N per pair against Thm 4.3 in its appendix form (App. B; the main text swaps L's and N's
leading terms), with ε0 = P(p > β | y = 0), ε1 = P(p ≤ β | y = 1), κ1 = P(p > β)²·Var(p | p > β) and κ2 the
same below β, all exact on the test pool the n jobs are drawn from (with replacement, so the jobs are i.i.d.):

  E L ≤ C(n,2)[ρ(1 − ρ)ε0(1 − ε1) − κ1],   E M = C(n,2)(1 − ρ)²ε0²,   E N ≤ C(n,2)[ρ(1 − ρ)(1 + ε0)ε1 − κ2].

The row also reports κ = κ1 + κ2 of the method's p on the pool: the spread of the predictions within each side of
β, which the theorem says a finer calibrated predictor raises and which lowers both bounds.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from harness.tasks.base import Context, DataError, Task
from harness.tasks.evaluation import Curve, Evaluation
from harness.tasks.online.tables import SEPSIS_COLUMNS, locate, read_columns, write_sepsis_like


@dataclass(frozen=True)
class Labelled:
    x: np.ndarray  # (n, d)
    y: np.ndarray  # (n,) 1 high priority, 0 low


@dataclass(frozen=True)
class SchedulingProblem:
    """What a method sees before the test jobs."""

    train: Labelled
    val: Labelled
    theta: float
    w0: float
    w1: float


@dataclass(frozen=True)
class SchedulingInstance:
    problem: SchedulingProblem
    pool: Labelled  # the test pool the jobs are drawn from
    jobs: int
    draws: int


class PriorityScheduler(Protocol):
    """What a method of this task implements."""

    def fit(self, problem: SchedulingProblem, rng: np.random.Generator) -> None:
        """Fit (and calibrate) the predictor of y on ``problem.train`` and ``problem.val``."""
        ...

    def probabilities(self, x: np.ndarray) -> np.ndarray:
        """(n,) the predicted P(y = 1 | x) the plan is built from."""
        ...

    def plan(self, x: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, int]:
        """An order of the n jobs (a permutation) and how many of its first jobs are probed."""
        ...


# --------------------------------------------------------------------------- the schedule and its cost


def beta_threshold(theta: float, w0: float, w1: float) -> float:
    """Algorithm 3's β = θ/(1 − θ) · ω1/(ω1 − ω0): a job is probed first (run preemptively) when p_i > β."""
    return float(theta) / (1 - float(theta)) * float(w1) / (float(w1) - float(w0))


def schedule_cost(order: np.ndarray, probed: int, y: np.ndarray, theta: float, w0: float, w1: float) -> dict:
    """Run a plan: completion times, ALG, OPT and the counts L, M, N of the decomposition."""
    y = np.asarray(y).astype(int)
    order = np.asarray(order)
    first, rest = order[:probed], order[probed:]
    completion = np.empty(y.size)
    t = 0.0
    set_aside = []
    for i in first:
        t += theta
        if y[i]:
            t += 1 - theta
            completion[i] = t
        else:
            set_aside.append(i)
    for i in set_aside:
        t += 1 - theta
        completion[i] = t
    for i in rest:
        t += 1.0
        completion[i] = t
    weights = np.where(y == 1, w1, w0)
    high = int(y.sum())
    n = y.size
    opt = w1 * high * (high + 1) / 2 + w0 * (n * (n + 1) / 2 - high * (high + 1) / 2)
    yf = y[first]
    lows_before = np.cumsum(1 - yf) - (1 - yf)  # low jobs earlier in the probed order
    l_count = int(np.sum(lows_before[yf == 1]))
    low_first = int(np.sum(1 - yf))
    m_count = low_first * (low_first - 1) // 2
    yr = y[rest]
    lows_before_rest = np.cumsum(1 - yr) - (1 - yr)
    n_count = int(np.sum(lows_before_rest[yr == 1])) + low_first * int(yr.sum())
    return {"alg": float(weights @ completion), "opt": float(opt), "L": l_count, "M": m_count, "N": n_count}


def theorem_4_3(p: np.ndarray, y: np.ndarray, theta: float, w0: float, w1: float) -> dict[str, float]:
    """Thm 4.3 (App. B form) per pair, on the population (p, y): bounds on E L and E N, and E M."""
    p, y = np.asarray(p, dtype=float), np.asarray(y).astype(int)
    beta = beta_threshold(theta, w0, w1)
    above = p > beta
    rho = float(y.mean())
    eps0 = float(np.mean(above[y == 0])) if np.any(y == 0) else 0.0
    eps1 = float(np.mean(~above[y == 1])) if np.any(y == 1) else 0.0
    q1 = float(above.mean())
    kappa1 = q1**2 * float(p[above].var()) if above.any() else 0.0
    kappa2 = (1 - q1) ** 2 * float(p[~above].var()) if (~above).any() else 0.0
    return {"L": rho * (1 - rho) * eps0 * (1 - eps1) - kappa1, "M": (1 - rho) ** 2 * eps0**2,
            "N": rho * (1 - rho) * (1 + eps0) * eps1 - kappa2, "kappa": kappa1 + kappa2}


# --------------------------------------------------------------------------- datasets


def _check(theta, w0, w1, jobs, draws) -> None:
    if not 0 < float(theta) < 1:
        raise DataError(f"theta = {theta}: expected 0 < theta < 1 (the fraction of a job processed before its priority shows)")
    if not 0 < float(w0) < float(w1):
        raise DataError(f"w0 = {w0}, w1 = {w1}: expected 0 < w0 < w1 (high-priority jobs weigh more)")
    for name, value in (("jobs", jobs), ("draws", draws)):
        if not (isinstance(value, (int, np.integer)) and int(value) >= 2):
            raise DataError(f"{name} = {value!r}: expected an integer of at least 2")


def sched_synthetic(context: Context, *, n_train: int = 4000, n_val: int = 1000, n_pool: int = 5000, dim: int = 5,
                    gamma: float = 2.0, base: float = 0.3, theta: float = 0.1, w0: float = 1.0, w1: float = 2.0,
                    jobs: int = 100, draws: int = 500) -> SchedulingInstance:
    """The note's substitute setting: X ~ N(0, I_dim), P(y = 1 | X) = sigmoid(logit(base) + γ·wᵀX), ‖w‖ = 1 drawn
    by the seed; train, validation and a test pool of jobs, ``draws`` draws of ``jobs`` jobs from the pool."""
    _check(theta, w0, w1, jobs, draws)
    for name, value in (("n_train", n_train), ("n_val", n_val), ("n_pool", n_pool)):
        if not (isinstance(value, (int, np.integer)) and int(value) >= 10):
            raise DataError(f"{name} = {value!r}: expected an integer of at least 10")
    if not (0 < float(base) < 1 and float(gamma) >= 0):
        raise DataError(f"base = {base}, gamma = {gamma}: expected 0 < base < 1 and gamma ≥ 0")
    w = context.rng("direction").standard_normal(int(dim))
    w /= np.linalg.norm(w)
    rng = context.rng("data")
    total = int(n_train) + int(n_val) + int(n_pool)
    x = rng.standard_normal((total, w.size))
    p = 1 / (1 + np.exp(-(math.log(float(base) / (1 - float(base))) + float(gamma) * (x @ w))))
    y = (rng.random(total) < p).astype(int)
    a, b = int(n_train), int(n_train) + int(n_val)
    problem = SchedulingProblem(Labelled(x[:a], y[:a]), Labelled(x[a:b], y[a:b]), float(theta), float(w0), float(w1))
    return SchedulingInstance(problem, Labelled(x[b:], y[b:]), int(jobs), int(draws))


def sched_csv(context: Context, *, file: str = "sepsis.csv", root: str | None = None, balance: bool = True,
              theta: float = 0.1, w0: float = 0.1, w1: float = 0.5, jobs: int = 100, draws: int = 20,
              train_fraction: float = 0.6, val_fraction: float = 0.2) -> SchedulingInstance:
    """The paper's sepsis setting: ``DATA_DIR/sepsis/<file>`` (or ``root/<file>``), the UCI "Sepsis survival
    minimal clinical records" primary cohort with its columns age_years, sex_0male_1female, episode_number and
    hospital_outcome_1alive_0dead; death is the high priority. With ``balance`` the alive class is undersampled
    to the deaths' count, as the authors' scheduling notebook does (so ρ ≈ ½). The seed draws the subsample and
    the train/validation/test split; the test part is the pool the ``draws`` draws of ``jobs`` jobs come from."""
    _check(theta, w0, w1, jobs, draws)
    if not (0 < float(train_fraction) and 0 < float(val_fraction) and float(train_fraction) + float(val_fraction) < 1):
        raise DataError(f"sched-csv: train_fraction = {train_fraction}, val_fraction = {val_fraction}; expected "
                        "positive fractions summing to less than 1")
    path = locate(context, "sched-csv", "sepsis", file, root)
    table, _ = read_columns(path, SEPSIS_COLUMNS, loader="sched-csv")
    outcome = table["hospital_outcome_1alive_0dead"]
    if not np.all(np.isin(outcome, (0.0, 1.0))):
        raise DataError(f"sched-csv: {path}: hospital_outcome_1alive_0dead holds values other than 0 and 1")
    y = (outcome == 0).astype(int)
    x = np.column_stack([table[c] for c in SEPSIS_COLUMNS[:3]])
    rng = dataclasses.replace(context, dataset=f"sched-csv:{path.name}:{balance}").rng("data")
    if balance:
        dead, alive = np.flatnonzero(y == 1), np.flatnonzero(y == 0)
        keep = np.concatenate([dead, rng.choice(alive, min(alive.size, dead.size), replace=False)])
    else:
        keep = np.arange(y.size)
    keep = rng.permutation(keep)
    if keep.size < 30 or np.unique(y[keep]).size < 2:
        raise DataError(f"sched-csv: {path} gives {keep.size} usable records with outcomes {sorted(set(y[keep].tolist()))}; "
                        "expected at least 30 with both outcomes")
    a = int(round(float(train_fraction) * keep.size))
    b = a + int(round(float(val_fraction) * keep.size))
    problem = SchedulingProblem(Labelled(x[keep[:a]], y[keep[:a]]), Labelled(x[keep[a:b]], y[keep[a:b]]),
                                float(theta), float(w0), float(w1))
    return SchedulingInstance(problem, Labelled(x[keep[b:]], y[keep[b:]]), int(jobs), int(draws))


# --------------------------------------------------------------------------- the task


class SchedulingTask(Task):
    name = "online.scheduling"
    version = "2"
    metrics = ("excess_cost_per_job", "inversions_l", "pairs_m", "inversions_n", "kappa", "theorem_excess_z",
               "decomposition_error")
    protocol = PriorityScheduler
    framework = None

    def tiny(self, workdir: Path) -> dict[str, dict[str, Any]]:
        root = Path(workdir) / "sepsis"
        write_sepsis_like(root / "tiny.csv", 600)
        return {"sched-synthetic": {"n_train": 200, "n_val": 100, "n_pool": 200, "jobs": 20, "draws": 5},
                "sched-csv": {"file": "tiny.csv", "root": str(root), "jobs": 20, "draws": 5}}

    def evaluate(self, method: PriorityScheduler, data: SchedulingInstance, context: Context) -> Evaluation:
        who = type(method).__name__
        problem, pool = data.problem, data.pool
        theta, w0, w1 = problem.theta, problem.w0, problem.w1
        method.fit(problem, context.rng("method", "fit"))
        p_pool = np.asarray(method.probabilities(pool.x.copy()), dtype=float)
        if p_pool.shape != pool.y.shape or not np.all((p_pool >= 0) & (p_pool <= 1)):
            raise TypeError(f"{who}.probabilities returned {p_pool.shape} values outside [0, 1]; expected {pool.y.shape}")
        theorem = theorem_4_3(p_pool, pool.y, theta, w0, w1)
        draw_rng, plan_rng = context.rng("draws"), context.rng("method", "plan")
        n = data.jobs
        pairs = n * (n - 1) / 2
        excess, counts, worst_gap = [], {"L": [], "M": [], "N": []}, 0.0
        for _ in range(data.draws):
            pick = draw_rng.integers(0, pool.y.size, n)
            order, probed = method.plan(pool.x[pick].copy(), plan_rng)
            order = np.asarray(order)
            if sorted(order.tolist()) != list(range(n)) or not 0 <= int(probed) <= n:
                raise TypeError(f"{who}.plan returned an order that is not a permutation of {n} jobs or {probed} probed")
            run = schedule_cost(order, int(probed), pool.y[pick], theta, w0, w1)
            gap = run["alg"] - run["opt"] - (theta * w1 * run["L"] + theta * w0 * run["M"] + (w1 - w0) * run["N"])
            worst_gap = max(worst_gap, abs(gap) / max(run["opt"], 1.0))
            excess.append((run["alg"] - run["opt"]) / n)
            for key in counts:
                counts[key].append(run[key] / pairs)
        z = []
        for key, values in counts.items():
            values = np.asarray(values)
            se = float(values.std(ddof=1) / math.sqrt(values.size)) if values.size > 1 else 0.0
            over = float(values.mean()) - theorem[key]
            z.append(over / se if se > 0 else (0.0 if abs(over) < 1e-12 else math.copysign(1e6, over)))
        metrics = {"excess_cost_per_job": float(np.mean(excess)),
                   "inversions_l": float(np.mean(counts["L"])), "pairs_m": float(np.mean(counts["M"])),
                   "inversions_n": float(np.mean(counts["N"])), "kappa": theorem["kappa"],
                   "theorem_excess_z": float(max(z)),
                   "decomposition_error": worst_gap}
        curve = Curve(x=[1, 2, 3], y=[metrics["inversions_l"], metrics["pairs_m"], metrics["inversions_n"]],
                      x_label="1 = L, 2 = M, 3 = N", y_label="count per pair (theory: Thm 4.3, App. B form)",
                      theory=[theorem["L"], theorem["M"], theorem["N"]])
        return Evaluation(metrics=metrics, curves={"lmn_per_pair": curve})


TASK = SchedulingTask()
