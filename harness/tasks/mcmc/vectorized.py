"""Task ``mcmc.vectorized``: m chains of one sampler on one target, timed to n samples per chain, draws checked.

Every method is handed the same :class:`Chains`: the batched log-density (torch, float64, (m, d) → (m,)), the
initial states x0 (m, d), the seed of the chains' counter-based random streams, n, and the Gaussian factor that
elliptical slice sampling uses as its prior. Initial states are draws from the target (exact for the normal and
the funnel; importance-resampled for the two posteriors), so chains start in stationarity and need no burn-in:
each chain's moment estimates are then unbiased and independent across chains, and a t-test over the m chains
checks them against the target's moments with no assumption on how well a chain mixes.

The task scores the run itself: wall and CPU time (after a one-sample warm-up, the median of ``repeats`` runs, with
their spread: :func:`harness.tasks.timing.time_call`), the iteration counts N_ij the sampler reports (E N,
E max_j N, the bound R(m) for the sampler as synchronised and its value at the run's n: :func:`bounds`), the batched log-density calls per sample, the multi-chain
effective sample size per second, split R-hat, and the moment check, which fails the cell when any |t| is beyond
the Bonferroni threshold at family-wise level 1e-3 (fixed from theory, not from runs).
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Protocol

import numpy as np

from harness.tasks.base import Context, DataError, Task, WorkerCache
from harness.tasks.timing import time_call

FAMILY_LEVEL = 1e-3  # the moment check's family-wise false-failure rate per cell
_REFERENCES = WorkerCache(16)


@dataclass(frozen=True)
class Chains:
    """What a method sees."""

    log_density: Callable  # torch (m, d) float64 → (m,)
    x0: Any  # torch (m, d) float64: initial states, one per chain
    seed: int  # keys the chains' random streams
    n: int  # samples per chain
    prior_scale: Any  # (d,) scales of the Gaussian factor N(0, diag(scale²)) that elliptical slice uses


@dataclass(frozen=True)
class Target:
    """A problem and what the task checks it against."""

    chains: Chains
    mean: np.ndarray  # (d,) E x
    second: np.ndarray  # (d,) E x²
    mean_se: np.ndarray  # (d,) Monte-Carlo error of the reference (0 where exact)
    second_se: np.ndarray
    checked: Callable | None = None  # numpy draws (…, d) → the quantities whose moments are checked (None: x)
    burn_in: float = 0.0  # the share of each chain's first samples the moment check leaves out
    repeats: int = 2  # timed runs per cell (after the warm-up): the median's, and their spread's, repeats


class SampleRun(Protocol):
    draws: Any  # torch (m, n, d)
    iterations: Any  # torch (m, n) int: loop iterations chain j used for sample i
    density_calls: int  # batched log-density calls


class VectorizedSampler(Protocol):
    """What a method of this task implements."""

    def sample(self, problem: Chains) -> SampleRun:
        """n samples per chain from ``problem.x0``, using only ``problem.log_density`` and the streams of ``problem.seed``."""
        ...


# --------------------------------------------------------------------------- targets


def _size(chains, samples) -> tuple[int, int]:
    for name, value in (("chains", chains), ("samples", samples)):
        if not (isinstance(value, (int, np.integer)) and int(value) >= 2):
            raise DataError(f"{name} = {value!r}: expected an integer of at least 2")
    return int(chains), int(samples)


def _seed(context: Context) -> int:
    return int(context.rng("chains").integers(2**31 - 1))


def _check_start(shift, burn_in, repeats) -> tuple[float, float, int]:
    shift, burn_in = float(shift), float(burn_in)
    if not (shift >= 0 and 0 <= burn_in < 1):
        raise DataError(f"shift = {shift} (≥ 0) and burn_in = {burn_in} (0 ≤ burn_in < 1)")
    if shift > 0 and burn_in == 0:
        raise DataError(f"shift = {shift}: chains that start away from the target need a burn_in to leave out")
    if not (isinstance(repeats, (int, np.integer)) and int(repeats) >= 1):
        raise DataError(f"repeats = {repeats!r}: expected an integer of at least 1")
    return shift, burn_in, int(repeats)


def _exact(context, chains, samples, x0, log_density, prior_scale, mean, second, checked=None, burn_in=0.0,
           repeats=2) -> Target:
    import torch

    zero = np.zeros_like(mean)
    problem = Chains(log_density, torch.as_tensor(x0, dtype=torch.float64), _seed(context), samples,
                     torch.as_tensor(prior_scale, dtype=torch.float64))
    return Target(problem, mean, second, zero, zero, checked, burn_in, repeats)


def _normal_log_density(x):
    return -0.5 * x.square().sum(1)


def standard_normal(context: Context, *, chains: int = 16, samples: int = 500, dim: int = 1,
                    prior_scale: float = 2.0, shift: float = 0.0, burn_in: float = 0.0, repeats: int = 2) -> Target:
    """N(0, I_dim). Elliptical slice uses the factor N(0, prior_scale² I) (2 by default: with 1 it would accept
    every first proposal). ``shift`` > 0 starts the chains at exact draws moved by ``shift`` standard deviations
    in every coordinate, away from the target, and the moment check then leaves out the first ``burn_in`` share
    of each chain's samples: a sampler that does not move fails it (see :func:`moment_check`)."""
    m, n = _size(chains, samples)
    shift, burn_in, repeats = _check_start(shift, burn_in, repeats)
    d = int(dim)
    x0 = context.rng("init").standard_normal((m, d)) + shift
    return _exact(context, m, n, x0, _normal_log_density, np.full(d, float(prior_scale)), np.zeros(d), np.ones(d),
                  burn_in=burn_in, repeats=repeats)


