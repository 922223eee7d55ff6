"""design.factorial: Σ(d) and its gradient, the two estimators (the paper's truncated OLS and OLS) with their exact
risks, the general fraction's construction and orthogonality, the active rule's objectives, the loader's errors, the
chance level, and cells end to end."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from baselines.factorial_design import (FractionalFactorial, PerturbedDosage, RandomDosage, UniformDosage, fraction,
                                        generators)
from harness.tasks.base import Context, DataError
from harness.tasks.design.factorial import (
    TASK,
    DesignProblem,
    boolean_interactions,
    combinations,
    expected_information,
    expected_information_gradient,
    features,
    fit,
    floor_risk,
    interaction_sets,
    theory_risk,
    truncated_fit,
)
from harness.tasks.evaluation import Evaluation
from implementations.factorial_design import (ActiveLambdaMin, ActiveTrace, HalfDosage, SupplyUniform, lambda_min_objective,
                                              optimise_dosage, trace_objective)


def _all_combinations(p):
    return np.array(list(itertools.product((-1.0, 1.0), repeat=p)))


def test_interaction_sets_count_every_subset_up_to_k():
    sets = interaction_sets(10, 2)
    assert len(sets) == 56  # the paper note: p = 10, k = 2 gives K = 56
    assert sets[0] == () and len(set(sets)) == 56 and max(map(len, sets)) == 2
    assert len(interaction_sets(15, 2)) == 121


def test_features_are_the_parities():
    x = np.array([[1.0, -1.0, -1.0], [-1.0, -1.0, 1.0]])
    phi = features(x, [(), (0,), (1, 2), (0, 1, 2)])
    assert phi.tolist() == [[1, 1, 1, 1], [1, -1, -1, 1]]


def test_expected_information_is_the_exact_expectation_over_the_cube():
    p, k = 4, 2
    sets = interaction_sets(p, k)
    d = np.array([0.2, 0.5, 0.7, 0.9])
    cube = _all_combinations(p)
    weights = np.prod(np.where(cube > 0, d, 1 - d), axis=1)  # product Bernoulli, P(x_i = +1) = d_i
    phi = features(cube, sets)
    exact = (phi * weights[:, None]).T @ phi
    assert np.allclose(expected_information(d, sets), exact, atol=1e-12)


def test_expected_information_has_trace_k_and_is_the_identity_at_half():
    sets = interaction_sets(6, 2)
    rng = np.random.default_rng(0)
    for d in rng.uniform(0, 1, size=(5, 6)):
        assert np.trace(expected_information(d, sets)) == pytest.approx(len(sets))
    assert np.allclose(expected_information(np.full(6, 0.5), sets), np.eye(len(sets)))


def test_half_minimises_the_trace_of_the_inverse_information():
    """tr Σ = K, so Σ 1/λ_i ≥ K with equality iff Σ = I (Cauchy–Schwarz): d = ½ is the passive optimum."""
    sets = interaction_sets(5, 2)
    rng = np.random.default_rng(1)
    at_half = np.trace(np.linalg.inv(expected_information(np.full(5, 0.5), sets)))
    assert at_half == pytest.approx(len(sets))
    for d in rng.uniform(0.05, 0.95, size=(20, 5)):
        assert np.trace(np.linalg.inv(expected_information(d, sets))) > at_half


def test_expected_information_gradient_matches_finite_differences():
    sets = interaction_sets(5, 2)
    d = np.array([0.3, 0.5, 0.62, 0.8, 0.45])  # 0.5 included: the product excluding i must not divide by 2d_i − 1
    grad = expected_information_gradient(d, sets)
    eps = 1e-6
    for i in range(5):
        step = np.eye(5)[i] * eps
        numeric = (expected_information(d + step, sets) - expected_information(d - step, sets)) / (2 * eps)
        assert np.allclose(grad[i], numeric, atol=1e-8)


@pytest.mark.parametrize("objective", [trace_objective, lambda_min_objective])
def test_active_objectives_gradients_match_finite_differences(objective):
    sets = interaction_sets(6, 2)
    rng = np.random.default_rng(2)
    past = features(np.where(rng.random((40, 6)) < 0.5, 1.0, -1.0), sets)
    information = past.T @ past / 40
    d = rng.uniform(0.2, 0.8, 6)
    value, grad = objective(d, sets, information)
    eps = 1e-6
    numeric = [(objective(d + eps * e, sets, information)[0] - objective(d - eps * e, sets, information)[0]) / (2 * eps)
               for e in np.eye(6)]
    assert np.allclose(grad, numeric, rtol=1e-5, atol=1e-8)


def test_active_rule_is_half_without_past_and_moves_away_from_it_to_balance_the_past():
    sets = interaction_sets(3, 1)
    problem = DesignProblem(3, 1, 16, 2, sets)
    assert ActiveTrace().design(problem, np.zeros((0, 3))).tolist() == [0.5, 0.5, 0.5]
    # the past units all had treatment 0 on: the next round should lean towards it off
    past = np.column_stack([np.ones(16), _all_combinations(3)[:, 1:].repeat(4, axis=0)[:16]])
    d = ActiveTrace().design(problem, past)
    assert d[0] < 0.45 and np.allclose(d[1:], 0.5, atol=0.05)
    phi = features(past, sets)
    information = phi.T @ phi / 16
    assert trace_objective(d, sets, information)[0] < trace_objective(np.full(3, 0.5), sets, information)[0]
    assert ActiveLambdaMin().design(problem, past)[0] < 0.45


def test_optimiser_stays_at_half_where_half_is_the_optimum():
    sets = interaction_sets(4, 2)
    d = optimise_dosage(trace_objective, sets, np.eye(len(sets)), 4)
    assert np.allclose(d, 0.5, atol=1e-6)


@pytest.mark.parametrize("p, k", [(3, 2), (4, 2), (5, 2), (6, 2), (7, 2), (8, 2), (5, 1), (8, 1), (10, 2), (11, 2),
                                  (12, 2), (9, 1), (6, 3), (7, 3)])
def test_fractions_are_orthogonal_up_to_k_way_interactions(p, k):
    runs = fraction(p, k)
    phi = features(runs, interaction_sets(p, k))
    assert np.array_equal(phi.T @ phi, len(runs) * np.eye(phi.shape[1]))
    assert len({tuple(r) for r in runs}) == len(runs)  # distinct runs: a fraction, not repeats


@pytest.mark.parametrize("p, resolution, runs", [(5, 5, 16), (6, 5, 32), (8, 5, 64), (9, 5, 128), (10, 5, 128),
                                                 (11, 5, 128), (12, 5, 256), (7, 7, 64), (7, 3, 8), (4, 5, 16)])
def test_the_search_finds_the_smallest_regular_fraction_of_the_resolution(p, resolution, runs):
    """The run counts of the minimum regular fractions (resolution V: 5 factors in 16 runs, 11 in 128; VII: 7 in
    64; III: 7 in 8)."""
    base, words = generators(p, resolution)
    assert 2 ** base == runs and len(words) == p - base
    assert all(bin(w).count("1") >= resolution - 1 for w in words)


def test_the_search_gives_the_papers_fractions():
    """2^{5−1}_V with E = ABCD and 2^{8−2}_V with G = ABCD, H = ABEF, the paper note's fractions."""
    assert generators(5, 5) == (4, (0b1111,))
    assert generators(8, 5) == (6, (0b001111, 0b110011))
    runs = fraction(5, 1)
    assert np.array_equal(runs[:, 4], runs[:, :4].prod(axis=1))


