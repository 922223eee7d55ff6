"""np.regression and the gridded TNP: the GP ceiling, the training prior, the grid encoder, the Swin mask,
translation equivariance, the memory count, the shared training stream and the loader's errors."""
from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from harness.tasks.base import Context, DataError  # noqa: E402
from harness.tasks.np import regression as npr  # noqa: E402

SHAPE = SimpleNamespace(x_dim=2, domain_width=4.0, domain=(-2.0, 2.0))


def test_gp_ceiling_matches_a_direct_posterior():
    """The ceiling from the joint factor's leading block equals the textbook predictive from a fresh solve."""
    rng = np.random.default_rng(0)
    prior = npr.Prior(lengthscale=0.5, noise=0.1, width=4.0)
    tasks = npr.draw_exact_tasks(rng, prior, count=3, batch_size=3, context=(30, 30), targets=7, shift=0.0)
    batch = tasks.batches[0]
    for i in range(3):
        xc, yc, xt, yt = batch["xc"][i], batch["yc"][i], batch["xt"][i], batch["yt"][i]

        def k(a, b):
            return np.exp(-0.5 * ((a[:, None, :] - b[None, :, :]) ** 2).sum(-1) / prior.lengthscale**2)

        k_cc = k(xc, xc) + prior.noise**2 * np.eye(len(xc))
        k_tc = k(xt, xc)
        mean = k_tc @ np.linalg.solve(k_cc, yc)
        var = 1.0 - np.einsum("ij,ji->i", k_tc, np.linalg.solve(k_cc, k_tc.T)) + prior.noise**2
        expected = np.mean(-0.5 * (np.log(2 * math.pi * var) + (yt - mean) ** 2 / var))
        assert batch["gp_ll"][i] == pytest.approx(expected, rel=1e-9, abs=1e-9)


def test_exact_draws_have_the_priors_covariance():
    """Over 3000 exactly drawn two-point tasks: E y² = 1 + noise², and E y y' regressed on the kernel has slope 1."""
    prior = npr.Prior(lengthscale=0.25, noise=0.1, width=1.0)  # a small square: the kernel spans (0, 1]
    tasks = npr.draw_exact_tasks(np.random.default_rng(2), prior, count=3000, batch_size=1000, context=(2, 2),
                                 targets=0, shift=0.0)
    x = np.concatenate([b["xc"] for b in tasks.batches])
    y = np.concatenate([b["yc"] for b in tasks.batches])
    assert np.mean(y**2) == pytest.approx(1 + prior.noise**2, abs=0.06)
    kernel = np.exp(-0.5 * ((x[:, 0] - x[:, 1]) ** 2).sum(-1) / prior.lengthscale**2)
    product = y[:, 0] * y[:, 1]
    assert float((kernel * product).sum() / (kernel**2).sum()) == pytest.approx(1.0, abs=0.08)


def test_fourier_feature_prior_approximates_the_rbf_kernel():
    """The training prior's covariance at distance d tends to exp(−d²/2ℓ²): checked over 3000 functions."""
    prior = npr.Prior(lengthscale=0.25, noise=1e-6, width=1.0)  # a small square: the kernel spans (0, 1]
    generator = torch.Generator().manual_seed(0)
    values = []
    for _ in range(30):
        xc, yc, xt, yt = npr.fourier_feature_batch(generator, prior, 100, 2, 0, 512)
        values.append((xc, yc))
    x = torch.cat([v[0] for v in values])  # (3000, 2, 2)
    y = torch.cat([v[1] for v in values])[..., 0]  # (3000, 2)
    # every function has its own inputs: regress y0·y1 on the kernel at their distance
    d2 = (x[:, 0] - x[:, 1]).square().sum(-1)
    kernel = torch.exp(-0.5 * d2 / prior.lengthscale**2)
    product = y[:, 0] * y[:, 1]
    assert y.square().mean().item() == pytest.approx(1.0, abs=0.08)  # unit signal variance
    slope = float((kernel * product).sum() / kernel.square().sum())
    assert slope == pytest.approx(1.0, abs=0.1)


