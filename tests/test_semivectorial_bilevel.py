"""The semivectorial-bilevel spec's task (``moo.preference``): the toy's closed forms, its preferred point and
Pareto set, the min-norm weight, the exact 2-D hypervolume, the network's hand-written gradients, the budget of
oracle calls the task counts and enforces, the drawn starts, FOOPS's merit function and gradients (Prop 3.3,
Danskin), the baselines' constrained directions, the loaders' errors, FOOPS on Ex. 3.12 (the note's numpy check),
and the spec's budgets, tuning and claims as issue 29 fixed them."""
from __future__ import annotations

import itertools
import math
from pathlib import Path

import numpy as np
import pytest

from baselines.moo import FERERO, MGDA, LinearScalarisation, ProjectedMGDA, Start, ferero_direction, projected_direction
from harness.tasks.base import Context, DataError
from harness.tasks.evaluation import Evaluation
from harness.tasks.moo.preference import (
    FRONT_TOLERANCE,
    TASK,
    BudgetSpent,
    Problem,
    Run,
    exp_objectives,
    exp_preferred_point,
    exp_toy,
    hypervolume_2d,
    min_norm_weight,
    preference,
    segment_distance,
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
    ({"steps": 0}, "steps"), ({"centre": "zero"}, "centre"), ({"evaluations": 0}, "evaluations"),
    ({"evaluations": 2.5}, "evaluations"), ({"steps": 10, "evaluations": 220}, "give one"), ({"start": "easy"}, "start"),
])
def test_toy_loader_names_the_bad_parameter(params, word):
    with pytest.raises(DataError, match=word):
        exp_toy(context(), **params)