def test_resolution_is_the_shortest_defining_word():
    """Resolution III for p = 7 in 8 runs: main effects orthogonal, two-way interactions aliased with them."""
    runs = fraction(7, 1, resolution=3)
    assert len(runs) == 8
    main = features(runs, interaction_sets(7, 1))
    assert np.array_equal(main.T @ main, 8 * np.eye(8))
    assert np.linalg.matrix_rank(features(runs, interaction_sets(7, 2))) < len(interaction_sets(7, 2))


def test_a_fraction_is_not_resolution_v_for_three_way_interactions():
    phi = features(fraction(5, 1), interaction_sets(5, 3))  # E = ABCD aliases every two-way with a three-way
    assert np.linalg.matrix_rank(phi) < phi.shape[1]


def test_fraction_fills_a_round_it_cannot_tile_from_one_more_replicate():
    """200 units of the 128-run 2^{10−3}_V: one replicate and 72 distinct runs of another, drawn from the method's
    stream; the round is no longer orthogonal. Fewer units than runs: a subset of the runs."""
    sets = interaction_sets(10, 2)
    problem = DesignProblem(10, 2, 200, 1, sets, rng=np.random.default_rng(0))
    x = FractionalFactorial().design(problem, np.zeros((0, 10)))
    runs = fraction(10, 2)
    assert x.shape == (200, 10) and np.array_equal(x[:128], runs)
    assert len({tuple(r) for r in x[128:]}) == 72 and {tuple(r) for r in x[128:]} <= {tuple(r) for r in runs}
    phi = features(x, sets)
    assert not np.allclose(phi.T @ phi, 200 * np.eye(len(sets)))
    again = FractionalFactorial().design(problem, np.zeros((0, 10)))
    assert not np.array_equal(again[128:], x[128:])  # drawn afresh each round
    small = FractionalFactorial().design(DesignProblem(5, 1, 10, 1, interaction_sets(5, 1),
                                                       rng=np.random.default_rng(1)), np.zeros((0, 5)))
    assert small.shape == (10, 5) and len({tuple(r) for r in small}) == 10


