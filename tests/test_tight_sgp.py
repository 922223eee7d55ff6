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


def training_set(x, y, z, init, *, iterations=5, lr=0.05, batch_size=256):
    from harness.tasks.gp.regression import TrainingSet

    return TrainingSet(x.numpy(), y.numpy(), z.numpy(), dict(init), iterations, lr, batch_size)


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
    train, context = training_set(x, y, z, init, iterations=30), Context(seed=0)
    for cls in (TightSGPR, TitsiasSGPR, SVGP, ExactGP):
        fitted = cls().fit(train, context)
        assert fitted.bound > fitted.initial_bound, cls.__name__
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
    data = snelson_like(Context(seed=0, dataset="s"), n_train=40, n_val=10, n_test=20, num_inducing=4, iterations=40)
    exact_scores = TASK.evaluate(ExactGP(), data, Context(seed=0, dataset="s"))
    tight_scores = TASK.evaluate(TightSGPR(), data, Context(seed=0, dataset="s"))
    assert set(exact_scores) == set(TASK.metrics) == set(tight_scores)
    assert exact_scores["bound_at_init"] > tight_scores["bound_at_init"]
    # gpytorch's exact GP against the task's own: the same parameterisation, start and steps, so the same path
    assert exact_scores["noise_log_ratio_to_exact"] < 1e-6


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
