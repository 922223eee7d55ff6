"""Task ``design.factorial``: probabilistic factorial designs for combinatorial interventions (Shyamal, Zhang, Uhler,
ICML 2025), scored by the least-squares error of the interaction model they let one fit.

The model. Unit m receives a combination x_m ∈ {−1, +1}^p of p treatments and shows y_m = f(x_m) + ε_m with
ε_m ~ N(0, σ²) and f(x) = Σ_S β_S φ_S(x), φ_S(x) = Π_{i∈S} x_i over the K subsets S of size at most k (the empty
set, the intercept, included): the Boolean Fourier basis, in which a k-way interaction model has β_S = 0 for |S| > k.

A round. The design names either a dosage vector d ∈ [0, 1]^p, and each unit draws x_{m,i} = +1 with probability d_i
independently (product Bernoulli), or the n units' combinations outright (a classical fractional factorial). The
task draws the outcomes, pools every round so far and fits β̂ twice. The paper's estimator, truncated OLS (§4.1):
β̂ = G⁻¹Xᵀy with G = XᵀX when tr G⁻¹ = Σ_i 1/λ_i(G) ≤ B²/σ², else β̂ = 0, where B bounds ‖β‖₂ (Assumption 3.2; by
default B = scale·√K, the smallest bound that holds for every β the loader draws); a singular G has tr G⁻¹ = ∞ and
gives β̂ = 0. It scores the headline metrics (``final_error``, ``error_area``, ``final_risk``) on every trial, and
``truncated_rounds`` says how often it returned 0. The named variant, ordinary least squares (``*_ols``): β̂ = G⁻¹Xᵀy
when G is nonsingular, else the dataset's fallback (the minimum-norm solution G⁺Xᵀy, or ridge (G + μI)⁻¹Xᵀy);
``singular_rounds`` counts how often G was singular (the fits OLS needed a fallback for). A design sees the
combinations of earlier rounds, never an outcome and never β.

Common random numbers. A cell runs ``trials`` independent trials; the seed draws, for each, β ~ U(−scale, scale)^K,
the units' uniforms U (a unit gets +1 on treatment i when U_{m,i} < d_i) and the noise, identical for every method:
two designs differ only through the dosages they choose, so paired differences are much less noisy than the errors.

Scores. ‖β̂ − β‖² after every round (a curve), after the last (``final_error``) and summed over rounds
(``error_area``); the exact noise-expected error given the design and β (``final_risk``, and a curve), for either
estimator; and N tr(G⁻¹)/K, the least-squares risk over σ²K/N, a floor no ±1 design can beat since diag G = N
(Cauchy–Schwarz: tr G⁻¹ ≥ K²/tr G), met exactly by an orthogonal design: its mean over the trials whose final G is
nonsingular (``risk_over_floor``) and its smallest value over all trials, a singular G counting as ∞
(``risk_over_floor_min``). The trivial answer, β̂ = 0 whatever the data, has expected error E‖β‖² = K·scale²/3 (β
uniform on [−scale, scale]^K): the chance level of the error and risk metrics.

Theory. Each curve carries, as its dashed line, the risk the paper's analysis assigns to the same designs:
σ² tr(I_r⁻¹) with I_r = Σ_{s≤r} I(round s), where a dosage round contributes its expected information n Σ(d_s)
(§4.2) and a round of explicit combinations its XᵀX; on the truncated estimator's curves, Lemma 4.1's upper bound
min{σ² tr(I_r⁻¹), B²}. For d = ½ every round, and for an orthogonal fraction, this
is the floor σ²K/(n r); the measured risk of a dosage design lies above it by the finite-n gap E tr G⁻¹ ≥ tr (E G)⁻¹
that Thm 4.2's 1 + O(ln n/n) factor bounds.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from harness.tasks.base import Context, DataError, Task
from harness.tasks.evaluation import Curve, Evaluation

FALLBACKS = ("min-norm", "ridge")
SINGULAR_TOL = 1e-9  # G is singular when λ_min ≤ SINGULAR_TOL · λ_max


# --------------------------------------------------------------------------- the model


def interaction_sets(p: int, k: int) -> tuple[tuple[int, ...], ...]:
    """Every subset of {0, …, p−1} of size ≤ k, by size then lexicographically: K = Σ_{i≤k} C(p, i) of them."""
    return tuple(s for size in range(k + 1) for s in itertools.combinations(range(p), size))


def features(x: np.ndarray, sets) -> np.ndarray:
    """The (n, K) parity features φ_S(x_m) = Π_{i∈S} x_{m,i} of ±1 combinations x (n, p); φ_∅ = 1."""
    x = np.asarray(x, dtype=np.float64)
    n, p = x.shape
    width = max((len(s) for s in sets), default=0)
    index = np.full((len(sets), max(width, 1)), p)
    for j, s in enumerate(sets):
        index[j, : len(s)] = s
    padded = np.concatenate([x, np.ones((n, 1))], axis=1)
    return padded[:, index].prod(axis=2)


def _symmetric_differences(sets, p: int) -> np.ndarray:
    member = np.zeros((len(sets), p), dtype=bool)
    for j, s in enumerate(sets):
        member[j, list(s)] = True
    return member[:, None, :] ^ member[None, :, :]


def expected_information(d, sets, p: int | None = None) -> np.ndarray:
    """Σ(d) = E[φ(x)φ(x)ᵀ] under product-Bernoulli dosages d: Σ_{S,S'} = Π_{i∈SΔS'} (2d_i − 1) (the paper's §4.2;
    E x_i = 2d_i − 1 and x_i² = 1). tr Σ(d) = K for every d, and Σ(½) = I."""
    c = 2.0 * np.asarray(d, dtype=np.float64) - 1.0
    delta = _symmetric_differences(sets, len(c) if p is None else p)
    return np.where(delta, c, 1.0).prod(axis=2)


def expected_information_gradient(d, sets) -> np.ndarray:
    """∂Σ(d)/∂d_i, stacked (p, K, K): 2 Π_{j∈SΔS', j≠i} (2d_j − 1) where i ∈ SΔS', else 0."""
    c = 2.0 * np.asarray(d, dtype=np.float64) - 1.0
    p = len(c)
    delta = _symmetric_differences(sets, p)
    factors = np.where(delta, c, 1.0)  # (K, K, p)
    ones = np.ones(factors.shape[:2] + (1,))
    before = np.cumprod(np.concatenate([ones, factors[..., :-1]], axis=2), axis=2)
    after = np.cumprod(np.concatenate([ones, factors[..., :0:-1]], axis=2), axis=2)[..., ::-1]
    others = before * after
    return np.moveaxis(np.where(delta, 2.0 * others, 0.0), 2, 0)


def floor_risk(sigma: float, num_coefficients: int, units: int) -> float:
    """σ²K/N: the least-squares risk of an orthogonal ±1 design of N units, the smallest any ±1 design can have."""
    return sigma * sigma * num_coefficients / units


def theory_risk(information: np.ndarray, sigma: float) -> float:
    """σ² tr(I⁻¹) for the (expected) information I of the rounds so far; inf where I is singular."""
    lam = np.linalg.eigvalsh(information)
    if lam[0] <= SINGULAR_TOL * max(float(lam[-1]), 1.0):
        return math.inf
    return float(sigma * sigma * np.sum(1.0 / lam))


# --------------------------------------------------------------------------- what a method sees


@dataclass(frozen=True)
class DesignProblem:
    """What a design is told: the sizes, the model's index sets, and its own random stream."""

    p: int  # treatments
    k: int  # the model's largest interaction order
    units: int  # n, units per round
    rounds: int
    sets: tuple  # the K index sets S, |S| ≤ k, in the order of β
    supply: float | None = None  # §5.1: at most this many treatments per unit on average, Σ_i d_i ≤ supply
    rng: Any = None  # np.random.Generator: the method's own stream (random designs), one per cell, read on through its trials


class FactorialDesign(Protocol):
    """What a method of this task implements."""

    def design(self, problem: DesignProblem, past: np.ndarray) -> np.ndarray:
        """The next round: dosages d (p,) in [0, 1], from which the task draws each unit's combination, or the
        units' combinations themselves, (units, p) in ±1. ``past`` holds the (m, p) ±1 combinations of the units
        of the earlier rounds (m = 0 before the first): a design never sees an outcome."""
        ...


@dataclass(frozen=True)
class Instance:
    """A dataset: the problem and, per trial, what the seed drew (the same for every method)."""

    problem: DesignProblem
    sigma: float
    betas: np.ndarray  # (trials, K)
    uniforms: np.ndarray  # (trials, rounds, units, p): unit m gets +1 on treatment i when U < d_i
    noise: np.ndarray  # (trials, rounds, units), standard normal
    fallback: str
    ridge: float
    bound: float = math.inf  # B, ‖β‖₂ ≤ B: the truncated estimator's threshold is tr G⁻¹ ≤ B²/σ²
    scale: float = 1.0  # β ~ U(−scale, scale)^K


def _positive_int(name: str, value, least: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or int(value) < least:
        raise DataError(f"boolean-interactions: {name} = {value!r}; expected an integer of at least {least}")
    return int(value)


def boolean_interactions(context: Context, *, p: int = 5, k: int = 1, units: int = 16, rounds: int = 10,
                         sigma: float = 1.0, trials: int = 10, scale: float = 1.0, fallback: str = "min-norm",
                         ridge: float = 1e-3, supply: float | None = None, bound: float | None = None) -> Instance:
    """``trials`` instances of a k-way interaction model of p treatments, each observed over ``rounds`` rounds of
    ``units`` units with noise N(0, σ²); β ~ U(−scale, scale)^K (the paper's §6 draws U(−1, 1)). ``fallback`` is
    the estimator where the pooled Gram is singular: ``min-norm`` (G⁺Xᵀy) or ``ridge`` ((G + ridge·I)⁻¹Xᵀy).
    ``supply`` (§5.1) limits every round to Σ_i d_i ≤ supply (for explicit combinations: the units' mean number of
    treatments); a design beyond it fails the cell. ``bound`` is B of the truncated estimator (‖β‖₂ ≤ B); null
    takes scale·√K, the smallest B that every draw of β satisfies."""
    p = _positive_int("p", p)
    k = _positive_int("k", k)
    if k > p:
        raise DataError(f"boolean-interactions: k = {k} > p = {p}; the interaction order is at most the number of treatments")
    units, rounds, trials = _positive_int("units", units), _positive_int("rounds", rounds), _positive_int("trials", trials)
    num = sum(math.comb(p, i) for i in range(k + 1))
    if num > 2000:
        raise DataError(f"boolean-interactions: p = {p}, k = {k} give K = {num} coefficients; at most 2000 are supported")
    if units * rounds < num:
        raise DataError(f"boolean-interactions: units × rounds = {units * rounds} < K = {num}; the pooled Gram can "
                        "never be nonsingular, so no design identifies β (raise units or rounds)")
    if not (isinstance(sigma, (int, float)) and math.isfinite(sigma) and sigma > 0):
        raise DataError(f"boolean-interactions: sigma = {sigma!r}; expected a positive noise standard deviation")
    if not (isinstance(scale, (int, float)) and math.isfinite(scale) and scale > 0):
        raise DataError(f"boolean-interactions: scale = {scale!r}; expected a positive bound on |β_S|")
    if fallback not in FALLBACKS:
        raise DataError(f"boolean-interactions: fallback = {fallback!r}; expected one of {', '.join(FALLBACKS)}")
    if not (isinstance(ridge, (int, float)) and ridge > 0):
        raise DataError(f"boolean-interactions: ridge = {ridge!r}; expected a positive ridge penalty")
    if supply is not None and not (isinstance(supply, (int, float)) and 0 < supply <= p):
        raise DataError(f"boolean-interactions: supply = {supply!r}; expected a number in (0, p = {p}], the most "
                        "treatments a unit gets on average, or null for no limit")
    if bound is None:
        bound = scale * math.sqrt(num)
    elif not (isinstance(bound, (int, float)) and math.isfinite(bound) and bound > 0):
        raise DataError(f"boolean-interactions: bound = {bound!r}; expected a positive bound B on ‖β‖₂ (the truncated "
                        "estimator's), or null for scale·√K")
    sets = interaction_sets(p, k)
    betas = context.rng("beta").uniform(-scale, scale, size=(trials, num))
    uniforms = context.rng("units").random((trials, rounds, units, p))
    noise = context.rng("noise").standard_normal((trials, rounds, units))
    return Instance(DesignProblem(p, k, units, rounds, sets, None if supply is None else float(supply)), float(sigma),
                    betas, uniforms, noise, fallback, float(ridge), float(bound), float(scale))


# --------------------------------------------------------------------------- the estimator


def fit(gram: np.ndarray, moment: np.ndarray, beta: np.ndarray, sigma: float, fallback: str = "min-norm",
        ridge: float = 1e-3) -> tuple[np.ndarray, float, bool]:
    """β̂ from G = XᵀX and Xᵀy, the exact noise-expected error E_ε‖β̂ − β‖² given the design and β, and whether G
    was singular (so the fallback was used). With β̂ = A Xᵀy, the error's mean is ‖(AG − I)β‖² + σ² tr(A G Aᵀ);
    in G's eigenbasis A = V diag(a) Vᵀ with a = 1/λ (OLS), 1/λ on the nonzero λ (minimum norm) or 1/(λ + μ) (ridge)."""
    lam, vec = np.linalg.eigh(gram)
    top = max(float(lam[-1]), 1.0)
    singular = bool(lam[0] <= SINGULAR_TOL * top)
    if not singular:
        a = 1.0 / lam
    elif fallback == "ridge":
        a = 1.0 / (np.maximum(lam, 0.0) + ridge)
    else:
        a = np.where(lam > SINGULAR_TOL * top, 1.0 / np.where(lam > 0, lam, 1.0), 0.0)
    lam = np.maximum(lam, 0.0)
    estimate = vec @ (a * (vec.T @ moment))
    coords = vec.T @ beta
    risk = float(np.sum((a * lam - 1.0) ** 2 * coords**2) + sigma * sigma * np.sum(a * a * lam))
    return estimate, risk, singular


def truncated_fit(gram: np.ndarray, moment: np.ndarray, beta: np.ndarray, sigma: float,
                  bound: float) -> tuple[np.ndarray, float, bool]:
    """The paper's truncated OLS (§4.1): β̂ = G⁻¹Xᵀy where Σ_i 1/λ_i(G) ≤ B²/σ², else β̂ = 0 (a singular G has
    Σ 1/λ_i = ∞), with its exact noise-expected error given the design and β, and whether it returned 0.

    Why the rule: OLS is unbiased with E_ε‖β̂ − β‖² = σ² Σ 1/λ_i, and β̂ = 0 has error ‖β‖² ≤ B², so the estimator
    takes whichever has the smaller worst case over ‖β‖ ≤ B; its risk is σ² Σ 1/λ_i on one side of the threshold and
    ‖β‖² on the other, which Lemma 4.1 brackets: min{σ² Σ 1/λ_i, ‖β‖²} ≤ risk ≤ min{σ² Σ 1/λ_i, B²}."""
    lam, vec = np.linalg.eigh(gram)
    singular = bool(lam[0] <= SINGULAR_TOL * max(float(lam[-1]), 1.0))
    trace = math.inf if singular else float(np.sum(1.0 / lam))
    if trace > bound * bound / (sigma * sigma):
        return np.zeros_like(beta, dtype=np.float64), float(np.sum(np.asarray(beta) ** 2)), True
    estimate = vec @ ((vec.T @ moment) / lam)
    return estimate, sigma * sigma * trace, False


def combinations(round_design, uniforms: np.ndarray, who: str) -> tuple[np.ndarray, np.ndarray | None]:
    """The units' ±1 combinations from what a design returned for one round, and the dosages (None where the design
    named the combinations outright)."""
    units, p = uniforms.shape
    out = np.asarray(round_design, dtype=np.float64)
    if out.shape == (p,):
        if not (np.all(np.isfinite(out)) and out.min() >= 0.0 and out.max() <= 1.0):
            raise ValueError(f"{who}.design returned dosages {np.round(out, 4).tolist()}; expected values in [0, 1]")
        return np.where(uniforms < out, 1.0, -1.0), out
    if out.shape == (units, p):
        if not np.all(np.abs(out) == 1.0):
            raise ValueError(f"{who}.design returned combinations with entries other than ±1")
        return out, None
    raise ValueError(f"{who}.design returned shape {out.shape}; expected dosages ({p},) or combinations ({units}, {p})")


class FactorialDesignTask(Task):
    """Run a design for every trial of the instance, round by round, and score the pooled fits: the paper's truncated
    OLS (the headline metrics) and ordinary least squares (``*_ols``)."""

    name = "design.factorial"
    version = "2"
    metrics = ("final_error", "error_area", "final_risk", "final_error_ols", "error_area_ols", "final_risk_ols",
               "risk_over_floor", "risk_over_floor_min", "singular_rounds", "truncated_rounds")
    protocol = FactorialDesign
    framework = None

    def tiny(self, workdir: Path) -> dict[str, dict[str, Any]]:
        """Small configurations for the conformance test."""
        return {"boolean-interactions": {"p": 5, "k": 1, "units": 16, "rounds": 2, "trials": 2, "sigma": 1.0}}

    def chance(self, dataset: str, params: dict[str, Any]) -> dict[str, float]:
        """The trivial answer β̂ = 0 has expected error E‖β‖² = K·scale²/3 after every round (β ~ U(−scale, scale)^K),
        so rounds times that summed over rounds, for either estimator."""
        if dataset != "boolean-interactions":
            return {}
        p, k = int(params.get("p", 5)), int(params.get("k", 1))
        rounds, scale = int(params.get("rounds", 10)), float(params.get("scale", 1.0))
        level = sum(math.comb(p, i) for i in range(min(k, p) + 1)) * scale * scale / 3.0
        return {"final_error": level, "final_risk": level, "error_area": rounds * level,
                "final_error_ols": level, "final_risk_ols": level, "error_area_ols": rounds * level}

    def evaluate(self, method: FactorialDesign, data: Instance, context: Context) -> Evaluation:
        who = type(method).__name__
        base = data.problem
        problem = DesignProblem(base.p, base.k, base.units, base.rounds, base.sets, base.supply, context.rng("method"))
        trials, rounds, units, p = data.uniforms.shape
        num = len(base.sets)
        errors, risks = np.zeros((trials, rounds)), np.zeros((trials, rounds))  # truncated OLS
        errors_ols, risks_ols = np.zeros((trials, rounds)), np.zeros((trials, rounds))
        singular = np.zeros((trials, rounds), dtype=bool)
        truncated = np.zeros((trials, rounds), dtype=bool)
        theory = np.zeros((trials, rounds))
        ratios = np.full(trials, math.inf)
        for t in range(trials):
            beta = data.betas[t]
            gram, moment, information = np.zeros((num, num)), np.zeros(num), np.zeros((num, num))
            past = np.zeros((0, p))
            for r in range(rounds):
                x, dosages = combinations(method.design(problem, past.copy()), data.uniforms[t, r], who)
                if base.supply is not None:
                    used = float(dosages.sum()) if dosages is not None else float((x > 0).sum(1).mean())
                    if used > base.supply + 1e-9:
                        raise ValueError(f"{who}: round {r + 1} uses {used:.4g} treatments per unit on average, "
                                         f"beyond the supply {base.supply:g}")
                phi = features(x, base.sets)
                information += phi.T @ phi if dosages is None else units * expected_information(dosages, base.sets)
                theory[t, r] = theory_risk(information, data.sigma)
                y = phi @ beta + data.sigma * data.noise[t, r]
                gram += phi.T @ phi
                moment += phi.T @ y
                past = np.concatenate([past, x])
                estimate, risks_ols[t, r], singular[t, r] = fit(gram, moment, beta, data.sigma, data.fallback,
                                                                data.ridge)
                errors_ols[t, r] = float(np.sum((estimate - beta) ** 2))
                estimate, risks[t, r], truncated[t, r] = truncated_fit(gram, moment, beta, data.sigma, data.bound)
                errors[t, r] = float(np.sum((estimate - beta) ** 2))
            if not singular[t, -1]:
                ratios[t] = units * rounds * float(np.trace(np.linalg.inv(gram))) / num
        finite = ratios[np.isfinite(ratios)]
        if not finite.size:
            raise ValueError(f"{who}: the pooled Gram was singular after the last round in all {trials} trials: the "
                             "design never identified β")
        x_rounds = list(range(1, rounds + 1))
        predicted = theory.mean(0)
        predicted = predicted.tolist() if np.all(np.isfinite(predicted)) else None
        capped = np.minimum(theory, data.bound ** 2).mean(0).tolist()  # Lemma 4.1's upper bound
        curves = {
            "error": Curve(x_rounds, errors.mean(0).tolist(), "round", "‖β̂ − β‖², truncated OLS", capped),
            "risk": Curve(x_rounds, risks.mean(0).tolist(), "round", "E_ε‖β̂ − β‖² given the design, truncated OLS",
                          capped),
            "error_ols": Curve(x_rounds, errors_ols.mean(0).tolist(), "round", "‖β̂ − β‖², OLS", predicted),
            "risk_ols": Curve(x_rounds, risks_ols.mean(0).tolist(), "round", "E_ε‖β̂ − β‖² given the design, OLS",
                              predicted),
        }
        return Evaluation(metrics={
            "final_error": float(errors[:, -1].mean()),
            "error_area": float(errors.sum(1).mean()),
            "final_risk": float(risks[:, -1].mean()),
            "final_error_ols": float(errors_ols[:, -1].mean()),
            "error_area_ols": float(errors_ols.sum(1).mean()),
            "final_risk_ols": float(risks_ols[:, -1].mean()),
            "risk_over_floor": float(finite.mean()),
            "risk_over_floor_min": float(ratios.min()),
            "singular_rounds": float(singular.mean()),
            "truncated_rounds": float(truncated.mean()),
        }, curves=curves)


TASK = FactorialDesignTask()