def funnel(context: Context, *, chains: int = 16, samples: int = 500, dim: int = 3, scale: float = 1.5,
           shift: float = 0.0, burn_in: float = 0.0, repeats: int = 2) -> Target:
    """Neal's funnel in ``dim`` dimensions: v ~ N(0, scale²), x_i | v ~ N(0, e^v), i = 1 … dim − 1.
    Elliptical slice uses N(0, diag(scale², 1, …)) as its factor. The moments checked are those of v and of
    x_i e^{−v/2} ~ N(0, 1), independent of v (x_i itself is too heavy-tailed for a t-test over chains).
    ``shift`` moves the start by that many standard deviations in each checked quantity (v and x e^{−v/2})."""
    m, n = _size(chains, samples)
    shift, burn_in, repeats = _check_start(shift, burn_in, repeats)
    d, s = int(dim), float(scale)
    if d < 2:
        raise DataError(f"funnel: dim = {dim}; expected at least 2 (v and one x)")
    rng = context.rng("init")
    v = s * (rng.standard_normal((m, 1)) + shift)
    x0 = np.concatenate([v, np.exp(v / 2) * (rng.standard_normal((m, d - 1)) + shift)], axis=1)

    def log_density(x):
        v, rest = x[:, 0], x[:, 1:]
        return -0.5 * (v / s) ** 2 - 0.5 * (d - 1) * v - 0.5 * rest.square().sum(1) * (-v).exp()

    second = np.concatenate([[s * s], np.ones(d - 1)])
    return _exact(context, m, n, x0, log_density, np.concatenate([[s], np.ones(d - 1)]), np.zeros(d), second,
                  checked=funnel_whitened, burn_in=burn_in, repeats=repeats)


def funnel_whitened(draws: np.ndarray) -> np.ndarray:
    """(v, x e^{−v/2}) of funnel draws: N(0, scale²) × N(0, I) under the target."""
    v = draws[..., :1]
    return np.concatenate([v, draws[..., 1:] * np.exp(-v / 2)], axis=-1)