def test_grid_encoder_equals_a_node_by_node_reference():
    """The padded, vectorised PT-GE gives what each node's own cross-attention over {u_g} ∪ its points gives."""
    from implementations.gridded_tnp._model import PseudoTokenGridEncoder

    torch.manual_seed(0)
    size, width, dim = 4, 4.0, 16
    for equivariant in (False, True):
        encoder = PseudoTokenGridEncoder(dim, 2, 32, size * size, 2, equivariant)
        b, n = 2, 37
        x = torch.rand(b, n, 2) * 4 - 2
        tokens = torch.randn(b, n, dim)
        centre = torch.zeros(b, 2)
        from components.neural_process_torch import grid_nodes, nearest_node

        grid_x = grid_nodes(centre, size, width)
        extra = torch.randn(b, size * size, dim)
        node = nearest_node(x, centre, size, width)
        out = encoder(extra, grid_x, tokens, x, node)
        for i in range(b):
            for g in range(size * size):
                members = (node[i] == g).nonzero()[:, 0]
                query = (extra[i, g] + encoder.initial[0 if equivariant else g])[None, None]
                keys = torch.cat([query[0], tokens[i, members]])[None]
                bias = None
                if equivariant:
                    offsets = torch.cat([torch.zeros(1, 2), grid_x[i, g] - x[i, members]])
                    bias = encoder.kernel(offsets).T[None, :, None, :]
                expected = encoder.block(query, keys, bias)
                assert torch.allclose(out[i, g], expected[0, 0], atol=1e-5), (i, g, equivariant)


def test_points_go_to_their_nearest_grid_node():
    from components.neural_process_torch import grid_nodes, nearest_node

    centre = torch.tensor([[0.5, -1.0]])
    x = torch.rand(1, 200, 2) * 4 - 2 + centre[:, None, :]
    nodes = grid_nodes(centre, 8, 4.0)
    brute = torch.cdist(x, nodes).argmin(-1)
    assert torch.equal(nearest_node(x, centre, 8, 4.0), brute)


def test_shifted_windows_do_not_wrap_around_the_grid():
    """Swin's mask: after a layer, the corner token is untouched by the opposite corner, which the roll puts in its
    window; without the mask it would not be."""
    from implementations.gridded_tnp._model import SwinLayer

    torch.manual_seed(0)
    size, dim = 8, 16
    layer = SwinLayer(dim, 2, 32, size, 4, 2, 0.5, 2, equivariant=False)
    grid = torch.randn(1, size, size, dim)
    moved = grid.clone()
    moved[0, size - 1, size - 1] += 3 * torch.randn(dim)  # not a constant: LayerNorm would remove it
    assert torch.allclose(layer(grid)[0, 0, 0], layer(moved)[0, 0, 0])
    # a neighbour inside the same shifted window does reach it
    near = grid.clone()
    near[0, 1, 1] += 3 * torch.randn(dim)
    assert not torch.allclose(layer(grid)[0, 0, 0], layer(near)[0, 0, 0])
    layer.shift_mask.fill_(True)  # the mask off: the wrapped corner leaks in
    assert not torch.allclose(layer(grid)[0, 0, 0], layer(moved)[0, 0, 0])


@pytest.mark.parametrize("name, equivariant", [("gridded-tetnp", True), ("convcnp", True), ("gridded-tnp", False)])
def test_translation_equivariance_on_a_fixed_grid(name, equivariant):
    """On a fixed grid, shifting every input by whole Swin windows (4 nodes of 0.25: 1.0 per axis), far from the
    grid's edges, leaves the TE models' predictions unchanged (to float32 rounding) and changes the
    non-equivariant gridded TNP's, which embeds absolute positions."""
    from harness.registry import default_registry

    torch.manual_seed(0)
    shape = SimpleNamespace(x_dim=2, domain_width=4.0, domain=(-6.0, 10.0))
    model = default_registry().load("methods", name)().build(shape).eval()
    xc, yc, xt = torch.rand(2, 100, 2) * 4 - 2, torch.randn(2, 100, 1), torch.rand(2, 30, 2) * 4 - 2
    shift = torch.tensor([4.0, -1.0])
    with torch.no_grad():
        mean, std = model(xc, yc, xt)
        mean_s, std_s = model(xc + shift, yc, xt + shift)
    same = torch.allclose(mean, mean_s, atol=1e-4) and torch.allclose(std, std_s, atol=1e-4)
    assert same == equivariant


def test_the_grid_is_fixed_to_the_tasks_square_not_to_the_data():
    """A grid model reads the square it was built for: the same contexts give other predictions when the square
    moves under them (a grid centred on the data, as before issue 29, would give the same)."""
    from harness.registry import default_registry

    torch.manual_seed(0)
    method = default_registry().load("methods", "gridded-tetnp")()
    model = method.build(SimpleNamespace(x_dim=2, domain_width=4.0, domain=(-2.0, 2.0))).eval()
    moved = method.build(SimpleNamespace(x_dim=2, domain_width=4.0, domain=(-1.875, 2.125)))
    moved.load_state_dict(model.state_dict())
    moved.eval()
    xc, yc, xt = torch.rand(1, 100, 2) * 4 - 2, torch.randn(1, 100, 1), torch.rand(1, 30, 2) * 4 - 2
    with torch.no_grad():
        assert not torch.allclose(model(xc, yc, xt)[0], moved(xc, yc, xt)[0], atol=1e-4)