def test_fit_is_ordinary_least_squares_with_its_exact_risk():
    rng = np.random.default_rng(3)
    sets = interaction_sets(4, 1)
    x = np.where(rng.random((30, 4)) < 0.5, 1.0, -1.0)
    phi = features(x, sets)
    beta = rng.uniform(-1, 1, len(sets))
    y = phi @ beta + 2.0 * rng.standard_normal(30)
    estimate, risk, singular = fit(phi.T @ phi, phi.T @ y, beta, 2.0)
    assert not singular
    assert np.allclose(estimate, np.linalg.lstsq(phi, y, rcond=None)[0])
    assert risk == pytest.approx(4.0 * np.trace(np.linalg.inv(phi.T @ phi)))


def test_fit_falls_back_to_minimum_norm_with_the_bias_in_its_risk():
    rng = np.random.default_rng(4)
    sets = interaction_sets(4, 2)  # K = 11 > 6 units: singular
    phi = features(np.where(rng.random((6, 4)) < 0.5, 1.0, -1.0), sets)
    beta = rng.uniform(-1, 1, len(sets))
    y = phi @ beta + rng.standard_normal(6)
    estimate, risk, singular = fit(phi.T @ phi, phi.T @ y, beta, 1.0)
    assert singular
    assert np.allclose(estimate, np.linalg.pinv(phi) @ y)
    projection = np.linalg.pinv(phi) @ phi
    expected = np.sum((beta - projection @ beta) ** 2) + np.trace(np.linalg.pinv(phi.T @ phi))
    assert risk == pytest.approx(expected)


def test_fit_risk_is_the_monte_carlo_mean_error_under_ridge():
    rng = np.random.default_rng(5)
    sets = interaction_sets(4, 2)
    phi = features(np.where(rng.random((8, 4)) < 0.5, 1.0, -1.0), sets)
    beta = rng.uniform(-1, 1, len(sets))
    gram = phi.T @ phi
    _, risk, singular = fit(gram, phi.T @ (phi @ beta), beta, 0.5, "ridge", 0.1)
    noise = rng.standard_normal((20000, 8))
    errors = [np.sum((fit(gram, phi.T @ (phi @ beta + 0.5 * e), beta, 0.5, "ridge", 0.1)[0] - beta) ** 2)
              for e in noise[:4000]]
    assert singular
    assert np.mean(errors) == pytest.approx(risk, rel=0.05)


def test_theory_and_floor_agree_for_an_orthogonal_design_and_bound_any_other():
    sets = interaction_sets(5, 1)
    phi = features(fraction(5), sets)
    assert theory_risk(2 * phi.T @ phi, 5.0) == pytest.approx(floor_risk(5.0, 6, 32))
    rng = np.random.default_rng(6)
    for _ in range(10):
        x = np.where(rng.random((32, 5)) < 0.5, 1.0, -1.0)
        g = features(x, sets).T @ features(x, sets)
        assert theory_risk(g, 5.0) >= floor_risk(5.0, 6, 32) * (1 - 1e-12)
    assert theory_risk(np.zeros((6, 6)), 1.0) == math.inf


def test_combinations_draws_units_from_dosages_and_checks_what_a_design_returns():
    uniforms = np.array([[0.1, 0.6], [0.4, 0.2]])
    x, dosages = combinations(np.array([0.5, 0.5]), uniforms, "D")
    assert x.tolist() == [[1, -1], [1, 1]] and dosages.tolist() == [0.5, 0.5]
    with pytest.raises(ValueError, match=r"expected values in \[0, 1\]"):
        combinations(np.array([1.2, 0.5]), uniforms, "D")
    with pytest.raises(ValueError, match="entries other than ±1"):
        combinations(np.array([[1, 0], [1, 1]]), uniforms, "D")
    with pytest.raises(ValueError, match=r"expected dosages \(2,\) or combinations \(2, 2\)"):
        combinations(np.ones(3), uniforms, "D")