def _posterior(context: Context, m: int, n: int, instance: str, log_density, dim: int, draws: int,
               shift: float = 0.0, burn_in: float = 0.0, repeats: int = 2) -> Target:
    """A posterior's reference moments and initial states by importance sampling (cached per worker); ``shift``
    moves the initial states by that many of the reference's standard deviations in every coordinate."""
    import torch

    ref = _REFERENCES.get_or_build((instance, context.seed, context.split, draws),
                                   lambda: importance_reference(log_density, dim, context.rng("reference"), draws))
    rng = context.rng("init")
    x0 = ref["points"][rng.choice(ref["points"].shape[0], size=m, p=ref["weights"])]
    x0 = x0 + shift * np.sqrt(np.maximum(ref["second"] - ref["mean"] ** 2, 0.0))
    problem = Chains(log_density, torch.as_tensor(x0, dtype=torch.float64), _seed(context), n,
                     torch.ones(dim, dtype=torch.float64))
    return Target(problem, ref["mean"], ref["second"], ref["mean_se"], ref["second_se"], None, burn_in, repeats)


def importance_reference(log_density, dim: int, rng: np.random.Generator, draws: int = 20000,
                         min_ess: float = 2000.0) -> dict:
    """Self-normalised importance sampling from a multivariate t (5 degrees of freedom) at the mode, scale 1.2 ×
    the Laplace covariance: the posterior's mean and E x² with their delta-method errors, and the weighted
    points (to resample initial states from). The task's own reference, not a sampler a method uses."""
    import torch

    x = torch.zeros(1, dim, dtype=torch.float64, requires_grad=True)
    optimizer = torch.optim.LBFGS([x], max_iter=200, line_search_fn="strong_wolfe", tolerance_grad=1e-10)

    def closure():
        optimizer.zero_grad()
        loss = -log_density(x).sum()
        loss.backward()
        return loss

    optimizer.step(closure)
    mode = x.detach()[0]
    hessian = torch.autograd.functional.hessian(lambda z: -log_density(z[None])[0], mode)
    chol = torch.linalg.cholesky(torch.linalg.inv(hessian) * 1.2**2)
    nu = 5.0
    z = torch.as_tensor(rng.standard_normal((draws, dim)))
    g = torch.as_tensor(rng.chisquare(nu, size=draws)) / nu
    points = mode + (z @ chol.T) / g.sqrt()[:, None]
    log_q = -0.5 * (nu + dim) * torch.log1p(z.square().sum(1) / g / nu)
    with torch.no_grad():
        log_p = torch.cat([log_density(chunk) for chunk in points.split(2048)])
    log_w = torch.nan_to_num(log_p - log_q, nan=-math.inf)
    w = torch.softmax(log_w, 0).numpy()
    ess = 1.0 / np.sum(w**2)
    if ess < min_ess:
        raise DataError(f"importance reference: effective sample size {ess:.0f} of {draws} draws, below {min_ess:.0f}; "
                        f"the posterior is too far from its Laplace approximation for this reference")
    p = points.numpy()
    mean, second = w @ p, w @ p**2
    return {"mean": mean, "second": second, "mean_se": np.sqrt(w**2 @ (p - mean) ** 2),
            "second_se": np.sqrt(w**2 @ (p**2 - second) ** 2), "points": p, "weights": w / w.sum()}


def logistic_breast_cancer(context: Context, *, chains: int = 16, samples: int = 200, rows: int = 300,
                           features: tuple = (0, 1, 4, 8), draws: int = 20000, shift: float = 0.0,
                           burn_in: float = 0.0, repeats: int = 2) -> Target:
    """Logistic regression on ``rows`` seed-drawn patients of breast-cancer, the chosen features standardised plus
    an intercept, prior N(0, I): log p(β) = Σ log σ(±x_iᵀβ) − ½‖β‖²."""
    import torch
    from sklearn.datasets import load_breast_cancer

    m, n = _size(chains, samples)
    shift, burn_in, repeats = _check_start(shift, burn_in, repeats)
    x, y = load_breast_cancer(return_X_y=True)
    features = [int(f) for f in features]
    if not features or min(features) < 0 or max(features) >= x.shape[1]:
        raise DataError(f"logistic-breast-cancer: features = {features}; expected column indices in 0 … {x.shape[1] - 1}")
    if not 10 <= int(rows) <= x.shape[0]:
        raise DataError(f"logistic-breast-cancer: rows = {rows}; expected 10 … {x.shape[0]}")
    instance = f"breast-cancer:rows{rows}:features{features}"
    rng = dataclasses.replace(context, dataset=instance).rng("data")
    keep = rng.choice(x.shape[0], size=int(rows), replace=False)
    a = x[keep][:, features]
    a = (a - a.mean(0)) / a.std(0)
    design = torch.as_tensor(np.column_stack([np.ones(len(keep)), a]))
    signs = torch.as_tensor(2.0 * y[keep] - 1.0)

    def log_density(beta):
        logits = (beta @ design.T) * signs
        return torch.nn.functional.logsigmoid(logits).sum(1) - 0.5 * beta.square().sum(1)

    return _posterior(context, m, n, instance, log_density, design.shape[1], int(draws), shift, burn_in, repeats)