def test_grid_spacing_must_fit_the_square_and_the_window():
    from components.grids import nodes_per_side

    assert nodes_per_side((-2.0, 5.0), 0.25, 4, "m") == 28
    with pytest.raises(ValueError, match="spacing 0.3 does not divide the square's width 7"):
        nodes_per_side((-2.0, 5.0), 0.3, 4, "m")
    with pytest.raises(ValueError, match="30 nodes per side .* is not a multiple of the Swin window 4"):
        nodes_per_side((-2.0, 5.5), 0.25, 4, "m")


def test_the_validation_curve_is_kept_and_read_as_a_training_objective():
    """Training keeps the validation tasks' log-likelihood at ten fractions of the budget; the catalogue declares
    it a training objective with a tolerance, which the audit's plateau rule reads."""
    from baselines.neural_processes import PseudoTokenTNP
    from harness.registry import default_registry

    data = npr.gp_2d(Context(seed=5, dataset="a"), tasks=2, n_context=10, targets=5, train_steps=20, warmup=5,
                     train_context=[10, 12], train_targets=5, features=8, batch_size=2, validation_tasks=2,
                     timing_repeats=1)
    result = npr.TASK.evaluate(PseudoTokenTNP(dim=16, heads=2, ffn=16, layers=1, latents=4), data,
                               Context(seed=5, dataset="a"))
    curve = result.curves["validation_log_likelihood"]
    assert curve.x == [0.1 * i for i in range(1, 11)] or np.allclose(curve.x, np.arange(1, 11) / 10)
    assert result.metrics["validation_log_likelihood"] == curve.y[-1]
    assert result.metrics["training_steps"] == 20
    declared = default_registry().task_metrics("np.regression")["validation_log_likelihood"]
    assert declared.role == "training-objective" and declared.tolerance == npr.PLATEAU_TOLERANCE


def test_training_to_the_plateau_stops_where_the_validation_curve_flattens():
    """With min_steps, a model trains until the validation log-likelihood's last fifth gains at most the tolerance:
    a model that cannot learn (a constant predictive) stops at min_steps, rounded to ten readings; the cap holds."""

    class Constant(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.zeros(1))

        def forward(self, xc, yc, xt):
            mean = torch.zeros(xt.shape[0], xt.shape[1], 1) + 0 * self.w
            return mean, torch.ones_like(mean)

    small = dict(tasks=1, n_context=10, targets=3, train_context=[5, 6], train_targets=3, features=8,
                 validation_tasks=1)
    data = npr.gp_2d(Context(seed=0), train_steps=2000, min_steps=600, **small)
    history, log = npr.train_model(Constant(), data, Context(seed=0))
    assert log.budget == 1000 and len(history) == 1000  # 600 rounded up to 10 readings of 50 steps
    data = npr.gp_2d(Context(seed=0), train_steps=20, **small)
    history, log = npr.train_model(Constant(), data, Context(seed=0))
    assert log.budget == 20 and len(history) == 20  # no min_steps: the fixed budget


def test_the_learning_rate_warms_up_linearly():
    seen = []

    class Recording(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.zeros(1))

        def forward(self, xc, yc, xt):
            mean = self.w.expand(xt.shape[0], xt.shape[1], 1)
            return mean, torch.ones_like(mean)

    data = npr.gp_2d(Context(seed=0), tasks=1, n_context=10, targets=3, train_steps=6, warmup=4, lr=1.0,
                     train_context=[5, 6], train_targets=3, features=8, validation_tasks=1)
    model = Recording()
    original = torch.optim.AdamW.step

    def step(self, *args, **kwargs):
        seen.append(self.param_groups[0]["lr"])
        return original(self, *args, **kwargs)

    torch.optim.AdamW.step = step
    try:
        npr.train_model(model, data, Context(seed=0))
    finally:
        torch.optim.AdamW.step = original
    assert seen == pytest.approx([0.25, 0.5, 0.75, 1.0, 1.0, 1.0])


def test_peak_activation_counts_live_tensors_op_by_op():
    mib = 2**20
    weights = torch.ones(256, 1024)  # made before: not counted

    def two_alive():
        a = weights + 1  # 1 MiB
        b = a * 2  # 2 MiB alive
        return b.view(-1)[:10].sum()  # a view adds nothing

    def one_at_a_time():
        for _ in range(3):
            a = weights + 1  # each freed before the next
            del a

    assert npr.peak_activation_bytes(two_alive) == 2 * mib + 4  # the 4-byte sum
    assert npr.peak_activation_bytes(one_at_a_time) == mib


