"""contrastive.reference and DRRho-CLIP: the loss against its definition and its equivalent form, the cancellation of
r_ii and the eps saturation, JEST's learnability, distillation, the equal training of every arm, the loaders' splits
and the scores."""
from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from baselines.contrastive import CLIP, JEST, GlobalContrastive, LinearMap, ReferenceModel, Untrained  # noqa: E402
from components.contrastive_torch import (distillation_loss, global_contrastive_loss,  # noqa: E402
                                          learnability)
from harness.tasks.base import Context, DataError  # noqa: E402
from harness.tasks.contrastive import reference as cr  # noqa: E402
from implementations.drrho_clip import DRRhoCLIP  # noqa: E402

TINY = dict(classes=4, pool=256, reference_pairs=64, selection=32, scoring=32, steps=6, batch_size=16, every=2,
            width=8, embed=4, reference_width=8, reference_batch=16, reference_every=2, reference_min_steps=4,
            reference_max_steps=4)


def _similarities(n: int, seed: int) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    a = torch.nn.functional.normalize(torch.randn(n, 5, generator=generator, dtype=torch.float64), dim=1)
    b = torch.nn.functional.normalize(torch.randn(n, 5, generator=generator, dtype=torch.float64), dim=1)
    return a @ b.T


def _by_definition(s, r, tau, eps):
    """F_i^img + F_i^txt averaged over anchors, written term by term from the paper note's formula."""
    n = len(s)
    total = 0.0
    for i in range(n):
        image = sum(math.exp(((s[i, j] - s[i, i]) - (r[i, j] - r[i, i])) / tau) for j in range(n) if j != i)
        text = sum(math.exp(((s[j, i] - s[i, i]) - (r[j, i] - r[i, i])) / tau) for j in range(n) if j != i)
        total += tau * math.log(eps + image / (n - 1)) + tau * math.log(eps + text / (n - 1))
    return total / n


@pytest.mark.parametrize("eps", [1e-14, 1e-4, 0.5])
def test_the_loss_is_its_definition(eps):
    s, r = _similarities(7, 0), _similarities(7, 1)
    value = global_contrastive_loss(s, 0.1, eps, shift=r)
    assert float(value) == pytest.approx(_by_definition(s.numpy(), r.numpy(), 0.1, eps), rel=1e-10)
    control = global_contrastive_loss(s, 0.1, eps)
    assert float(control) == pytest.approx(_by_definition(s.numpy(), np.zeros((7, 7)), 0.1, eps), rel=1e-10)


def test_as_eps_vanishes_the_reference_only_reweights_negatives():
    """At eps → 0, F_i = τ log mean_{j≠i} exp((s_ij − r_ij)/τ) − (s_ii − r_ii): r_ii moves the loss by a constant,
    so the gradient in s does not depend on the reference's diagonal; at eps = 1e-4 with τ small it does (the
    saturation)."""
    s = _similarities(6, 2).requires_grad_(True)
    r = _similarities(6, 3)
    moved = r + torch.diag(torch.full((6,), 0.7, dtype=torch.float64))

    def gradient(shift, eps, tau):
        s.grad = None
        global_contrastive_loss(s, tau, eps, shift=shift).backward()
        return s.grad.clone()

    assert torch.allclose(gradient(r, 1e-300, 0.1), gradient(moved, 1e-300, 0.1), atol=1e-12)
    assert not torch.allclose(gradient(r, 1e-4, 0.02), gradient(moved, 1e-4, 0.02), atol=1e-6)


def test_an_anchor_past_its_margin_stops_contributing_at_eps_1e_4():
    """An anchor's gradient is scaled by g/(eps + g): a positive pair far above every negative (margin ≫ τ ln 1/eps)
    gets almost none at eps = 1e-4, and its full share at eps = 1e-14."""
    tau, n = 0.01, 4
    s = torch.zeros(n, n, dtype=torch.float64)
    s[0, 0] = 0.5  # margin 0.5 against τ ln(1e4) ≈ 0.09
    grads = {}
    for eps in (1e-4, 1e-14):
        x = s.clone().requires_grad_(True)
        global_contrastive_loss(x, tau, eps).backward()
        grads[eps] = float(x.grad[0, 0])
    assert abs(grads[1e-4]) < 1e-3 * abs(grads[1e-14])


def test_distillation_is_the_cross_entropy_from_the_teacher():
    s, teacher = _similarities(5, 4), _similarities(5, 5)
    tau = 0.07
    p, q = torch.softmax(100 * teacher, 1), torch.log_softmax(s / tau, 1)
    pt, qt = torch.softmax(100 * teacher.T, 1), torch.log_softmax(s.T / tau, 1)
    expected = 0.5 * (-(p * q).sum(1).mean() - (pt * qt).sum(1).mean())
    assert float(distillation_loss(s, tau, teacher)) == pytest.approx(float(expected), rel=1e-12)