@pytest.mark.parametrize("params, word", [
    ({"p": 0}, "p = 0"), ({"k": 4, "p": 3}, "k = 4 > p = 3"), ({"units": 2, "rounds": 2}, "units × rounds = 4 < K = 6"),
    ({"sigma": 0.0}, "sigma = 0.0"), ({"fallback": "pinv"}, "fallback = 'pinv'"), ({"trials": 1.5}, "trials = 1.5"),
    ({"p": 40, "k": 3}, "p = 40, k = 3 give K = 10701"), ({"ridge": -1.0}, "ridge = -1.0"), ({"scale": 0}, "scale = 0"),
    ({"bound": 0.0}, "bound = 0.0"),
])
def test_loader_rejects_bad_parameters_naming_them(params, word):
    with pytest.raises(DataError, match=f"boolean-interactions: {word}"):
        boolean_interactions(Context(seed=0), **params)


def test_loader_draws_the_same_instance_per_seed_and_split_and_another_elsewhere():
    a = boolean_interactions(Context(seed=0, dataset="x"), trials=3)
    b = boolean_interactions(Context(seed=0, dataset="x"), trials=3)
    c = boolean_interactions(Context(seed=1, dataset="x"), trials=3)
    v = boolean_interactions(Context(seed=0, split="val", dataset="x"), trials=3)
    assert np.array_equal(a.betas, b.betas) and np.array_equal(a.uniforms, b.uniforms)
    assert not np.array_equal(a.betas, c.betas) and not np.array_equal(a.noise, v.noise)
    assert a.betas.shape == (3, 6) and a.uniforms.shape == (3, 10, 16, 5) and np.abs(a.betas).max() <= 1


def test_evaluate_scores_the_fraction_at_the_floor_and_returns_error_curves():
    context = Context(seed=0, dataset="t")
    data = boolean_interactions(context, p=5, k=1, units=16, rounds=3, sigma=5.0, trials=4)
    out = TASK.evaluate(FractionalFactorial(), data, context)
    assert isinstance(out, Evaluation)
    assert out.metrics["risk_over_floor"] == pytest.approx(1.0)
    assert out.metrics["final_risk"] == pytest.approx(floor_risk(5.0, 6, 48))
    assert out.metrics["singular_rounds"] == 0.0
    assert out.metrics["risk_over_floor_min"] == pytest.approx(1.0)
    assert list(out.curves["risk_ols"].y) == pytest.approx([floor_risk(5.0, 6, 16 * r) for r in (1, 2, 3)])
    assert list(out.curves["error_ols"].theory) == pytest.approx(list(out.curves["risk_ols"].y))
    # truncated OLS with B² = K = 6: round 1's tr G⁻¹ = 6/16 > B²/σ² = 0.24 returns 0 (risk ‖β‖²); rounds 2, 3 fit
    norms = float(np.mean(np.sum(data.betas ** 2, axis=1)))
    assert list(out.curves["risk"].y) == pytest.approx([norms, floor_risk(5.0, 6, 32), floor_risk(5.0, 6, 48)])
    assert list(out.curves["error"].y)[0] == pytest.approx(norms)
    assert out.metrics["truncated_rounds"] == pytest.approx(1 / 3)
    assert list(out.curves["risk"].theory) == pytest.approx([6.0, floor_risk(5.0, 6, 32), floor_risk(5.0, 6, 48)])
    assert out.metrics["error_area"] == pytest.approx(sum(out.curves["error"].y))
    assert out.metrics["final_error"] == pytest.approx(out.curves["error"].y[-1])
    assert out.metrics["error_area_ols"] == pytest.approx(sum(out.curves["error_ols"].y))
    assert out.metrics["final_error"] == pytest.approx(out.metrics["final_error_ols"])  # the last round fits