def test_every_method_trains_on_the_same_stream(tmp_path):
    """The training batches depend on the seed only: not on the dataset, the split or the evaluation settings."""
    a = npr.gp_2d(Context(seed=3, dataset="gp-in-domain"), tasks=2, n_context=20, targets=5, train_steps=3,
                  train_context=[10, 20], train_targets=5, features=16)
    b = npr.gp_2d(Context(seed=3, split="val", dataset="nc-512"), tasks=1, n_context=40, targets=5, train_steps=3,
                  train_context=[10, 20], train_targets=5, features=16, shift=2.0, domain=[-2, 4])
    c = npr.gp_2d(Context(seed=4, dataset="gp-in-domain"), tasks=2, n_context=20, targets=5, train_steps=3,
                  train_context=[10, 20], train_targets=5, features=16)
    first = list(npr.training_stream(a, Context(seed=3, dataset="gp-in-domain")))
    again = list(npr.training_stream(b, Context(seed=3, split="val", dataset="nc-512")))
    other = list(npr.training_stream(c, Context(seed=4, dataset="gp-in-domain")))
    assert len(first) == 3
    assert all(torch.equal(u, v) for s, t in zip(first, again) for u, v in zip(s, t))
    assert not all(torch.equal(u, v) for s, t in zip(first, other) for u, v in zip(s, t) if u.shape == v.shape)


def test_a_diverging_model_fails_with_the_step():
    class Exploding(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.ones(1))

        def forward(self, xc, yc, xt):
            mean = torch.full(xt.shape[:-1] + (1,), float("nan")) * self.w
            return mean, torch.ones_like(mean)

    data = npr.gp_2d(Context(seed=0), tasks=1, n_context=10, targets=3, train_steps=2, train_context=[5, 6],
                     train_targets=3, features=8)
    with pytest.raises(FloatingPointError, match="training diverged at step 1 of 2"):
        npr.train_model(Exploding(), data, Context(seed=0))


@pytest.mark.parametrize("params, message", [
    ({"n_context": [800, 200]}, r"n_context = \[800, 200\]: expected an integer of at least 2, or \[min, max\]"),
    ({"lengthscale": 0}, "lengthscale = 0: expected a positive number"),
    ({"train_steps": 0}, "train_steps = 0: expected an integer of at least 1"),
    ({"shift": "far"}, "shift = 'far': expected a number"),
    ({"n_context": 30000}, "at most 20,000 are allowed here"),
    ({"shift": 3.0}, r"domain = \[-2.0, 2.0\] does not hold the training square and the evaluation square \(shift 3\): "
                     r"it spans \[-2, 5\]"),
    ({"domain": [1, 1]}, r"domain = \[1, 1\]: expected \[low, high\] with low < high"),
    ({"warmup": -1}, "warmup = -1: expected an integer of at least 0"),
    ({"min_steps": 500, "train_steps": 400}, "min_steps = 500 is above train_steps = 400"),
])
def test_bad_dataset_parameters_name_the_parameter(params, message):
    with pytest.raises(DataError, match=message):
        npr.gp_2d(Context(seed=0), **params)


def test_a_trained_model_is_reused_across_datasets():
    """One training per seed and method serves every dataset: the second dataset reports the first's train_s."""
    from baselines.neural_processes import PseudoTokenTNP

    small = dict(targets=5, train_steps=2, train_context=[10, 12], train_targets=5, features=8, batch_size=2,
                 timing_repeats=1, domain=[-2, 3])
    method = PseudoTokenTNP(dim=16, heads=2, ffn=16, layers=1, latents=4)
    first = npr.TASK.evaluate(method, npr.gp_2d(Context(seed=11, dataset="a"), tasks=2, n_context=10, **small),
                              Context(seed=11, dataset="a"))
    again = PseudoTokenTNP(dim=16, heads=2, ffn=16, layers=1, latents=4)
    second = npr.TASK.evaluate(again, npr.gp_2d(Context(seed=11, dataset="b"), tasks=1, n_context=50, shift=1.0,
                                                **small), Context(seed=11, dataset="b"))
    assert second.metrics["train_s"] == first.metrics["train_s"] and again.model_ is method.model_
    assert second.metrics["train_log_likelihood"] == first.metrics["train_log_likelihood"]
    assert set(first.metrics) == set(npr.TASK.metrics) and all(math.isfinite(v) for v in first.metrics.values())


def test_inference_is_timed_in_cpu_time_on_one_cpu_thread():
    """A forward pass that waits (sleeps) costs no CPU time: on one CPU thread infer_s does not count the wait,
    with several threads or on a GPU it is wall time."""
    import time

    assert npr.inference_clock("cpu", 1) is time.process_time
    assert npr.inference_clock("cpu", 4) is time.perf_counter and npr.inference_clock("cuda", 1) is time.perf_counter
    assert npr._median_seconds(lambda: time.sleep(0.05), 2, "cpu", 1) < 0.02
    assert npr._median_seconds(lambda: time.sleep(0.05), 2, "cpu", 2) >= 0.05
