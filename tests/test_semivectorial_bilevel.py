"""The semivectorial-bilevel spec's task (``moo.preference``): the toy's closed forms, the min-norm weight, the exact
2-D hypervolume, the network's hand-written gradients, FOOPS's merit function and gradients (Prop 3.3, Danskin),
the baselines' constrained directions, the loaders' errors, and FOOPS on Ex. 3.12 (the note's numpy check)."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from baselines.moo import FERERO, MGDA, LinearScalarisation, ProjectedMGDA, Start, ferero_direction, projected_direction
from harness.tasks.base import Context, DataError
from harness.tasks.evaluation import Evaluation
from harness.tasks.moo.preference import (
    TASK,
    Problem,
    exp_objectives,
    exp_toy,
    hypervolume_2d,
    min_norm_weight,
    preference,
    stationarity,
    two_digit_canvases,
    two_digits,
)
from implementations.foops import FOOPS, foops, smoothed_merit


def context(seed: int = 0, dataset: str = "toy") -> Context:
    return Context(seed=seed, split="test", dataset=dataset, device="cpu", threads=1, data_dir=None, precision="fp64")


def preferred_x(a: float = 5.0, b: float = 4.0) -> float:
    """The root of a f1 − b f2 on the q = 1 Pareto segment [−1, 1], by bisection (H increases from x = 1 to x = −1)."""
    lo, hi = -1.0, 1.0  # H(-1) > 0 > H(1)
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if preference(exp_objectives(np.array([mid]))[0], (a, b)) > 0:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def numeric_gradient(fun, x, eps=1e-6):
    return np.array([(fun(x + eps * e) - fun(x - eps * e)) / (2 * eps) for e in np.eye(x.size)])


# --------------------------------------------------------------------------- toy, scores


def test_toy_values_and_gradients_match_their_closed_form():
    x = np.array([0.3, -0.7])
    f, jac = exp_objectives(x)
    assert f[0] == pytest.approx(1 - math.exp(-(0.7**2 + 1.7**2)))
    assert f[1] == pytest.approx(1 - math.exp(-(1.3**2 + 0.3**2)))
    for m in range(2):
        assert np.allclose(jac[m], numeric_gradient(lambda z: exp_objectives(z)[0][m], x), atol=1e-8)


def test_the_preferred_point_of_the_papers_ray_is_near_0_095():
    """The note: FOOPS reached x = 0.095 = x* on H = 5 f1 − 4 f2 (q = 1)."""
    assert preferred_x() == pytest.approx(0.0952, abs=5e-4)


def test_min_norm_weight_is_the_minimiser_over_the_simplex():
    rng = np.random.default_rng(0)
    for _ in range(20):
        jac = rng.standard_normal((2, 3))
        lam = min_norm_weight(jac)
        grid = np.linspace(0, 1, 2001)
        norms = [np.linalg.norm(t * jac[0] + (1 - t) * jac[1]) for t in grid]
        assert stationarity(jac) == pytest.approx(min(norms), abs=1e-6)
        assert 0.0 <= lam <= 1.0


def test_stationarity_is_zero_on_the_pareto_segment_and_positive_off_it():
    assert stationarity(exp_objectives(np.array([0.4]))[1]) == pytest.approx(0.0, abs=1e-15)
    # beyond 1 both gradients point the same way: the min-norm element is the smaller, ∇f2 = 2·2.5·e^{−6.25} (the
    # note's caveat: far from ±1 the gradients vanish and stationarity alone looks small)
    assert stationarity(exp_objectives(np.array([1.5]))[1]) == pytest.approx(5 * math.exp(-6.25))
    assert stationarity(exp_objectives(np.array([0.2, 0.5]))[1]) > 0.02  # off the line between −1 and 1


def test_hypervolume_of_a_staircase_and_of_dominated_points():
    ref = (4.0, 4.0)
    assert hypervolume_2d(np.array([[1.0, 1.0]]), ref) == pytest.approx(9.0)
    # two points: union of [1,4]x[3,4] ∪ [3,4]x[1,4] = 3 + 3 − 1
    assert hypervolume_2d(np.array([[1.0, 3.0], [3.0, 1.0]]), ref) == pytest.approx(5.0)
    # a dominated point and a point outside the reference add nothing
    assert hypervolume_2d(np.array([[1.0, 3.0], [3.0, 1.0], [3.5, 3.5], [0.0, 5.0]]), ref) == pytest.approx(5.0)
    assert hypervolume_2d(np.empty((0, 2)), ref) == 0.0


def test_hypervolume_matches_a_grid_count():
    rng = np.random.default_rng(3)
    points = rng.uniform(0, 1, (6, 2))
    grid = (np.arange(400) + 0.5) / 400
    g1, g2 = np.meshgrid(grid, grid, indexing="ij")
    covered = np.zeros_like(g1, dtype=bool)
    for p1, p2 in points:
        covered |= (g1 >= p1) & (g2 >= p2)
    assert hypervolume_2d(points, (1.0, 1.0)) == pytest.approx(covered.mean(), abs=5e-3)


# --------------------------------------------------------------------------- the network


def test_network_gradients_match_finite_differences():
    instance = two_digits(context(dataset="two-digits"), train=30, test=10, hidden=3, rays=[[1, 1]])
    problem = instance.problems[0]
    x = problem.x0 + 0.1 * np.random.default_rng(1).standard_normal(problem.x0.size)
    _, jac = problem.objectives(x)
    rng = np.random.default_rng(2)
    for _ in range(3):
        e = rng.standard_normal(x.size)
        fd = (problem.objectives(x + 1e-6 * e)[0] - problem.objectives(x - 1e-6 * e)[0]) / 2e-6
        assert np.allclose(jac @ e, fd, rtol=1e-5, atol=1e-8)


def test_canvases_place_the_two_digits_and_combine_the_overlap_by_max():
    images = np.zeros((2, 64))
    images[0, 63] = 0.5  # the first image's bottom-right pixel
    images[1, 0] = 1.0  # the second's top-left pixel
    canvas, first, second = two_digit_canvases(images, np.array([3, 7]), np.array([[0, 1], [1, 0]]), 12, 4)
    grid = canvas.reshape(2, 12, 12)
    assert grid[0, 7, 7] == 0.5 and grid[0, 4, 4] == 1.0
    assert grid[1, 0, 0] == 1.0 and grid[1, 11, 11] == 0.5
    assert list(first) == [3, 7] and list(second) == [7, 3]


def test_the_seed_draws_the_instance():
    a = two_digits(context(0, "two-digits"), train=20, test=10, hidden=2, rays=[[1, 1]])
    b = two_digits(context(0, "two-digits"), train=20, test=10, hidden=2, rays=[[1, 1]])
    c = two_digits(context(1, "two-digits"), train=20, test=10, hidden=2, rays=[[1, 1]])
    assert np.array_equal(a.problems[0].x0, b.problems[0].x0)
    assert not np.array_equal(a.problems[0].x0, c.problems[0].x0)
    starts = {float(exp_toy(context(s), dim=1).problems[0].x0[0] > 0) for s in range(8)}
    assert starts == {0.0, 1.0}  # hard starts near both minimisers


def test_the_unit_centre_puts_the_minimisers_at_unit_distance_and_starts_near_them():
    """centre: unit (Lin et al. 2019's scaling): f1 = 0 at c = 1/√q, the start s·c + 0.1 N(0, I) keeps the other
    objective's gradient visible in R^20 (with centre: ones it is below 1e-30: e^{-80})."""
    q = 20
    c = np.ones(q) / math.sqrt(q)
    instance = exp_toy(context(), dim=q, centre="unit")
    objectives = instance.problems[0].objectives
    f, jac = objectives(c)
    assert f[0] == pytest.approx(0.0, abs=1e-15) and f[1] == pytest.approx(1 - math.exp(-4.0))
    assert np.allclose(jac[1], 2 * (2 * c) * math.exp(-4.0))
    for m in range(2):
        x = 0.3 * np.random.default_rng(m).standard_normal(q)
        assert np.allclose(objectives(x)[1][m], numeric_gradient(lambda z: objectives(z)[0][m], x), atol=1e-8)
    x0 = instance.problems[0].x0
    sign = 1.0 if x0.sum() > 0 else -1.0
    assert np.linalg.norm(x0 - sign * c) < 1.0
    assert stationarity(objectives(x0)[1]) > 1e-3  # both gradients seen: not stalled at the start
    flat = exp_toy(context(), dim=q).problems[0]
    assert min(np.linalg.norm(g) for g in flat.objectives(flat.x0)[1]) < 1e-30
    # in R the two centres are the same problem and the same start
    one, unit = exp_toy(context(), dim=1), exp_toy(context(), dim=1, centre="unit")
    assert np.array_equal(one.problems[0].x0, unit.problems[0].x0)
    assert np.array_equal(one.problems[0].objectives(np.array([0.3]))[0], unit.problems[0].objectives(np.array([0.3]))[0])


@pytest.mark.parametrize("params, word", [
    ({"dim": 0}, "dim"), ({"spread": -1.0}, "spread"), ({"rays": [[1, 0]]}, "rays"), ({"rays": 3}, "rays"),
    ({"steps": 0}, "steps"), ({"centre": "zero"}, "centre"),
])
def test_toy_loader_names_the_bad_parameter(params, word):
    with pytest.raises(DataError, match=word):
        exp_toy(context(), **params)


@pytest.mark.parametrize("params, word", [
    ({"train": 2}, "train"), ({"hidden": 0}, "hidden"), ({"canvas": 10, "offset": 4}, "offset"),
    ({"rays": [[-1, 1]]}, "rays"),
])
def test_digit_loader_names_the_bad_parameter(params, word):
    with pytest.raises(DataError, match=word):
        two_digits(context(dataset="two-digits"), **params)


# --------------------------------------------------------------------------- FOOPS's merit function


def test_smoothed_merit_is_tau_ln_m_at_y_equal_x_and_its_gradients_are_danskins():
    x, y = np.array([0.3, 0.2]), np.array([0.1, -0.4])
    tau, l = 0.05, 2.0
    fx, gx = exp_objectives(x)
    fy, gy = exp_objectives(y)
    h0, _, _, pi0 = smoothed_merit(fx, gx, fx, gx, x, x, tau, l)
    assert h0 == pytest.approx(tau * math.log(2)) and np.allclose(pi0, 0.5)

    def h_of(xx, yy):
        return smoothed_merit(*exp_objectives(xx), *exp_objectives(yy), xx, yy, tau, l)[0]

    h, grad_x, grad_y, pi = smoothed_merit(fx, gx, fy, gy, x, y, tau, l)
    direct = tau * math.log(np.exp((fy - fx) / tau).sum()) + l / 2 * float((x - y) @ (x - y))
    assert h == pytest.approx(direct)
    assert np.allclose(grad_x, numeric_gradient(lambda z: h_of(z, y), x), atol=1e-6)
    assert np.allclose(grad_y, numeric_gradient(lambda z: h_of(x, z), y), atol=1e-6)
    assert pi.sum() == pytest.approx(1.0)


def test_merit_is_stable_for_large_differences_over_tau():
    fx, gx = np.array([0.0, 0.0]), np.zeros((2, 1))
    h, *_ = smoothed_merit(fx, gx, np.array([50.0, 40.0]), gx, np.zeros(1), np.zeros(1), 1e-3, 1.0)
    assert h == pytest.approx(50.0)


def test_merit_bounds_of_prop_3_3_on_the_toy():
    """ū − τ ln M ≤ v_{0,τ} ≤ ū (l = 0), with ū(x) = sup_y min_m [f_m(x) − f_m(y)] and v = −min_y h, by a grid over y
    (q = 1): at a Pareto point ū = 0, off the segment ū > 0."""
    tau = 0.05
    ys = np.linspace(-4, 4, 8001)
    fys = np.array([exp_objectives(np.array([y]))[0] for y in ys])
    for x in (0.3, 1.6, -2.0):
        fx = exp_objectives(np.array([x]))[0]
        u_bar = float(np.max(np.min(fx - fys, axis=1)))
        z = (fys - fx) / tau
        v = -float(np.min(tau * np.log(np.exp(z).sum(1))))
        assert u_bar - tau * math.log(2) - 1e-9 <= v <= u_bar + 1e-9
        assert (u_bar == pytest.approx(0.0, abs=1e-9)) == (-1 <= x <= 1)


@pytest.mark.slow
def test_foops_reaches_the_preferred_point_with_the_notes_setting():
    """The note's numpy check: θ = 1, τ = 0.05, l = 2, K = 20, β = 0.05, α = 0.01, γ_t = min(1 + 0.1t, 10), 2000
    outer steps reach x = 0.095 with |H| ≤ 0.003 from ±1 and ±0.5."""
    target = preferred_x()
    for x0 in (1.0, -1.0, 0.5, -0.5):
        run = foops(exp_objectives, np.array([x0]), (5.0, 4.0), 2000)
        assert abs(float(run.x[0]) - target) < 2e-3
        assert abs(preference(run.values[-1], (5.0, 4.0))) <= 0.0035
        assert (run.merit >= -1e-12).all()  # y restarted at x: v_t ≥ 0


@pytest.mark.slow
def test_an_uncapped_gamma_pulls_foops_away_from_the_preferred_point():
    """The note's pitfall: with γ_t growing without bound, x is pulled to {p = 0} (x = 0 here), away from x*."""
    capped = foops(exp_objectives, np.array([1.0]), (5.0, 4.0), 2000)
    uncapped = foops(exp_objectives, np.array([1.0]), (5.0, 4.0), 2000, gamma_cap=math.inf)
    assert abs(preference(uncapped.values[-1], (5, 4))) > 5 * abs(preference(capped.values[-1], (5, 4)))


# --------------------------------------------------------------------------- baselines


def test_constrained_directions_satisfy_the_linearised_constraint():
    rng = np.random.default_rng(4)
    for _ in range(10):
        jac, dh, h = rng.standard_normal((2, 5)), rng.standard_normal(5), float(rng.standard_normal())
        for direction in (ferero_direction, projected_direction):
            w = direction(jac, h, dh, 0.7)
            assert float(dh @ w) == pytest.approx(0.7 * h)


def test_ferero_direction_solves_its_qp():
    """−w minimises max_m <g_m, d> + ||d||²/2 subject to <∇H, d> = −cH: no feasible d on a random search does better."""
    rng = np.random.default_rng(5)
    jac, dh, h, c = rng.standard_normal((2, 3)), rng.standard_normal(3), 0.4, 1.0

    def value(d):
        return float(np.max(jac @ d) + 0.5 * d @ d)

    best = value(-ferero_direction(jac, h, dh, c))
    basis = np.linalg.svd(dh[None])[2][1:]  # the null space of ∇Hᵀ
    d0 = -ferero_direction(jac, h, dh, c)
    for _ in range(3000):
        d = d0 + basis.T @ rng.standard_normal(2) * rng.uniform(0, 1)
        assert value(d) >= best - 1e-9


def test_baselines_on_the_toy():
    problem = Problem(exp_objectives, np.array([1.0]), (5.0, 4.0), 2000)
    target = preferred_x()
    assert abs(FERERO().solve(problem).x[0] - target) < 1e-6
    assert abs(ProjectedMGDA().solve(problem).x[0] - target) < 1e-6
    assert MGDA().solve(problem).x[0] == pytest.approx(1.0)  # already Pareto stationary: MGDA does not move
    ls = LinearScalarisation(weights="sweep").solve(problem)
    assert abs(preference(ls.values[-1], (5, 4))) > 1.0  # the non-convex front: no weight reaches x*
    assert np.array_equal(Start().solve(problem).x, problem.x0)


def test_linear_scalarisation_rejects_an_unknown_weighting():
    with pytest.raises(ValueError, match="weights"):
        LinearScalarisation(weights="uniform")


def test_foops_rejects_bad_constants():
    with pytest.raises(ValueError, match="tau"):
        FOOPS(tau=0.0)


def test_task_scores_an_instance_and_keeps_the_violation_curve():
    instance = exp_toy(context(), dim=1, steps=30)
    out = TASK.evaluate(FERERO(), instance, context())
    assert isinstance(out, Evaluation)
    assert set(out.metrics) == set(TASK.metrics)
    curve = out.curves["violation"]
    assert curve.x[0] == 0 and curve.x[-1] == 30
    assert curve.y[-1] == pytest.approx(out.metrics["violation"])
    f = exp_objectives(FERERO().solve(instance.problems[0]).x)[0]
    assert out.metrics["hypervolume"] == pytest.approx((1 - f[0]) * (1 - f[1]))