def test_truncated_fit_is_ols_below_the_threshold_and_zero_above_it():
    """The paper's §4.1 rule: β̂ = G⁻¹Xᵀy where Σ 1/λ_i(G) ≤ B²/σ², else 0; the threshold read on both sides."""
    rng = np.random.default_rng(8)
    sets = interaction_sets(4, 1)
    phi = features(np.where(rng.random((20, 4)) < 0.5, 1.0, -1.0), sets)
    gram = phi.T @ phi
    beta = rng.uniform(-1, 1, len(sets))
    y = phi @ beta + 2.0 * rng.standard_normal(20)
    trace = float(np.trace(np.linalg.inv(gram)))
    at = 2.0 * math.sqrt(trace)  # B with B²/σ² = tr G⁻¹ exactly (σ = 2)
    estimate, risk, zero = truncated_fit(gram, phi.T @ y, beta, 2.0, at * (1 + 1e-9))
    assert not zero and np.allclose(estimate, np.linalg.lstsq(phi, y, rcond=None)[0])
    assert risk == pytest.approx(4.0 * trace)
    estimate, risk, zero = truncated_fit(gram, phi.T @ y, beta, 2.0, at * (1 - 1e-9))
    assert zero and not estimate.any() and risk == pytest.approx(float(beta @ beta))
    singular = features(np.ones((6, 4)), sets)  # every unit the same combination: rank 1
    estimate, risk, zero = truncated_fit(singular.T @ singular, singular.T @ np.ones(6), beta, 1.0, 1e6)
    assert zero and not estimate.any()


def test_truncated_fit_risk_lies_within_lemma_4_1_and_is_the_monte_carlo_mean():
    """Lemma 4.1: min{σ² Σ 1/λ_i, ‖β‖²} ≤ E_ε‖β̂ − β‖² ≤ min{σ² Σ 1/λ_i, B²} for ‖β‖ ≤ B, on designs that fall on
    either side of the threshold; and the risk the task records is the mean error over noise draws."""
    rng = np.random.default_rng(9)
    sets = interaction_sets(5, 1)
    sides = set()
    for units in (7, 8, 10, 14, 20, 40):
        phi = features(np.where(rng.random((units, 5)) < 0.5, 1.0, -1.0), sets)
        gram = phi.T @ phi
        lam = np.linalg.eigvalsh(gram)
        trace = math.inf if lam[0] <= 1e-9 * lam[-1] else float(np.sum(1 / lam))
        beta = rng.uniform(-1, 1, len(sets))
        sigma, bound = 2.0, math.sqrt(len(sets))
        _, risk, zero = truncated_fit(gram, phi.T @ (phi @ beta), beta, sigma, bound)
        sides.add(zero)
        assert min(sigma**2 * trace, beta @ beta) - 1e-12 <= risk <= min(sigma**2 * trace, bound**2) + 1e-12
        errors = [np.sum((truncated_fit(gram, phi.T @ (phi @ beta + sigma * e), beta, sigma, bound)[0] - beta) ** 2)
                  for e in rng.standard_normal((3000, units))]
        assert np.mean(errors) == pytest.approx(risk, rel=0.08)
    assert sides == {True, False}


def test_chance_is_the_zero_estimates_expected_error():
    level = TASK.chance("boolean-interactions", {"p": 10, "k": 2, "rounds": 3, "scale": 1.0})
    assert level["final_error"] == pytest.approx(56 / 3) and level["error_area"] == pytest.approx(56.0)
    betas = boolean_interactions(Context(seed=0, dataset="t"), p=10, k=2, units=100, rounds=1, trials=4000).betas
    assert np.mean(np.sum(betas**2, axis=1)) == pytest.approx(level["final_risk"], rel=0.01)
    assert TASK.chance("other", {}) == {}


def test_bound_defaults_to_the_smallest_that_every_draw_satisfies():
    data = boolean_interactions(Context(seed=0, dataset="t"), p=5, k=1, scale=2.0, trials=50)
    assert data.bound == pytest.approx(2.0 * math.sqrt(6))
    assert np.sqrt(np.sum(data.betas**2, axis=1)).max() <= data.bound
    assert boolean_interactions(Context(seed=0, dataset="t"), bound=3.0).bound == 3.0


def test_singular_fits_count_every_trial_under_truncated_ols():
    """Random dosages at n/K = 2.7 leave most fits singular: OLS falls back, truncated OLS returns 0, and the
    headline error averages every trial (zero-estimate trials at ‖β‖²) while risk_over_floor leaves them out."""
    context = Context(seed=0, dataset="t")
    data = boolean_interactions(context, p=6, k=2, units=60, rounds=1, trials=30)
    out = TASK.evaluate(RandomDosage(), data, context).metrics
    assert 0 < out["singular_rounds"] <= out["truncated_rounds"] < 1
    assert out["risk_over_floor_min"] >= 1.0 and out["risk_over_floor"] >= out["risk_over_floor_min"]
    assert out["final_risk"] <= np.mean(np.sum(data.betas**2, axis=1)) + 21 * 1.0  # each trial ≤ min(σ²tr, B²)