def gp_log_density(sq_dist, y):
    """The batched GP-hyperparameter log posterior: θ = (log σ²_noise, log ℓ², log σ²_f), k(x, x') =
    σ²_f exp(−‖x − x'‖²/2ℓ²), log N(y | 0, K + σ²_noise I) − ½‖θ‖², one Cholesky per chain (−inf where it fails)."""
    import torch

    n = y.shape[0]
    eye = torch.eye(n, dtype=torch.float64)

    def log_density(theta):
        noise, length2, signal = theta.exp().unbind(1)
        k = signal[:, None, None] * torch.exp(-0.5 * sq_dist / length2[:, None, None]) + noise[:, None, None] * eye
        chol, info = torch.linalg.cholesky_ex(k)
        ok = info == 0
        chol = torch.where(ok[:, None, None], chol, eye)
        alpha = torch.linalg.solve_triangular(chol, y.expand(theta.shape[0], n)[..., None], upper=False)[..., 0]
        lml = -0.5 * alpha.square().sum(1) - torch.log(torch.diagonal(chol, dim1=1, dim2=2)).sum(1) \
            - 0.5 * n * math.log(2 * math.pi)
        value = lml - 0.5 * theta.square().sum(1)
        return torch.where(ok, value, torch.full_like(value, -math.inf))

    return log_density


def gp_diabetes(context: Context, *, chains: int = 16, samples: int = 100, rows: int = 50,
                draws: int = 20000, shift: float = 0.0, burn_in: float = 0.0, repeats: int = 2) -> Target:
    """The GP-hyperparameter posterior on ``rows`` seed-drawn patients of diabetes (10 features and the target
    standardised on them): the expensive log-density, a Cholesky of a rows × rows matrix per chain per call."""
    import torch
    from sklearn.datasets import load_diabetes

    m, n = _size(chains, samples)
    shift, burn_in, repeats = _check_start(shift, burn_in, repeats)
    x, y = load_diabetes(return_X_y=True)
    if not 10 <= int(rows) <= x.shape[0]:
        raise DataError(f"gp-diabetes: rows = {rows}; expected 10 … {x.shape[0]}")
    instance = f"diabetes:rows{rows}"
    rng = dataclasses.replace(context, dataset=instance).rng("data")
    keep = rng.choice(x.shape[0], size=int(rows), replace=False)
    a = x[keep]
    a = (a - a.mean(0)) / a.std(0)
    b = (y[keep] - y[keep].mean()) / y[keep].std()
    inputs = torch.as_tensor(a)
    sq_dist = torch.cdist(inputs, inputs).square()
    return _posterior(context, m, n, instance, gp_log_density(sq_dist, torch.as_tensor(b)), 3, int(draws),
                      shift, burn_in, repeats)


# --------------------------------------------------------------------------- scores


def split_rhat(draws: np.ndarray) -> float:
    """The largest split R-hat over coordinates (Gelman et al., BDA3 §11.4) of draws (m, n, d)."""
    half = draws.shape[1] // 2
    parts = np.concatenate([draws[:, :half], draws[:, half: 2 * half]], axis=0)
    n = parts.shape[1]
    within = parts.var(1, ddof=1).mean(0)
    between = n * parts.mean(1).var(0, ddof=1)
    pooled = (n - 1) / n * within + between / n
    return float(np.max(np.sqrt(pooled / within)))


