"""gp.regression: the bounds' formulas and ordering, the uncollapsed forms against the collapsed ones, the loaders."""
from __future__ import annotations

import math

import numpy as np
import pytest

from harness.tasks.base import Context, DataError, DataUnavailable
from harness.tasks.gp.regression import (
    TASK,
    arm_distance,
    diabetes_gp,
    exact_log_marginal,
    gaussian_log_density,
    kin_arm,
    read_regression_csv,
    snelson_like,
    uci_csv,
    write_regression_csv,
)

torch = pytest.importorskip("torch")
pytest.importorskip("gpytorch")

from baselines.gp import SVGP, ArtemevSGPR, ExactGP, TitsiasSGPR  # noqa: E402  (needs torch at fit time)
from components.sparse_gp_torch import (  # noqa: E402
    collapsed_terms,
    exact_settings,
    make_kernel,
    sgpr_predict,
    titsias_regulariser,
)
from implementations.tight_sgp import TightSGPR, TightSVGP, tight_correction, tight_regulariser  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")

F64 = torch.float64


def artemev(d, noise):
    return ArtemevSGPR().regulariser(d, noise)


def problem(seed: int):
    """A random regression problem with random hyper-parameters and inducing inputs (float64)."""
    rng = np.random.default_rng(seed)
    n, m, dim = int(rng.integers(20, 60)), int(rng.integers(2, 8)), int(rng.integers(1, 4))
    x = torch.as_tensor(rng.uniform(-2, 2, size=(n, dim)), dtype=F64)
    y = torch.as_tensor(np.sin(2 * x.numpy()).sum(1) + 0.3 * rng.standard_normal(n), dtype=F64)
    z = torch.as_tensor(rng.uniform(-2, 2, size=(m, dim)), dtype=F64)
    init = {"lengthscale": float(rng.uniform(0.2, 2.0)), "outputscale": float(rng.uniform(0.3, 3.0)), "noise": 0.1}
    noise = torch.tensor(float(10 ** rng.uniform(-3, 0)), dtype=F64)
    return x, y, z, make_kernel(dim, init), noise, init


def exact(x, y, init, noise, dim):
    ls = torch.full((dim,), init["lengthscale"], dtype=F64)
    return float(exact_log_marginal(x, y, ls, torch.tensor(init["outputscale"], dtype=F64), noise))


def training_set(x, y, z, init, *, iterations=5, lr=0.05, batch_size=256, lbfgs_iterations=1000):
    from harness.tasks.gp.regression import TrainingSet

    return TrainingSet(x.numpy(), y.numpy(), z.numpy(), dict(init), iterations, lr, batch_size, lbfgs_iterations)


# --------------------------------------------------------------------------- the bounds


@pytest.mark.parametrize("seed", range(12))
def test_exact_ge_new_ge_artemev_ge_titsias_on_random_problems(seed):
    x, y, z, kernel, noise, init = problem(seed)
    with torch.no_grad():
        terms = collapsed_terms(kernel, z, x, y, noise, 1e-8)
        new = float(terms.dtc + tight_regulariser(terms.d, noise))
        art = float(terms.dtc + artemev(terms.d, noise))
        old = float(terms.dtc + titsias_regulariser(terms.d, noise))
    full = exact(x, y, init, noise, x.shape[1])
    tol = 1e-7 * max(1.0, abs(full))
    assert full >= new - tol and new >= art - tol and art >= old - tol, (full, new, art, old)
    assert new > old  # strictly, since some d_i > 0 with M < N


def test_the_dtc_term_is_the_gaussian_log_density_under_q_plus_noise():
    x, y, z, kernel, noise, _ = problem(3)
    with torch.no_grad():
        terms = collapsed_terms(kernel, z, x, y, noise, 0.0)
        kuf = kernel(z, x).to_dense()
        q = kuf.T @ torch.linalg.solve(kernel(z).to_dense(), kuf)
        dense = torch.distributions.MultivariateNormal(torch.zeros_like(y), q + noise * torch.eye(len(y), dtype=F64))
        assert float(terms.dtc) == pytest.approx(float(dense.log_prob(y)), rel=1e-9)
        assert torch.allclose(terms.d, (kernel(x, diag=True) - q.diagonal()).clamp_min(0), atol=1e-10)