@pytest.mark.parametrize("params, word", [
    ({"train": 2}, "train"), ({"hidden": 0}, "hidden"), ({"canvas": 10, "offset": 4}, "offset"),
    ({"rays": [[-1, 1]]}, "rays"), ({"steps": 3, "evaluations": 21}, "give one"),
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
        assert abs(preference(exp_objectives(run.x)[0], (5.0, 4.0))) <= 0.0035
        assert (run.merit >= -1e-12).all()  # y restarted at x: v_t ≥ 0


@pytest.mark.slow
def test_an_uncapped_gamma_pulls_foops_away_from_the_preferred_point():
    """The note's pitfall: with γ_t growing without bound, x is pulled to {p = 0} (x = 0 here), away from x*."""
    capped = foops(exp_objectives, np.array([1.0]), (5.0, 4.0), 2000)
    uncapped = foops(exp_objectives, np.array([1.0]), (5.0, 4.0), 2000, gamma_cap=math.inf)
    assert abs(preference(exp_objectives(uncapped.x)[0], (5, 4))) > 5 * abs(preference(exp_objectives(capped.x)[0], (5, 4)))


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
    assert abs(preference(exp_objectives(ls.x)[0], (5, 4))) > 1.0  # the non-convex front: no weight reaches x*
    assert np.array_equal(Start().solve(problem).x, problem.x0)


def test_linear_scalarisation_rejects_an_unknown_weighting():
    with pytest.raises(ValueError, match="weights"):
        LinearScalarisation(weights="uniform")


def test_foops_rejects_bad_constants():
    with pytest.raises(ValueError, match="tau"):
        FOOPS(tau=0.0)


def test_task_scores_an_instance_and_keeps_the_violation_curve_against_the_calls_spent():
    instance = exp_toy(context(), dim=1, evaluations=30)
    out = TASK.evaluate(FERERO(), instance, context())
    assert isinstance(out, Evaluation)
    assert set(out.metrics) == set(TASK.metrics)
    curve = out.curves["violation"]
    assert curve.x[0] == 0 and curve.x[-1] == 30 and "oracle calls" in curve.x_label
    assert curve.y[-1] == pytest.approx(out.metrics["violation"])
    f = exp_objectives(FERERO().solve(instance.problems[0]).x)[0]
    assert out.metrics["hypervolume"] == pytest.approx((1 - f[0]) * (1 - f[1]))
    # every method on one grid of calls, |H| of the latest iterate reached: FOOPS's first step costs K + 2 = 22 calls
    budget = exp_toy(context(), dim=1, evaluations=230)
    foops_out = TASK.evaluate(FOOPS(), budget, context())
    foops_curve = foops_out.curves["violation"]
    ferero_curve = TASK.evaluate(FERERO(), budget, context()).curves["violation"]
    assert foops_curve.x == ferero_curve.x and foops_curve.x[0] == 0 and foops_curve.x[-1] == 230
    start_h = abs(preference(exp_objectives(budget.problems[0].x0)[0], (5, 4)))
    assert [y for x, y in zip(foops_curve.x, foops_curve.y) if x < 22] == [start_h] * 4  # x = 0, 6, 12, 18
    assert foops_curve.y[-1] == pytest.approx(foops_out.metrics["violation"])


# --------------------------------------------------------------------------- the budget (issue 29)


EVERY_METHOD = {"foops": FOOPS(), "ls-ray": LinearScalarisation(), "ls-sweep": LinearScalarisation(weights="sweep"),
                "ferero": FERERO(), "pmtl-projected": ProjectedMGDA(), "mgda": MGDA(), "start": Start()}


def test_every_method_spends_the_datasets_budget_of_oracle_calls():
    """One budget for all, in oracle calls: FOOPS takes as many whole outer steps of K + 2 = 22 calls as fit (10 of
    230 calls), each baseline one call a step, the sweep the whole budget for each of its 11 weights, the start none."""
    instance = exp_toy(context(), dim=2, evaluations=230, start="drawn")
    spent = {name: TASK.evaluate(method, instance, context()).metrics["gradient_evaluations"]
             for name, method in EVERY_METHOD.items()}
    assert spent == {"foops": 220, "ls-ray": 230, "ls-sweep": 11 * 230, "ferero": 230, "pmtl-projected": 230,
                     "mgda": 230, "start": 0}
    assert len(FOOPS().solve(instance.problems[0]).values) == 10  # outer steps: 230 // 22


def test_without_a_budget_every_method_takes_the_same_outer_steps():
    """``steps`` alone (the setting before issue 29): every method takes that many outer steps, whatever each costs."""
    instance = exp_toy(context(), dim=1, steps=5)
    assert instance.problems[0].evaluations is None
    assert TASK.evaluate(FOOPS(), instance, context()).metrics["gradient_evaluations"] == 5 * 22
    assert TASK.evaluate(FERERO(), instance, context()).metrics["gradient_evaluations"] == 5
    assert exp_toy(context(), dim=1).problems[0].steps == 2000  # neither given: the former default


class Greedy:
    """One oracle call more than its budget allows."""

    def solve(self, problem):
        for _ in range(problem.outer_steps(1) + 1):
            problem.objectives(problem.x0)
        return Run(problem.x0, np.empty((0, 2)), np.empty(0))


def test_the_task_refuses_a_call_past_the_budget_and_the_cell_fails():
    with pytest.raises(BudgetSpent, match="oracle call 6 is past the budget of 5 calls"):
        TASK.evaluate(Greedy(), exp_toy(context(), dim=1, evaluations=5), context())
    TASK.evaluate(LinearScalarisation(weights="sweep"), exp_toy(context(), dim=1, evaluations=5), context())  # 11 x 5

    class GreedySweep:
        runs = 2  # two runs of the whole budget each: 10 calls, not 11

        def solve(self, problem):
            for _ in range(2 * problem.outer_steps(1) + 1):
                problem.objectives(problem.x0)

    with pytest.raises(BudgetSpent, match="past the budget of 10 calls"):
        TASK.evaluate(GreedySweep(), exp_toy(context(), dim=1, evaluations=5), context())


def test_a_trajectory_that_spends_what_it_did_not_call_is_refused():
    class Boasting:
        def solve(self, problem):
            problem.objectives(problem.x0)
            return Run(problem.x0, np.zeros((2, 2)), np.array([0, 7]))  # claims 7 calls before its 2nd iterate

    from harness.tasks.moo.preference import MethodFailed

    with pytest.raises(MethodFailed, match="spent"):
        TASK.evaluate(Boasting(), exp_toy(context(), dim=1, evaluations=5), context())


# --------------------------------------------------------------------------- the preferred point and the front


@pytest.mark.parametrize("dim, centre", [(1, "ones"), (20, "ones"), (20, "unit"), (3, "unit")])
@pytest.mark.parametrize("ray", [(5.0, 4.0), (1.0, 3.0), (2.0, 1.0)])
def test_the_preferred_point_is_on_the_front_and_on_the_ray(dim, centre, ray):
    shift = 1.0 if centre == "ones" else 1.0 / math.sqrt(dim)
    f_star, s_star = exp_preferred_point(ray, shift, dim)
    x_star = s_star * shift * np.ones(dim)
    f, jac = exp_objectives(x_star, shift)
    assert np.allclose(f, f_star, rtol=0, atol=1e-14)
    assert ray[0] * f_star[0] == pytest.approx(ray[1] * f_star[1], abs=1e-12)
    assert -1.0 < s_star < 1.0 and stationarity(jac) < 1e-12
    g1, g2 = jac  # Pareto stationary: the two gradients antiparallel
    assert float(g1 @ g2) / (np.linalg.norm(g1) * np.linalg.norm(g2)) == pytest.approx(-1.0, abs=1e-12)
    instance = exp_toy(context(), dim=dim, centre=centre, rays=[ray])
    assert np.array_equal(instance.preferred[0], f_star)


def test_the_preferred_point_of_toy_q1_is_the_bisection_root():
    f_star, s_star = exp_preferred_point((5.0, 4.0), 1.0, 1)
    assert s_star == pytest.approx(preferred_x(), abs=1e-12)


class Fixed:
    """Ends at a given point without a call."""

    def __init__(self, x):
        self.x = np.asarray(x, dtype=np.float64)

    def solve(self, problem):
        return Run(self.x, np.empty((0, 2)), np.empty(0))


def test_preferred_distance_tells_the_preferred_point_from_other_roots_of_h_and_the_plateau():
    """H = 0 has a second root at x = 2.2686 on toy-q1 (f = (0.8, 1)), off the front, and |H| = 1 on the plateau
    F = (1, 1): |H| rewards the first, preferred_distance and on_front do not."""
    instance = exp_toy(context(), dim=1, evaluations=10)
    root = TASK.evaluate(Fixed([2.2686]), instance, context()).metrics
    assert root["violation"] < 1e-3 and root["preferred_distance"] > 0.3 and root["on_front"] == 0.0
    plateau = TASK.evaluate(Fixed([6.0]), instance, context()).metrics
    assert plateau["violation"] == pytest.approx(1.0) and plateau["stationarity"] < 1e-10 and plateau["on_front"] == 0.0
    target = TASK.evaluate(Fixed([preferred_x()]), instance, context()).metrics
    assert target["preferred_distance"] < 1e-12 and target["on_front"] == 1.0 and target["stationarity"] < 1e-12


def test_on_front_is_within_one_percent_of_the_segment():
    q = 20
    c = np.ones(q) / math.sqrt(q)
    instance = exp_toy(context(), dim=q, centre="unit")
    assert instance.front_tolerance == pytest.approx(FRONT_TOLERANCE * 1.0)
    side = np.zeros(q)
    side[0], side[1] = 1.0, -1.0
    side /= np.linalg.norm(side)  # orthogonal to c
    assert segment_distance(0.3 * c + 0.005 * side, c) == pytest.approx(0.005)
    assert segment_distance(1.02 * c, c) == pytest.approx(0.02)  # beyond the minimiser, along the line
    assert instance.pareto_distance(0.3 * c + 0.005 * side) <= instance.front_tolerance
    assert instance.pareto_distance(1.02 * c) > instance.front_tolerance
    ones = exp_toy(context(), dim=q)
    assert ones.front_tolerance == pytest.approx(0.01 * math.sqrt(q))  # 1% of ||c||, c = 1_20


def test_the_network_has_no_preferred_point_and_no_front():
    instance = two_digits(context(dataset="two-digits"), train=20, test=10, hidden=2, rays=[[1, 1]], evaluations=7)
    metrics = TASK.evaluate(FERERO(), instance, context(dataset="two-digits")).metrics
    assert "preferred_distance" not in metrics and "on_front" not in metrics
    assert metrics["gradient_evaluations"] == 7


# --------------------------------------------------------------------------- the starts


def test_drawn_starts_spread_along_the_segment_and_a_little_beyond():
    """start: drawn: x0 = u c + spread N(0, I), u ~ U[-1.2, 1.2]; the hard start only drew a sign."""
    along = np.array([exp_toy(context(s), dim=1, spread=0.0, start="drawn").problems[0].x0[0] for s in range(200)])
    assert along.min() >= -1.2 and along.max() <= 1.2
    assert along.min() < -1.0 and along.max() > 1.0 and np.mean(np.abs(along) < 0.5) > 0.3
    q = 20
    c = np.ones(q) / math.sqrt(q)
    x0 = exp_toy(context(3), dim=q, centre="unit", start="drawn").problems[0].x0
    assert np.linalg.norm(x0 - float(x0 @ c) * c) < 1.0  # near the line through ±c


def test_the_hard_start_is_the_former_generator():
    """start: hard (the default) draws what the results before issue 29 were measured from."""
    for seed in range(5):
        rng = context(seed).rng("start")
        sign = 1.0 if rng.random() < 0.5 else -1.0
        former = sign * np.ones(20) + 0.1 * rng.standard_normal(20)
        assert np.array_equal(exp_toy(context(seed), dim=20).problems[0].x0, former)


def test_the_start_is_the_tasks_trivial_answer():
    from harness.registry import default_registry

    assert default_registry().trivial_methods("moo.preference") == ["start"]
    metrics = TASK.evaluate(Start(), exp_toy(context(), dim=1, evaluations=10), context()).metrics
    assert metrics["gradient_evaluations"] == 0


# --------------------------------------------------------------------------- the spec (issue 29's decisions)


SPEC = Path(__file__).resolve().parents[1] / "specs" / "semivectorial-bilevel.yaml"
OUTER_STEPS = {"quick": (500, 60), "default": (2000, 300), "paper": (5000, 2000)}  # FOOPS's (toys, network)


@pytest.mark.parametrize("profile", ["quick", "default", "paper"])
def test_each_budget_is_foops_outer_steps_times_k_plus_two(profile):
    from harness.spec.load import load_spec

    spec = load_spec(SPEC, profile)
    toy_k, net_k = spec.method("foops").params["inner_steps"], spec.method("foops-net").params["inner_steps"]
    for dataset in spec.datasets:
        assert "steps" not in dataset.params
        toy = dataset.name == "exp-toy"
        outer, k = (OUTER_STEPS[profile][0], toy_k) if toy else (OUTER_STEPS[profile][1], net_k)
        assert dataset.params["evaluations"] == outer * (k + 2)
        assert dataset.params.get("start") == ("drawn" if toy else None)


def test_every_toy_method_is_tuned_alike_and_by_the_distance_to_the_preferred_point():
    from harness.spec.load import load_spec

    spec = load_spec(SPEC)
    for dataset in spec.datasets:
        toy = dataset.name == "exp-toy"
        assert spec.tuning_metric(dataset) == ("preferred_distance" if toy else "hypervolume")
        for method_id in dataset.methods:
            method = spec.method(method_id)
            if method.kind == "trivial":
                assert not method.search and method.name == "start"
                continue
            assert method.search and all(space.get("log") for space in method.search.values())
    former = {"lr": 0.1, "alpha": 0.01, "beta": 0.05}  # the hand-set toy values, inside their ranges
    for method_id in ("foops", "ls-sweep", "ferero", "pmtl-projected", "mgda"):
        for name, space in spec.method(method_id).search.items():
            low, high = space["float"]
            assert low < former[name] < high
    assert spec.tuning.trials == 16 and spec.tuning.sampler == "qmc" and spec.tuning.seeds == (0, 1)


def test_the_toy_claims_read_the_distance_to_the_preferred_point():
    from harness.spec.load import load_spec

    claims = {c.id: c for c in load_spec(SPEC).claims}
    scale = math.hypot(5.0, 4.0)  # |(a, -b)|: the former |H| bounds re-expressed
    for claim_id in ("foops-reaches-preferred-point", "foops-reaches-preferred-point-r20-unit"):
        assert claims[claim_id].metric == "preferred_distance"
        assert 0.01 / scale - 1e-5 <= claims[claim_id].at_most <= 0.01 / scale
    assert claims["ls-misses-preferred-point"].metric == "preferred_distance"
    assert claims["ls-misses-preferred-point"].at_least == pytest.approx(0.1 / scale, abs=1e-4)
    assert claims["foops-closer-than-ls"].metric == "preferred_distance"
    for stationary, front in (("foops-pareto-stationary", "foops-on-front"),
                              ("foops-pareto-stationary-r20-unit", "foops-on-front-r20-unit")):
        assert front in claims[stationary].says and "Condition" in claims[stationary].says
        assert (claims[front].metric, claims[front].at_least) == ("on_front", 1.0)
        assert claims[front].datasets == claims[stationary].datasets