def test_common_random_numbers_make_dosage_half_and_uniform_half_identical():
    context = Context(seed=3, dataset="t")
    data = boolean_interactions(context, p=4, k=2, units=40, rounds=2, trials=3)
    a = TASK.evaluate(HalfDosage(), data, context).metrics
    b = TASK.evaluate(UniformDosage(dosage=0.5), data, context).metrics
    c = TASK.evaluate(UniformDosage(dosage=0.3), data, context).metrics
    assert a == b and a != c


def test_a_design_that_never_identifies_beta_fails_the_cell():
    context = Context(seed=0, dataset="t")
    data = boolean_interactions(context, p=3, k=1, units=8, rounds=2, trials=2)
    with pytest.raises(ValueError, match="singular after the last round in all 2 trials"):
        TASK.evaluate(UniformDosage(dosage=1.0), data, context)


def test_random_dosage_draws_from_the_methods_stream():
    problem = DesignProblem(4, 1, 8, 1, interaction_sets(4, 1), rng=np.random.default_rng(0))
    d = RandomDosage().design(problem, np.zeros((0, 4)))
    assert d.shape == (4,) and np.all((0 <= d) & (d <= 1))
    assert d.tolist() == np.random.default_rng(0).random(4).tolist()


def test_supply_uniform_spends_the_supply_evenly_and_is_half_without_a_limit():
    sets = interaction_sets(8, 1)
    assert SupplyUniform().design(DesignProblem(8, 1, 10, 1, sets, 2.0), np.zeros((0, 8))).tolist() == [0.25] * 8
    assert SupplyUniform().design(DesignProblem(8, 1, 10, 1, sets, 6.0), np.zeros((0, 8))).tolist() == [0.5] * 8
    assert SupplyUniform().design(DesignProblem(8, 1, 10, 1, sets), np.zeros((0, 8))).tolist() == [0.5] * 8


def test_uniform_supply_is_optimal_for_main_effects_among_dosages_with_the_same_total():
    """§5.1 for k = 1: under Σd = L < p/2, d = L/p minimises tr Σ(d)⁻¹."""
    sets = interaction_sets(6, 1)
    at_uniform = np.trace(np.linalg.inv(expected_information(np.full(6, 2.0 / 6), sets)))
    rng = np.random.default_rng(7)
    for _ in range(20):
        d = np.full(6, 2.0 / 6) + 0.2 * (rng.dirichlet(np.ones(6)) - 1 / 6)
        assert np.trace(np.linalg.inv(expected_information(d, sets))) > at_uniform


def test_perturbed_dosage_keeps_the_total_at_the_given_distance():
    problem = DesignProblem(7, 1, 10, 1, interaction_sets(7, 1), 2.0, np.random.default_rng(0))
    d = PerturbedDosage(distance=0.1).design(problem, np.zeros((0, 7)))
    assert d.sum() == pytest.approx(2.0) and np.abs(d - 2.0 / 7).max() == pytest.approx(0.1)
    assert sorted(np.round(d - 2.0 / 7, 12)) == [-0.1] * 3 + [0.0] + [0.1] * 3
    free = DesignProblem(4, 1, 10, 1, interaction_sets(4, 1), None, np.random.default_rng(0))
    assert sorted(PerturbedDosage(distance=0.2).design(free, np.zeros((0, 4))).round(12)) == [0.3, 0.3, 0.7, 0.7]
    with pytest.raises(ValueError, match=r"perturbed-dosage: distance = 0.3; expected 0 … 0.25"):
        PerturbedDosage(distance=0.3).design(DesignProblem(8, 1, 10, 1, (), 2.0, np.random.default_rng(0)), None)


def test_a_design_beyond_the_supply_fails_the_cell():
    context = Context(seed=0, dataset="t")
    data = boolean_interactions(context, p=8, k=1, units=64, rounds=1, trials=1, supply=2.0)
    with pytest.raises(ValueError, match="round 1 uses 4 treatments per unit on average, beyond the supply 2"):
        TASK.evaluate(HalfDosage(), data, context)
    with pytest.raises(ValueError, match="uses 4 treatments per unit on average, beyond the supply 2"):
        TASK.evaluate(FractionalFactorial(), data, context)
    assert TASK.evaluate(SupplyUniform(), data, context).metrics["singular_rounds"] == 0.0
    with pytest.raises(DataError, match=r"boolean-interactions: supply = 9.0; expected a number in \(0, p = 8\]"):
        boolean_interactions(context, p=8, k=1, supply=9.0)