def test_learnability_is_each_candidates_loss_within_the_pairs_it_is_scored_against():
    s = _similarities(8, 6)
    candidates, among = torch.tensor([1, 4, 6]), torch.tensor([0, 4, 5])
    scores = learnability(s, candidates, among, 10.0)
    for c, score in zip(candidates.tolist(), scores.tolist()):
        rows = [c] + [a for a in among.tolist() if a != c]
        sub = 10.0 * s[rows][:, rows]
        expected = 0.5 * (float(torch.logsumexp(sub[0], 0) - sub[0, 0]) + float(torch.logsumexp(sub[:, 0], 0) - sub[0, 0]))
        assert score == pytest.approx(expected, rel=1e-12)
    everyone = torch.arange(8)
    assert torch.allclose(learnability(s, candidates, None, 10.0), learnability(s, everyone, everyone, 10.0)[candidates])


def _data(split="test", **params):
    return cr.paired_mixture(Context(seed=0, split=split, dataset="paired-mixture"), **{**TINY, **params})


def test_the_training_fraction_is_a_prefix_and_the_reference_pool_does_not_depend_on_it():
    quarter, whole = _data(fraction=0.25), _data(fraction=1.0)
    assert len(quarter.train_images) == 64 and len(whole.train_images) == 256
    assert np.array_equal(quarter.train_images, whole.train_images[:64])
    assert quarter.instance == whole.instance  # one reference for every fraction
    assert np.array_equal(quarter.reference_images, whole.reference_images)
    tuning = _data(split="val")
    assert tuning.instance == whole.instance and np.array_equal(tuning.selection_images, whole.selection_images)
    assert not np.array_equal(tuning.scoring_images, whole.scoring_images)  # tuning and test pairs are disjoint draws


def test_mismatched_pairs_change_that_share_of_the_texts_and_only_the_training_pool():
    clean, noisy = _data(), _data(mismatched=0.25)
    changed = (clean.train_texts != noisy.train_texts).any(1)
    assert changed.sum() == 64
    assert np.array_equal(clean.train_images, noisy.train_images)
    assert np.array_equal(clean.reference_texts, noisy.reference_texts)
    assert np.array_equal(clean.scoring_texts, noisy.scoring_texts)


def test_loaders_refuse_what_cannot_run():
    with pytest.raises(DataError, match="fraction"):
        _data(fraction=0.0)
    with pytest.raises(DataError, match="fewer than a batch"):
        _data(fraction=0.05)
    with pytest.raises(DataError, match="leave"):
        cr.paired_digits(Context(seed=0, dataset="paired-digits"), limit=200, reference_pairs=60, selection=60,
                         scoring=30, batch_size=32)


def test_the_digits_captions_are_the_class_means_of_the_training_second_view():
    data = cr.paired_digits(Context(seed=0, dataset="paired-digits"), limit=400, reference_pairs=40, selection=40,
                            scoring=40, batch_size=16, noise=0.0)
    assert data.captions.shape == (10, 16) and data.train_images.shape[1] == 64
    assert len(data.train_images) == 400 - 40 - 40 - 80
    assert set(np.unique(data.scoring_labels)) <= set(range(10))


class _Fixed:
    def __init__(self, images, texts):
        self.images, self.texts = images, texts

    def embed_images(self, images):
        return torch.nn.functional.normalize(torch.as_tensor(images) @ self.images, dim=-1)

    def embed_texts(self, texts):
        return torch.nn.functional.normalize(torch.as_tensor(texts) @ self.texts, dim=-1)


def test_zero_shot_and_recall_against_a_direct_count():
    rng = np.random.default_rng(0)
    images, texts = rng.normal(size=(30, 3)).astype(np.float32), rng.normal(size=(30, 3)).astype(np.float32)
    captions, labels = rng.normal(size=(4, 3)).astype(np.float32), rng.integers(0, 4, 30)
    embedder = _Fixed(torch.eye(3), torch.eye(3))
    unit = lambda a: a / np.linalg.norm(a, axis=1, keepdims=True)  # noqa: E731
    expected_top1 = np.mean(np.argmax(unit(images) @ unit(captions).T, 1) == labels)
    expected_recall = np.mean(np.argmax(unit(images) @ unit(texts).T, 1) == np.arange(30))
    assert cr.zero_shot_top1(embedder, images, labels, captions) == pytest.approx(expected_top1)
    assert cr.i2t_recall1(embedder, images, texts) == pytest.approx(expected_recall)