def effective_sample_size(draws: np.ndarray) -> float:
    """The smallest multi-chain ESS over coordinates (Stan's estimator: FFT autocovariances averaged over chains,
    the between-chain variance, Geyer's initial positive sequence) of draws (m, n, d)."""
    m, n, d = draws.shape
    centred = draws - draws.mean(1, keepdims=True)
    size = 1 << (2 * n - 1).bit_length()
    spectrum = np.fft.rfft(centred, n=size, axis=1)
    acov = np.fft.irfft(spectrum * np.conj(spectrum), n=size, axis=1)[:, :n] / n  # (m, n, d)
    mean_acov = acov.mean(0)  # (n, d)
    within = (acov[:, 0] * n / (n - 1)).mean(0)
    between = n * draws.mean(1).var(0, ddof=1) if m > 1 else np.zeros(d)
    pooled = (n - 1) / n * within + between / n
    best = math.inf
    for k in range(d):
        if not pooled[k] > 0:
            return 0.0
        rho = 1.0 - (within[k] - mean_acov[:, k]) / pooled[k]
        total = 0.0
        for t in range(0, n - 1, 2):
            pair = rho[t] + rho[t + 1]
            if pair < 0:
                break
            total += pair
        tau = max(2.0 * total - 1.0, 1.0 / math.log10(m * n + 10))
        best = min(best, m * n / tau)
    return float(best)


def moment_check(draws: np.ndarray, target: Target) -> tuple[float, str]:
    """max |t| / threshold over the first and second moments of every coordinate, and the worst one in words.

    Chain j's averages are unbiased (stationary start) and independent across chains, so
    t = (mean over chains − truth) / √(s²/m + reference error²) has m − 1 degrees of freedom; the threshold is
    the Bonferroni quantile at family-wise level ``FAMILY_LEVEL`` over the 2d tests. The first ``target.burn_in``
    share of each chain's samples is left out: with chains started ``shift`` standard deviations away from the
    target, a sampler that never moves keeps every chain's mean shift·σ off, so its first-moment |t| is about
    shift·√m (the chains' starts are exact draws moved by shift·σ), 16 for shift 4 at m = 16, against a threshold
    of 4.6 to 5.6 there: it fails with probability above 0.999. From a stationary start (shift 0) the same
    frozen sampler passes (its draws are the exact initial draws): that check has no power against it.
    """
    from scipy import stats

    draws = draws[:, int(target.burn_in * draws.shape[1]):]
    if target.checked is not None:
        draws = target.checked(draws)
    m, _, d = draws.shape
    threshold = float(stats.t.ppf(1 - FAMILY_LEVEL / (2 * 2 * d), m - 1))
    worst, words = 0.0, ""
    for name, values, truth, ref_se in (("E x", draws.mean(1), target.mean, target.mean_se),
                                        ("E x²", (draws**2).mean(1), target.second, target.second_se)):
        se = np.sqrt(values.var(0, ddof=1) / m + ref_se**2)
        t = np.abs(values.mean(0) - truth) / np.where(se > 0, se, np.inf)
        k = int(np.argmax(t))
        if t[k] / threshold > worst:
            worst = float(t[k] / threshold)
            words = (f"{name} of coordinate {k}: {values.mean(0)[k]:.4g} over {m} chains against {truth[k]:.4g}, "
                     f"|t| = {t[k]:.2f} beyond {threshold:.2f}")
    return worst, words


