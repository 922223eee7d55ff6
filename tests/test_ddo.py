"""generative.finetune and DDO: EDM's preconditioning and sampler, the causal model's exact likelihood and its
sampler, the DDO loss (on the ELBO's estimate and on the exact log-ratio) and its pointwise optimum, the distances,
the mixtures' coverage, the shared training loop (equal batches, equal steps, the best checkpoint), the trivial
answers of each kind of data and the loaders' errors."""
from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from harness.tasks.generative import causal, edm  # noqa: E402
from harness.tasks.base import Context, DataError  # noqa: E402
from harness.tasks.generative import finetune as gf  # noqa: E402
from implementations.ddo import DDO, ddo_loss  # noqa: E402

TINY = gf.TASK.tiny(None)


def _data(name="ring-8", split="test", seed=0, **params):
    loader = {"ring-8": gf.ring_8, "grid-25": gf.grid_25, "digits-64": gf.digits_64,
              "binary-digits-64": gf.binary_digits_64}[name]
    return loader(Context(seed=seed, split=split, dataset=name), **{**TINY[name], **params})


def test_edm_loss_weight_cancels_the_output_scale():
    """λ(σ)·c_out(σ)² = 1 at every σ (EDM's unit-variance training target), and D → x as σ → 0."""
    sigma = torch.logspace(-3, 2, 50, dtype=torch.float64)[:, None]
    sd = 0.7
    c_out = sigma * sd / torch.sqrt(sigma**2 + sd**2)
    assert torch.allclose(edm.loss_weight(sigma, sd) * c_out**2, torch.ones_like(sigma))
    model = edm.EDMDenoiser(3, sd, width=8).double()
    x = torch.randn(5, 3, dtype=torch.float64)
    assert torch.allclose(model(x, torch.full((5, 1), 1e-8, dtype=torch.float64)), x, atol=1e-7)