def test_every_bound_is_the_exact_marginal_likelihood_when_the_inducing_inputs_are_the_training_inputs():
    rng = np.random.default_rng(0)
    x = torch.as_tensor(np.linspace(-3, 3, 15)[:, None], dtype=F64)
    y = torch.as_tensor(rng.standard_normal(15), dtype=F64)
    init = {"lengthscale": 0.8, "outputscale": 1.3, "noise": 0.1}
    kernel, noise = make_kernel(1, init), torch.tensor(0.2, dtype=F64)
    with torch.no_grad():
        terms = collapsed_terms(kernel, x.clone(), x, y, noise, 0.0)
        full = exact(x, y, init, noise, 1)
        assert float(terms.d.max()) < 1e-9
        for regulariser in (tight_regulariser, artemev, titsias_regulariser):
            assert float(terms.dtc + regulariser(terms.d, noise)) == pytest.approx(full, abs=1e-7)
        # and the SGPR predictive is the exact GP's
        x_new = torch.as_tensor([[-2.5], [0.1], [2.9]], dtype=F64)
        mean, var = sgpr_predict(kernel, x.clone(), terms, x_new)
        k = kernel(x).to_dense() + noise * torch.eye(15, dtype=F64)
        ks = kernel(x, x_new).to_dense()
        assert torch.allclose(mean, ks.T @ torch.linalg.solve(k, y), atol=1e-8)
        exact_var = kernel(x_new, diag=True) - (ks * torch.linalg.solve(k, ks)).sum(0)
        assert torch.allclose(var, exact_var, atol=1e-8)


def test_trace_terms_by_hand():
    d, noise = torch.tensor([0.0, 1.0, 3.0], dtype=F64), torch.tensor(0.5, dtype=F64)
    assert float(titsias_regulariser(d, noise)) == pytest.approx(-0.5 * 4.0 / 0.5)
    assert float(tight_regulariser(d, noise)) == pytest.approx(-0.5 * (math.log(1) + math.log(3) + math.log(7)))
    assert float(artemev(d, noise)) == pytest.approx(-0.5 * 3 * math.log(1 + 4.0 / 1.5))
    correction = tight_correction(d, noise)
    assert torch.allclose(correction, 0.5 * d / noise - 0.5 * torch.log1p(d / noise))
    assert float(correction.min()) >= 0.0


def test_titsias_by_formula_equals_gpytorch_inducing_point_kernel():
    x, y, z, _, _, init = problem(5)
    fitted = TitsiasSGPR().build(training_set(x, y, z, init), Context(seed=0))
    with fitted.settings(), torch.no_grad():
        reference = fitted.bound()  # gpytorch's ExactMarginalLogLikelihood / N
        kernel = fitted.model.covar_module.base_kernel
        noise = fitted.likelihood.noise.squeeze()
        terms = collapsed_terms(kernel, z, x, y, noise, 0.0)
        mine = float(terms.dtc + titsias_regulariser(terms.d, noise)) / len(y)
    assert mine == pytest.approx(reference, rel=1e-8)


@pytest.mark.parametrize("collapsed, uncollapsed", [(TitsiasSGPR, SVGP), (TightSGPR, TightSVGP)])
def test_the_uncollapsed_bound_at_its_optimal_q_is_the_collapsed_bound(collapsed, uncollapsed):
    x, y, z, _, _, init = problem(7)
    train, context = training_set(x, y, z, init), Context(seed=0)
    values = []
    for cls in (collapsed, uncollapsed):
        model = cls().build(train, context)
        with model.settings():
            values.append(model.bound_at_init())
    assert values[1] == pytest.approx(values[0], rel=1e-6)
    # below the optimum: any other q(u) gives less (gpytorch's initial q(u) here)
    model = uncollapsed().build(train, context)
    with model.settings():
        assert model.bound() < values[0]