def bounds(iterations: np.ndarray, loop_iterations: np.ndarray | None) -> dict[str, float]:
    """The iteration counts' bounds on the FSM's speed-up, for iterations N_ij (m, n) and, for a sampler whose loops
    the synchronised form runs in turn, their split by loop (m, n, L).

    The synchronised form runs, per sample i, S_i = Σ_l max_j N_ijl iterations (max_j N_ij with one loop); the FSM
    runs E N per sample per chain in the long run, and at n samples per chain at least max_j Σ_i N_ij steps (it
    ends when its slowest chain has n samples). ``r_bound`` = E S / E N is the paper's R(m) for the sampler as it
    is synchronised (Equation 13 with one loop; with three loops in turn each adds its own maximum), and
    ``r_bound_n`` = Σ_i S_i / max_j Σ_i N_ij the same bound at the run's n (the finite-n limit: equal-cost steps,
    no completion-check slack), which tends to ``r_bound`` as n grows."""
    if loop_iterations is not None:
        sync = np.asarray(loop_iterations, dtype=np.float64).max(0).sum(-1)  # (n,)
    else:
        sync = iterations.max(0)
    return {"sync_iterations": float(sync.mean()), "r_bound": float(sync.mean() / iterations.mean()),
            "r_bound_n": float(sync.sum() / iterations.sum(1).max())}


class SamplesWrong(Exception):
    """The draws' moments disagree with the target's beyond Monte-Carlo error: the cell fails, however fast."""


class VectorizedMCMCTask(Task):
    """Time a sampler's m chains to n samples each, count its iterations per sample, check its draws."""

    name = "mcmc.vectorized"
    version = "1"
    metrics = ("wall_s", "wall_s_cpu", "wall_s_spread", "log_wall_s", "log_cpu_s", "log_cpu_s_spread", "ess_per_s",
               "mean_iterations", "mean_max_iterations", "sync_iterations", "r_bound", "r_bound_n",
               "density_calls_per_sample", "split_rhat", "moment_check")
    protocol = VectorizedSampler
    framework = "torch"

    def tiny(self, workdir: Path) -> dict[str, dict[str, Any]]:
        """Small configurations for the conformance test."""
        return {
            "standard-normal": {"chains": 32, "samples": 40},
            "funnel": {"chains": 32, "samples": 40},
            "logistic-breast-cancer": {"chains": 32, "samples": 20, "rows": 60, "draws": 4000, "features": [0, 1]},
            "gp-diabetes": {"chains": 32, "samples": 10, "rows": 20, "draws": 4000},
        }

    def evaluate(self, method: VectorizedSampler, data: Target, context: Context) -> dict[str, float]:
        who = type(method).__name__
        problem = data.chains
        method.sample(dataclasses.replace(problem, n=1))  # warm-up: first calls of every kernel
        run, timing = time_call(method.sample, problem, repeats=data.repeats, warmup=0)
        wall, cpu = timing.wall_s, timing.cpu_s
        draws = np.asarray(run.draws, dtype=np.float64)
        iterations = np.asarray(run.iterations, dtype=np.float64)
        m, d = problem.x0.shape
        if draws.shape != (m, problem.n, d) or iterations.shape != (m, problem.n):
            raise TypeError(f"{who}.sample returned draws {draws.shape} and iterations {iterations.shape}; expected "
                            f"({m}, {problem.n}, {d}) and ({m}, {problem.n})")
        if not np.isfinite(draws).all() or iterations.min() < 1:
            raise SamplesWrong(f"{who}: non-finite draws or a sample with no iteration")
        check, words = moment_check(draws, data)
        if check > 1.0:
            raise SamplesWrong(f"{who}: the draws do not have the target's moments: {words}")
        loops = getattr(run, "loop_iterations", None)
        if loops is not None:
            loops = np.asarray(loops, dtype=np.float64)
            if loops.shape[:2] != (m, problem.n) or not np.array_equal(loops.sum(-1), iterations):
                raise TypeError(f"{who}.sample returned loop_iterations {loops.shape} that do not split its iterations")
        return {
            **timing.metrics("wall_s"),
            "log_wall_s": math.log(wall),
            "log_cpu_s": math.log(cpu),
            "log_cpu_s_spread": timing.spread_s / wall,
            "ess_per_s": effective_sample_size(draws) / wall,
            "mean_iterations": float(iterations.mean()),
            "mean_max_iterations": float(iterations.max(0).mean()),
            **bounds(iterations, loops),
            "density_calls_per_sample": run.density_calls / problem.n,
            "split_rhat": split_rhat(draws),
            "moment_check": check,
        }


TASK = VectorizedMCMCTask()