def test_heun_sampler_follows_the_probability_flow_of_a_gaussian():
    """For data N(0, s²) the ideal denoiser is x·s²/(s² + σ²) and the probability-flow ODE is linear: it carries a
    start x·σ_max to x·s·σ_max/√(s² + σ_max²). Heun's error falls as the square of the steps: within 3% at 32
    steps (the task's default), within 0.2% at 128."""
    s = 0.5
    start = torch.randn(100, 2, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    schedule = edm.NoiseSchedule()
    exact = start * s * schedule.sigma_max / math.sqrt(s**2 + schedule.sigma_max**2)
    for steps, tolerance in ((32, 0.03), (128, 0.002)):
        samples = edm.heun_sample(lambda x, sigma: x * s**2 / (s**2 + sigma**2), start,
                                  schedule.sampling_levels(steps))
        assert torch.allclose(samples, exact, rtol=tolerance, atol=0)


def test_ddo_loss_is_the_discriminator_loss_on_the_implicit_log_ratio():
    """softplus(β(e_θ − e_ref)) on real + α·softplus(−β(e_θ − e_ref)) on fake equals −log σ(βΔ) − α log(1 − σ(βΔ))
    with Δ = e_ref − e_θ; at θ = θ_ref it is (1 + α) log 2; the reference gets no gradient."""
    torch.manual_seed(0)
    reference = edm.EDMDenoiser(2, 1.0, width=8).requires_grad_(False)
    model = edm.EDMDenoiser(2, 1.0, width=8)

    def batch():
        return gf.Batch(torch.randn(6, 2), torch.exp(torch.randn(6, 1)), torch.randn(6, 2))

    real, fake = batch(), batch()
    alpha, beta = 2.5, 0.3
    nll = gf.FAMILIES["diffusion"].nll
    loss = ddo_loss(model, reference, real, fake, alpha, beta, nll)
    delta_real = edm.weighted_error(reference, real.x, real.sigma, real.noise) - edm.weighted_error(
        model, real.x, real.sigma, real.noise)
    delta_fake = edm.weighted_error(reference, fake.x, fake.sigma, fake.noise) - edm.weighted_error(
        model, fake.x, fake.sigma, fake.noise)
    expected = (-torch.log(torch.sigmoid(beta * delta_real)).mean()
                - alpha * torch.log(1 - torch.sigmoid(beta * delta_fake)).mean())
    assert float(loss.detach()) == pytest.approx(float(expected.detach()), rel=1e-5)
    model.load_state_dict(reference.state_dict())
    at_start = ddo_loss(model, reference, real, fake, alpha, beta, nll)
    assert float(at_start.detach()) == pytest.approx((1 + alpha) * math.log(2), rel=1e-6)
    at_start.backward()
    assert all(p.grad is None for p in reference.parameters())


def test_the_losss_pointwise_optimum_is_the_density_ratio():
    """Pointwise in x, p_data·softplus(−βr) + α·p_ref·softplus(βr) is minimised where exp(βr) = p_data/(α p_ref)
    (the paper's Theorem 3.1 at α = β = 1: p_θ = p_data), checked by minimising over r numerically."""
    from scipy.optimize import minimize_scalar

    for p_data, p_ref, alpha, beta in ((0.3, 0.1, 1.0, 1.0), (0.05, 0.2, 4.0, 0.5), (0.2, 0.2, 0.5, 2.0)):
        def objective(r):
            real = float(torch.nn.functional.softplus(torch.tensor(-beta * r, dtype=torch.float64)))
            fake = float(torch.nn.functional.softplus(torch.tensor(beta * r, dtype=torch.float64)))
            return p_data * real + alpha * p_ref * fake

        best = minimize_scalar(objective, bounds=(-50, 50), method="bounded", options={"xatol": 1e-10}).x
        assert beta * best == pytest.approx(math.log(p_data / (alpha * p_ref)), abs=1e-5)


def test_distances_against_closed_forms():
    """Energy distance and MMD near 0 for two samples of one law and positive for shifted ones; the Fréchet
    distance of two samples equals ‖Δμ‖² plus the covariance term computed by hand."""
    rng = np.random.default_rng(0)
    a, b = torch.as_tensor(rng.standard_normal((1500, 2))), torch.as_tensor(rng.standard_normal((1500, 2)))
    assert abs(gf.energy_distance(a, b)) < 0.01 and abs(gf.mmd(a, b, 1.0)) < 0.002
    shifted = b + 1.0
    assert gf.energy_distance(a, shifted) > 0.5 and gf.mmd(a, shifted, 1.0) > 0.1
    x = rng.standard_normal((4000, 3))
    y = 2.0 * rng.standard_normal((4000, 3)) + np.array([1.0, 0.0, 0.0])
    cov_x, cov_y = np.cov(x, rowvar=False), np.cov(y, rowvar=False)
    from scipy.linalg import sqrtm

    expected = ((x.mean(0) - y.mean(0)) ** 2).sum() + np.trace(cov_x + cov_y - 2 * sqrtm(cov_x @ cov_y).real)
    assert gf.frechet_distance(x, y) == pytest.approx(expected, rel=1e-9)
    assert gf.frechet_distance(x, y) == pytest.approx(1.0 + 3 * (1 - 2) ** 2, abs=0.15)  # ‖Δμ‖² + Σ(1 − 2)²


def test_mixture_coverage_counts_precision_and_recall():
    mixture = gf.Mixture(np.array([[0.0, 0.0], [3.0, 0.0], [0.0, 3.0], [3.0, 3.0]]), 0.1)
    every_mode = np.repeat(mixture.modes, 25, axis=0)
    assert mixture.coverage(every_mode) == (1.0, 1.0)
    one_mode = np.zeros((100, 2))
    assert mixture.coverage(one_mode) == (1.0, 0.25)
    between = np.full((100, 2), 1.5)
    assert mixture.coverage(between)[0] == 0.0
    log_p = mixture.log_density(mixture.modes[:1])
    assert float(log_p[0]) == pytest.approx(-math.log(4) - 2 * math.log(0.1) - math.log(2 * math.pi), rel=1e-9)


def _session(data, seed=0):
    context = Context(seed=seed, split="test", dataset="ring-8")
    reference, _ = gf._REFERENCES.get_or_build((data.instance, seed, data.pretrain, "cpu"),
                                               lambda: gf.pretrain_reference(data, context))
    return gf.FinetuneSession(data, reference, context)


def test_every_method_that_trains_sees_the_same_batches_and_steps():
    """Two runs of the loop with one loss give the same model (the batches and noise draws are the seed's, not the
    method's); DDO and continued MLE of equal rounds spend equal steps."""
    data = _data(finetune_steps=6, checkpoint_every=3)
    seen = []

    def recording(model, reference, real, fake):
        seen.append((real.x.clone(), real.sigma.clone()))
        return edm.denoising_loss(model, real.x, real.sigma, real.noise)

    _session(data).train_rounds(recording, 1, reference_samples=False)
    first, seen[:] = list(seen), []
    _session(data).train_rounds(recording, 1, reference_samples=True)
    assert all(torch.equal(a[0], b[0]) and torch.equal(a[1], b[1]) for a, b in zip(first, seen))
    from baselines.generative import ContinuedMLE

    ddo, mle = _session(data), _session(data)
    DDO(rounds=2).finetune(ddo)
    ContinuedMLE(rounds=2).finetune(mle)
    assert ddo.finetune_steps == mle.finetune_steps == 12
    assert ddo.reference_samples == 2 * data.plan.reference_pool and mle.reference_samples == 0


def test_a_round_keeps_its_best_checkpoint_its_start_included():
    """A loss that only makes the model worse (gradient ascent on the denoising loss, a large rate) leaves the
    reference's weights: the start is the round's best checkpoint."""
    data = _data(finetune_steps=6, checkpoint_every=2, finetune_lr=0.5)
    session = _session(data)
    model = session.train_rounds(lambda m, r, real, fake: -edm.denoising_loss(m, real.x, real.sigma, real.noise), 1,
                                 reference_samples=False)
    assert all(torch.equal(p, q) for p, q in zip(model.state_dict().values(), session.reference.state_dict().values()))
    assert len(session.validation_curve) == 3


def test_evaluate_keeps_the_pretraining_curve_and_the_reference_is_shared():
    from baselines.generative import FreshData, Reference

    data = _data()
    context = Context(seed=0, split="test", dataset="ring-8")
    first = gf.TASK.evaluate(Reference(), data, context)
    second = gf.TASK.evaluate(FreshData(), data, context)
    curve = first.curves["reference_validation_loss"]
    assert curve.x[-1] == 1.0 and first.metrics["reference_steps"] >= 10
    assert first.metrics["reference_validation_loss"] == second.metrics["reference_validation_loss"]
    assert {"precision", "recall", "sample_nll"} <= set(first.metrics)
    assert "frechet_distance" not in first.metrics


def test_digits_split_is_disjoint_and_the_tuning_split_scores_other_images():
    test, val = _data("digits-64", split="test"), _data("digits-64", split="val")
    rows = {name: {tuple(r) for r in getattr(test, name)} for name in ("train", "selection", "scoring", "fresh")}
    tuning = {tuple(r) for r in val.scoring}
    assert np.array_equal(test.train, val.train)
    for name, other in (("train", "selection"), ("scoring", "fresh"), ("train", "scoring")):
        assert len(rows[name] & rows[other]) < 3  # duplicated images aside
    assert len(tuning & rows["scoring"]) < 3


@pytest.mark.parametrize("params, message", [
    ({"checkpoint_every": 10, "finetune_steps": 4}, "checkpoint_every = 10 is above finetune_steps = 4"),
    ({"min_steps": 50, "max_steps": 10}, "min_steps = 50 is above max_steps = 10"),
    ({"sigma": -1.0}, "sigma = -1.0: expected a positive number"),
    ({"train": 1}, "train = 1: expected an integer of at least 2"),
])
def test_bad_dataset_parameters_name_the_parameter(params, message):
    with pytest.raises(DataError, match=message.replace("(", r"\(").replace(")", r"\)")):
        _data(**params)


def test_digits_sets_that_leave_no_training_images_are_refused():
    with pytest.raises(DataError, match="leave .* for training"):
        _data("digits-64", scoring=70)


def test_a_pretrained_reference_is_kept_once_per_machine_and_restored_exactly(monkeypatch):
    """The second worker that needs a reference loads the first one's from the harness cache (the same weights
    and curve, no training); a damaged entry is trained again."""
    from harness import cache

    data = _data()
    context = Context(seed=3, split="test", dataset="ring-8")
    trained, log = gf.shared_reference(data, context)
    calls = []
    monkeypatch.setattr(gf, "pretrain_reference", lambda *a: calls.append(a) or (trained, log))
    restored, restored_log = gf.shared_reference(data, context)
    assert not calls
    assert all(torch.equal(a, b) for a, b in zip(trained.state_dict().values(), restored.state_dict().values()))
    assert restored_log.kept == log.kept and restored_log.budget == log.budget
    key = gf._reference_key(data, context)
    (cache.cache_dir() / gf.REFERENCE_CACHE / key).write_text('{"weights": {}}')
    gf.shared_reference(data, context)
    assert len(calls) == 1


def _all_binary(dim):
    return torch.tensor([[(i >> j) & 1 for j in range(dim)] for i in range(2**dim)], dtype=torch.float32)


def test_the_causal_model_is_autoregressive_and_its_likelihood_sums_to_one():
    """Logit i does not move when pixels i, i+1, … do (the masks), and exp(log p) over all 2^D vectors sums to 1,
    at temperature 1 and at the sharpened scale."""
    torch.manual_seed(0)
    model = causal.MADE(5, width=12, depth=2)
    x = torch.bernoulli(torch.full((8, 5), 0.5))
    for i in range(5):
        moved = x.clone()
        moved[:, i:] = 1 - moved[:, i:]
        assert torch.allclose(model(x)[:, : i + 1], model(moved)[:, : i + 1])
    assert not torch.allclose(model(x)[:, 1:], model(1 - x)[:, 1:])  # and it does read the pixels before
    every = _all_binary(5)
    for scale in (1.0, 1.7):
        assert float(model.log_prob(every, scale).detach().double().exp().sum()) == pytest.approx(1.0, abs=1e-5)


def test_ancestral_samples_follow_the_exact_likelihood():
    """The frequencies of 40,000 ancestral samples of a 3-pixel model match exp(log p) of each of the 8 vectors
    (within 4 standard errors), and the same uniforms give the same samples."""
    torch.manual_seed(1)
    model = causal.MADE(3, width=8)
    with torch.no_grad():
        for p in model.parameters():
            p.mul_(3.0)  # a model far from uniform
    uniforms = torch.rand(40000, 3, generator=torch.Generator().manual_seed(0))
    samples = model.sample(uniforms)
    assert torch.equal(samples, model.sample(uniforms.clone()))
    every = _all_binary(3)
    expected = model.log_prob(every).exp().detach()
    counts = torch.stack([(samples == row).all(1).float().mean() for row in every])
    error = torch.sqrt(expected * (1 - expected) / 40000)
    assert torch.all((counts - expected).abs() <= 4 * error + 1e-4), (counts, expected)


def test_ddo_loss_on_a_causal_model_reads_the_exact_log_ratio():
    """On the autoregressive family the log-ratio is exact: the loss is −log σ(βΔ) on real rows − α log(1 − σ(βΔ))
    on fakes with Δ = log p_θ − log p_ref, (1 + α) log 2 at the start."""
    torch.manual_seed(2)
    reference = causal.MADE(6, width=8).requires_grad_(False)
    model = causal.MADE(6, width=8)
    real, fake = (gf.Batch(torch.bernoulli(torch.full((10, 6), 0.4))) for _ in range(2))
    alpha, beta = 3.0, 0.2
    loss = ddo_loss(model, reference, real, fake, alpha, beta, gf.FAMILIES["autoregressive"].nll)
    delta_real = model.log_prob(real.x) - reference.log_prob(real.x)
    delta_fake = model.log_prob(fake.x) - reference.log_prob(fake.x)
    expected = (-torch.log(torch.sigmoid(beta * delta_real)).mean()
                - alpha * torch.log(1 - torch.sigmoid(beta * delta_fake)).mean())
    assert float(loss.detach()) == pytest.approx(float(expected.detach()), rel=1e-5)
    model.load_state_dict(reference.state_dict())
    assert float(ddo_loss(model, reference, real, fake, alpha, beta, gf.FAMILIES["autoregressive"].nll)) == (
        pytest.approx((1 + alpha) * math.log(2), rel=1e-6))


def test_binary_digits_are_binary_split_like_the_digits_and_refuse_a_bad_threshold():
    data, grey = _data("binary-digits-64"), _data("digits-64")
    assert set(np.unique(data.train)) == {0.0, 1.0} and data.family == "autoregressive"
    assert len(data.train) == len(grey.train) and len(data.scoring) == len(grey.scoring)
    # the same images in the same sets: a binarised digit is 1 exactly where its grey value is at least 8 of 16
    assert np.array_equal(data.train, (grey.train >= 0.0).astype(np.float32))
    with pytest.raises(DataError, match="threshold = 17"):
        _data("binary-digits-64", threshold=17)


def test_the_trivial_answer_matches_the_kind_of_data():
    """Independent pixels on binary data (training frequencies, add-one smoothed; an exact likelihood); each trivial
    answer refuses the other kind of data, naming the one that fits."""
    from baselines.generative import GaussianFit, IndependentPixels
    from harness.tasks.base import DataUnavailable

    binary, continuous = _data("binary-digits-64"), _data("ring-8")
    session = gf.FinetuneSession(binary, None, Context(seed=0, split="test", dataset="binary-digits-64"))
    sampler = IndependentPixels().finetune(session)
    means = (binary.train.sum(0) + 1) / (len(binary.train) + 2)
    assert np.allclose(sampler.means.numpy(), means)
    x = torch.as_tensor(binary.scoring[:5])
    expected = (x * torch.log(torch.as_tensor(means)) + (1 - x) * torch.log1p(-torch.as_tensor(means))).sum(1)
    assert torch.allclose(sampler.log_prob(x).double(), expected.double(), atol=1e-4)
    with pytest.raises(DataUnavailable, match="independent-pixels"):
        GaussianFit().finetune(session)
    with pytest.raises(DataUnavailable, match="gaussian-fit"):
        IndependentPixels().finetune(gf.FinetuneSession(continuous, None, Context(seed=0, split="test",
                                                                                   dataset="ring-8")))


def test_the_autoregressive_variant_runs_every_method_and_scores_exact_likelihoods():
    """On binary digits the reference is a causal model pretrained by the task; DDO and continued MLE spend equal
    steps on it; data_nll is reported where the likelihood is exact (not for the fresh sample); sharpening the
    logits lowers the entropy (a lower NLL of the reference's own samples)."""
    from baselines.generative import ContinuedMLE, FreshData, IndependentPixels, Reference, ScoreSharpening

    data = _data("binary-digits-64", finetune_steps=6, checkpoint_every=3)
    context = Context(seed=0, split="test", dataset="binary-digits-64")
    rows = {name: gf.TASK.evaluate(method, data, context).metrics for name, method in (
        ("reference", Reference()), ("ddo", DDO(rounds=1)), ("mle", ContinuedMLE()), ("fresh", FreshData()),
        ("pixels", IndependentPixels()), ("sharp", ScoreSharpening(2.0)))}
    assert rows["ddo"]["finetune_steps"] == rows["mle"]["finetune_steps"] == 6
    assert {"data_nll", "frechet_distance", "classifier_confidence"} <= set(rows["reference"])
    assert "data_nll" in rows["pixels"] and "data_nll" not in rows["fresh"] and "recall" not in rows["reference"]
    reference, _ = gf._REFERENCES.get_or_build((data.instance, 0, data.pretrain, "cpu"),
                                               lambda: gf.shared_reference(data, context))
    assert isinstance(reference, causal.MADE)
    session = gf.FinetuneSession(data, reference, context)
    plain = session.sampler(reference).sample(500, torch.Generator().manual_seed(0))
    sharp = session.sampler(reference, 2.0)
    own = session.sampler(reference)
    assert float(-sharp.log_prob(sharp.sample(500, torch.Generator().manual_seed(0))).mean()) < float(
        -own.log_prob(plain).mean())