def test_minibatch_objective_averages_to_the_full_objective_over_an_epoch():
    x, y, z, _, _, init = problem(2)
    n = (len(y) // 4) * 4
    train = training_set(x[:n], y[:n], z, init, batch_size=n // 4)
    model = TightSVGP().build(train, Context(seed=1))
    with model.settings(), torch.no_grad():
        model.bound()  # gpytorch initialises q(u) on the first call
        losses = [float(model.step_loss()) for _ in range(4)]  # one epoch, without replacement
        assert -np.mean(losses) == pytest.approx(model.bound(), rel=1e-10)


def test_training_raises_each_bound_and_keeps_the_ordering_after_fit():
    x, y, z, _, _, init = problem(4)
    train, context = training_set(x, y, z, init, iterations=250, lbfgs_iterations=30), Context(seed=0)
    for cls in (TightSGPR, TitsiasSGPR, SVGP, ExactGP):
        fitted = cls().fit(train, context)
        assert fitted.bound > fitted.initial_bound, cls.__name__
        assert fitted.training.name == "bound" and fitted.training.final == fitted.bound
        mean, var = fitted.predict(x.numpy()[:5])
        assert mean.shape == (5,) and (var >= 0).all()


# --------------------------------------------------------------------------- the task and its data


def test_the_seed_draws_the_instance_and_m_does_not():
    a = kin_arm(Context(seed=0, dataset="kin-m8"), n_train=30, n_val=5, n_test=10, num_inducing=4)
    b = kin_arm(Context(seed=0, dataset="kin-m16"), n_train=30, n_val=5, n_test=10, num_inducing=8)
    c = kin_arm(Context(seed=1, dataset="kin-m8"), n_train=30, n_val=5, n_test=10, num_inducing=4)
    v = kin_arm(Context(seed=0, dataset="kin-m8", split="val"), n_train=30, n_val=5, n_test=10, num_inducing=4)
    assert np.array_equal(a.train.x, b.train.x) and np.array_equal(a.test_y, b.test_y)
    assert a.train.inducing.shape == (4, 8) and b.train.inducing.shape == (8, 8)
    assert not np.array_equal(a.train.x, c.train.x) and not np.array_equal(a.train.x, v.train.x)
    assert abs(a.train.y.mean()) < 1e-12 and a.train.y.std() == pytest.approx(1.0)


def test_arm_distance_by_hand():
    lengths = np.array([1.0, 2.0])
    straight = arm_distance(np.zeros((1, 2)), lengths, np.array([0.0, 0.0]))
    bent = arm_distance(np.array([[math.pi / 2, -math.pi / 2]]), lengths, np.array([2.0, 1.0]))  # end at (2, 1)
    assert straight[0] == pytest.approx(3.0) and bent[0] == pytest.approx(0.0, abs=1e-12)


def test_gaussian_log_density_matches_scipy():
    from scipy.stats import norm

    y, mean, var = np.array([0.3, -1.0]), np.array([0.0, 0.5]), np.array([0.5, 2.0])
    assert np.allclose(gaussian_log_density(y, mean, var), norm.logpdf(y, mean, np.sqrt(var)))


def test_evaluate_reports_every_metric_and_the_exact_row_sits_on_its_reference():
    data = snelson_like(Context(seed=0, dataset="s"), n_train=40, n_val=10, n_test=20, num_inducing=4, iterations=250)
    exact = TASK.evaluate(ExactGP(), data, Context(seed=0, dataset="s"))
    tight = TASK.evaluate(TightSGPR(), data, Context(seed=0, dataset="s"))
    exact_scores, tight_scores = exact.metrics, tight.metrics
    assert set(exact_scores) == set(TASK.metrics) == set(tight_scores)
    assert exact_scores["bound_at_init"] > tight_scores["bound_at_init"]
    # gpytorch's exact GP against the task's own, each trained to its plateau by L-BFGS from the same start: the
    # same optimum (the same log p(y) and noise up to the plateau rule's tolerance)
    assert exact_scores["bound"] == pytest.approx(exact_scores["exact_reference_bound"], abs=1e-3)
    assert exact_scores["noise_log_ratio_to_exact"] < 0.05
    # the exact GP's row sits on the task's own log p(y) at the start, and the new bound above the task's Titsias
    assert abs(exact_scores["init_under_exact"]) < 1e-9 and tight_scores["init_over_titsias"] > 0
    for result in (exact, tight):
        assert set(result.curves) == {"bound", "exact_reference_bound"}
        assert len(result.curves["bound"].x) == 10 and result.curves["bound"].y[-1] == result.metrics["bound"]
        assert result.metrics["training_steps"] % 10 == 0


def test_diabetes_split_sizes():
    data = diabetes_gp(Context(seed=0, dataset="d"), num_inducing=8)
    assert data.train.x.shape == (310, 10) and len(data.val_y) == 44 and len(data.test_y) == 88


def test_uci_csv_reads_the_target_by_name_and_subsamples(tmp_path):
    path = write_regression_csv(tmp_path / "uci" / "toy.csv", 100, columns=4)
    x, y = read_regression_csv(path, "x0")
    assert x.shape == (100, 4) and y.shape == (100,)
    data = uci_csv(Context(seed=0, dataset="toy", data_dir=tmp_path), file="toy", max_train=50, num_inducing=5)
    assert data.train.x.shape == (50, 4) and len(data.test_y) == 10


def test_missing_data_is_unavailable(tmp_path):
    with pytest.raises(DataUnavailable, match="no --data-dir given"):
        uci_csv(Context(seed=0), file="pol")
    with pytest.raises(DataUnavailable, match=r"pol\.csv is not there"):
        uci_csv(Context(seed=0, data_dir=tmp_path), file="pol")


@pytest.mark.parametrize("content, message", [
    ("", r"bad\.csv: the file is empty; expected a header row"),
    ("a,b\n1,2\n3\n", r"bad\.csv:3: 1 cell\(s\); expected 2"),
    ("a,b\n1,2\n3,x\n", r"bad\.csv:3: column 'b' holds 'x'; expected a number"),
    ("a,b\n1,nan\n", r"bad\.csv:2: column 'b' holds 'nan'; expected a finite number"),
    ("a,b\n" + "1,2\n" * 3, r"bad\.csv: 3 data row\(s\); expected at least 10"),
    ("y\n1\n", r"bad\.csv:1: the header has 1 column\(s\)"),
])
def test_malformed_csv_names_file_line_and_expectation(tmp_path, content, message):
    path = tmp_path / "bad.csv"
    path.write_text(content)
    with pytest.raises(DataError, match=message):
        read_regression_csv(path)


def test_a_missing_target_column_is_named(tmp_path):
    path = write_regression_csv(tmp_path / "t.csv", 20)
    with pytest.raises(DataError, match=r"t\.csv:1: no column named 'target' \(the target\); the header has x0"):
        read_regression_csv(path, "target")


def test_bad_budget_is_a_data_error():
    with pytest.raises(DataError, match="num_inducing = 0: expected a positive integer"):
        snelson_like(Context(seed=0), num_inducing=0)


# --------------------------------------------------------------------------- training to the plateau (issue 29)


def audits_reading(log) -> float:
    """What ``harness audit``'s ``unconverged`` rule reads from the curve a training kept."""
    from harness.audit.rules.training import still_improving

    curve = log.curves()[log.name]
    return still_improving(list(curve.x), list(curve.y), "max")


def test_the_plateau_rule_stops_on_a_flat_objective_and_its_curve_passes_the_audits_reading():
    from harness.tasks.gp.plateau import TOLERANCE
    from harness.tasks.training import train_to_plateau

    state = {"k": 0}

    def step():
        state["k"] += 1

    log = train_to_plateau(step, lambda: -math.exp(-state["k"] / 30), every=1, min_steps=50, max_steps=5000,
                           tolerance=TOLERANCE, name="bound")
    assert log.budget == state["k"] and log.budget % 10 == 0 and log.budget < 5000
    assert audits_reading(log) <= TOLERANCE
    assert math.exp(-0.8 * log.budget / 30) * (1 - math.exp(-0.2 * log.budget / 30)) <= TOLERANCE  # by hand
    assert len(log.curves()["bound"].x) == 10


def test_the_plateau_rule_runs_to_the_cap_while_the_objective_still_improves():
    from harness.tasks.gp.plateau import TOLERANCE
    from harness.tasks.training import train_to_plateau

    state = {"k": 0}
    log = train_to_plateau(lambda: state.__setitem__("k", state["k"] + 1), lambda: 0.01 * state["k"], every=25,
                           min_steps=1000, max_steps=3000, tolerance=TOLERANCE, name="bound")
    assert log.budget == 3000 and audits_reading(log) > TOLERANCE  # what the audit then reports as unconverged


def test_the_plateau_rule_is_not_stopped_by_one_lucky_noisy_value():
    from harness.tasks.training import still_gaining

    # rising by 0.01 a kept value, with the last kept value knocked down: the point reading says flat, the mean not
    values = {k: 0.01 * k for k in range(1, 101)}
    values[100] = values[80] - 0.5
    assert values[100] - values[80] < 0 and still_gaining(values, 100) > 0.1


def test_a_training_that_diverges_is_an_error():
    from harness.tasks.training import train_to_plateau

    with pytest.raises(FloatingPointError, match="not|nan"):
        train_to_plateau(lambda: None, lambda: float("nan"), every=1, min_steps=10, max_steps=10, tolerance=1e-3,
                         name="bound")


def test_the_catalogue_declares_the_tolerance_the_rule_stops_at():
    from harness.tasks.gp.catalogue import CATALOGUE
    from harness.tasks.gp.plateau import TOLERANCE

    for name in ("bound", "exact_reference_bound"):
        metric = CATALOGUE["metrics"][name]
        assert metric["role"] == "training-objective" and metric["tolerance"] == TOLERANCE
    for name in ("init_over_titsias", "init_over_artemev", "init_under_exact"):
        assert CATALOGUE["metrics"][name]["role"] == "certificate"


def test_lbfgs_trains_a_collapsed_bound_to_a_stationary_point():
    x, y, z, _, _, init = problem(6)
    train = training_set(x, y, z, init, lbfgs_iterations=1000)
    method = TightSGPR()
    fitted = method.fit(train, Context(seed=0))
    assert fitted.training.budget < 1000  # stopped by the rule, not the cap
    from harness.tasks.gp.plateau import LBFGS_EVERY

    # the one L-BFGS training of the task: the methods' and the exact reference's look at the rule every 50 steps
    assert fitted.training.budget % (10 * LBFGS_EVERY) == 0
    model = fitted.trainable
    with model.settings():
        for p in model.parameters():
            p.grad = None
        model.step_loss().backward()
        grad = max(float(p.grad.abs().max()) for p in model.parameters())
    assert grad < 1e-3  # per-point objective: a stationary point, where 300 Adam steps were not
    # and Adam from the same start for the same number of steps ends lower
    adam = method.build(train, Context(seed=0))
    with adam.settings():
        from harness.tasks.gp.plateau import adam_step

        step = adam_step(adam.parameters(), adam.step_loss, 0.05)
        for _ in range(fitted.training.budget):
            step()
        assert adam.bound() < fitted.bound


@pytest.mark.parametrize("seed", range(6))
def test_the_tasks_reference_bounds_are_the_methods_at_the_shared_start(seed):
    from harness.tasks.gp.regression import reference_bounds

    x, y, z, _, _, init = problem(seed)
    init = {**init, "noise": 0.1}
    train, context = training_set(x, y, z, init), Context(seed=0)
    reference = reference_bounds(train, exact_max=10**6)
    values = {}
    for name, cls in (("artemev", ArtemevSGPR), ("exact", ExactGP), ("tight", TightSGPR)):
        model = cls().build(train, context)
        with model.settings():
            values[name] = model.bound_at_init()
    for name in ("artemev", "exact"):
        assert values[name] == pytest.approx(reference[name], rel=1e-9, abs=1e-10), name
    # (gpytorch's InducingPointKernel factors K_uu its own way, with its own jitter where K_uu is ill-conditioned:
    # test_titsias_by_formula_equals_gpytorch_inducing_point_kernel compares it with the formula)
    assert values["tight"] >= reference["artemev"] >= reference["titsias"] and reference["exact"] >= values["tight"]
    assert "exact" not in reference_bounds(train, exact_max=len(y) - 1)


def test_the_whitened_svgp_is_gpytorchs_variational_elbo():
    import gpytorch

    from components.sparse_gp_torch import DTYPE, make_kernel, make_likelihood

    x, y, z, _, _, init = problem(8)
    train = training_set(x, y, z, init)
    model = SVGP().build(train, Context(seed=0))
    rng = np.random.default_rng(0)
    m = z.shape[0]
    mean = torch.as_tensor(rng.standard_normal(m), dtype=DTYPE)
    chol_s = torch.tril(torch.as_tensor(rng.uniform(-0.3, 0.3, (m, m)), dtype=DTYPE), -1) + torch.diag(
        torch.as_tensor(rng.uniform(0.2, 1.0, m), dtype=DTYPE))
    model.set_q(mean, chol_s)

    class Reference(gpytorch.models.ApproximateGP):
        def __init__(self):
            dist = gpytorch.variational.CholeskyVariationalDistribution(m, dtype=DTYPE)
            strategy = gpytorch.variational.VariationalStrategy(self, z.clone(), dist, learn_inducing_locations=True,
                                                                jitter_val=model.jitter)
            super().__init__(strategy)
            self.mean_module, self.covar_module = gpytorch.means.ZeroMean(), make_kernel(x.shape[1], init)

        def forward(self, a):
            return gpytorch.distributions.MultivariateNormal(self.mean_module(a), self.covar_module(a))

    reference = Reference().to(DTYPE)
    strategy = reference.variational_strategy
    with torch.no_grad():
        strategy._variational_distribution.variational_mean.copy_(mean)
        strategy._variational_distribution.chol_variational_covar.copy_(chol_s)
        strategy.variational_params_initialized.fill_(1)
    likelihood = make_likelihood(init)
    elbo = gpytorch.mlls.VariationalELBO(likelihood, reference, num_data=len(y))
    with model.settings(), torch.no_grad():
        reference.train()
        expected = float(elbo(reference(x), y))
        assert model.bound() == pytest.approx(expected, abs=1e-5)  # gpytorch adds its jitter to q(f)'s covariance
        reference.eval()
        q_f = reference(x[:7])
        mine_mean, mine_var = model.predict(x[:7].numpy())
        assert np.allclose(mine_mean, q_f.mean.numpy(), atol=1e-6) and np.allclose(mine_var, q_f.variance.numpy(),
                                                                                       atol=1e-6)