def test_every_arm_starts_from_the_same_weights_sees_the_same_batches_and_the_same_budget():
    data, context = _data(), Context(seed=0, dataset="paired-mixture")
    reference, _ = cr.pretrain_reference(data, context)
    seen = {}
    for name, scale in (("a", 1.0), ("b", 3.0)):
        session = cr.ContrastiveSession(data, reference, context)
        first = session.new_network().state_dict()
        batches = []

        def loss(batch, scale=scale, batches=batches):
            batches.append(batch.images.clone())
            return scale * global_contrastive_loss(batch.s, 0.1, 1e-4)

        session.train(loss)
        seen[name] = (first, batches, session.samples_seen, session.steps)
    (first_a, batches_a, samples_a, steps_a), (first_b, batches_b, samples_b, steps_b) = seen["a"], seen["b"]
    assert all(torch.equal(first_a[k], first_b[k]) for k in first_a)
    assert all(torch.equal(x, y) for x, y in zip(batches_a, batches_b)) and len(batches_a) == TINY["steps"]
    assert samples_a == samples_b == TINY["steps"] * TINY["batch_size"] and steps_a == steps_b


def test_jest_trains_on_distinct_pairs_chosen_from_its_candidates_and_counts_them():
    data, context = _data(), Context(seed=0, dataset="paired-mixture")
    reference, _ = cr.pretrain_reference(data, context)
    session = cr.ContrastiveSession(data, reference, context)
    chosen = []
    original = session.train

    def spy(loss, parameters=(), select=None, candidates=1):
        def watched(network, images, texts, keep):
            kept = select(network, images, texts, keep)
            chosen.append((len(images), kept))
            return kept
        return original(loss, parameters, watched, candidates)

    session.train = spy
    JEST(candidates=4, chunks=2).fit(session)
    assert session.scored_samples == TINY["steps"] * 4 * TINY["batch_size"]
    assert session.samples_seen == TINY["steps"] * TINY["batch_size"]
    for size, kept in chosen:
        assert size == 4 * TINY["batch_size"] and len(set(kept.tolist())) == TINY["batch_size"]
        assert kept.min() >= 0 and kept.max() < size


def test_every_method_runs_and_the_reference_is_trained_once_per_seed():
    data, context = _data(), Context(seed=0, dataset="paired-mixture")
    cr._REFERENCES.clear()
    results = {}
    for method in (DRRhoCLIP(), DRRhoCLIP(distill=1.0), DRRhoCLIP(reference="random"), GlobalContrastive(), CLIP(),
                   JEST(), ReferenceModel(), LinearMap(), Untrained()):
        evaluation = cr.TASK.evaluate(method, data, context)
        results[type(method).__name__] = evaluation.metrics
        assert 0 <= evaluation.metrics["zero_shot_top1"] <= 1 and 0 <= evaluation.metrics["i2t_recall1"] <= 1
        assert "reference_validation_top1" in evaluation.curves
    assert len(cr._REFERENCES._items) == 1
    assert results["ReferenceModel"]["samples_seen"] == 0 and results["CLIP"]["samples_seen"] > 0


def test_a_random_reference_is_not_the_trained_one_and_bad_settings_are_refused():
    data, context = _data(), Context(seed=0, dataset="paired-mixture")
    reference, _ = cr.pretrain_reference(data, context)
    session = cr.ContrastiveSession(data, reference, context)
    random = session.random_reference()
    assert not all(torch.equal(a, b) for a, b in zip(random.parameters(), reference.parameters()))
    with pytest.raises(ValueError, match="reference"):
        DRRhoCLIP(reference="other").fit(session)
    with pytest.raises(ValueError, match="tau"):
        GlobalContrastive(tau=0.0).fit(session)


def test_chance_levels():
    assert cr.TASK.chance("paired-mixture", {"classes": 5, "scoring": 100}) == {
        "zero_shot_top1": 0.2, "validation_top1": 0.2, "i2t_recall1": 0.01}
    assert cr.TASK.chance("paired-digits", {})["zero_shot_top1"] == 0.1


def test_the_floored_logsumexp_is_torchs_within_rounding_and_its_gradient_is_the_softmax():
    from harness.tasks.contrastive.towers import logsumexp

    x = (torch.rand(6, 50, generator=torch.Generator().manual_seed(0), dtype=torch.float64) * 400 - 200)
    x.requires_grad_(True)
    for dim in (0, 1):
        assert torch.allclose(logsumexp(x, dim), torch.logsumexp(x, dim), rtol=0, atol=1e-12)
    logsumexp(x, 1).sum().backward()
    assert torch.allclose(x.grad, torch.softmax(x.detach(), 1), atol=1e-12)
