"""fewshot.cdfss: the mIoU convention, episodes and splits, loaders, the source cache, DFN and SAM-SVN."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from harness.tasks.base import Context, DataUnavailable
from harness.tasks.fewshot import cdfss
from harness.tasks.fewshot.cdfss import (
    TASK,
    SegmentationSet,
    cdfss_folder,
    class_miou,
    synthetic_shapes,
    write_segmentation_folder,
)

torch = pytest.importorskip("torch")

from implementations.dfn import DomainFeatureNavigator, _method, _net  # noqa: E402  (needs torch)



@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> dict:
    """The task's tiny synthetic configuration; ``tiny()`` also writes the folder one's miniature, here under a
    temporary folder (it once wrote ``cd-fss/`` into the working directory at import)."""
    return TASK.tiny(tmp_path_factory.mktemp("cdfss-tiny"))["synthetic-shapes"]


def test_the_tiny_configuration_writes_under_a_temporary_folder(tiny, tmp_path_factory):
    from conftest import ROOT

    assert tiny["image_size"] == 16
    assert any(tmp_path_factory.getbasetemp().glob("cdfss-tiny*/cd-fss/*"))
    assert not (ROOT / "cd-fss").exists() and not (Path.cwd() / "cd-fss").exists()


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def tiny_method(**params) -> DomainFeatureNavigator:
    base = dict(widths=(4, 8, 8, 8), hidden=4, backbone_epochs=1, source_epochs=2, finetune_steps=3, finetune_lr=0.05)
    return DomainFeatureNavigator(**{**base, **params})


def source_context(seed: int) -> Context:
    """The context the task hands ``fit_source``: the source domain's own stream."""
    return Context(seed=seed, split="train", dataset=cdfss.SOURCE_STREAM)


# --------------------------------------------------------------------------- the score


def test_class_miou_accumulates_per_class_before_dividing():
    # class 0: episode A (I=1, U=4) and B (I=3, U=4) → 4/8 = 0.5 (the per-episode mean would be 0.5 too);
    # class 1: episode C (I=1, U=1) and D (I=0, U=3) → 1/4 = 0.25 (per-episode mean: 0.5).
    truth = np.zeros((4, 1, 2, 2), dtype=bool)
    pred = np.zeros_like(truth)
    truth[0, 0, 0, 0] = pred[0, 0, 0, 0] = True          # A: I=1
    pred[0, 0, 0, 1] = pred[0, 0, 1, 0] = pred[0, 0, 1, 1] = True  # A: U=4
    truth[1, 0, :, :] = True
    pred[1, 0, 0, :] = pred[1, 0, 1, 0] = True          # B: I=3, U=4
    truth[2, 0, 1, 1] = pred[2, 0, 1, 1] = True          # C: I=1, U=1
    truth[3, 0, 0, 0] = True
    pred[3, 0, 1, 0] = pred[3, 0, 1, 1] = True          # D: I=0, U=3
    classes = np.array([0, 0, 1, 1])
    assert class_miou(pred, truth, classes) == pytest.approx((0.5 + 0.25) / 2)
    assert class_miou(truth, truth, classes) == pytest.approx(1.0)
    assert class_miou(np.zeros_like(truth), truth, classes) == 0.0


# --------------------------------------------------------------------------- data, splits, episodes


def test_source_is_shared_by_splits_and_targets_and_targets_split_disjointly(tiny):
    def load(split, target):
        return synthetic_shapes(Context(seed=3, split=split, dataset=f"shapes-{target}"), target=target, **tiny)

    test_isic, val_isic, test_fss = load("test", "isic"), load("val", "isic"), load("test", "fss")
    for other in (val_isic, test_fss):
        np.testing.assert_array_equal(other.source.images, test_isic.source.images)
        np.testing.assert_array_equal(other.source.masks, test_isic.source.masks)
        assert other.source_key == test_isic.source_key
    test_rows = {image.tobytes() for image in test_isic.target.images}
    assert not test_rows & {image.tobytes() for image in val_isic.target.images}
    # the labelled object is on top of its distractors: every mask is non-empty
    for data in (test_isic, test_fss):
        assert data.target.masks.reshape(len(data.target.masks), -1).any(axis=1).all()
        assert data.source.masks.reshape(len(data.source.masks), -1).any(axis=1).all()


@pytest.mark.parametrize("target", cdfss.TARGET_STYLES)
def test_every_style_renders_images_and_masks(target, tiny):
    data = synthetic_shapes(Context(seed=0, dataset=target), target=target, **tiny)
    t = data.target
    assert t.images.dtype == np.uint8 and t.images.shape == (12, 3, 16, 16)
    assert t.masks.shape == (12, 16, 16) and 0.02 < t.masks.mean() < 0.6
    if target == "chestx":  # grey: the three channels agree
        np.testing.assert_array_equal(t.images[:, 0], t.images[:, 2])


class _Recorder:
    """A stub method: records what segment receives, answers with the support's first mask."""

    after_source_params = ()

    def __init__(self, *, tag: int = 0):
        self.tag = tag
        self.seen = []

    def fit_source(self, source, context):
        self.fitted_ = True

    def segment(self, support_images, support_masks, query_images, rng, context):
        self.seen.append((support_images.copy(), support_masks.copy(), query_images.copy()))
        return support_masks[:, :1].copy()

    def embed(self, images, context):
        return images.reshape(len(images), -1)[:, :6].astype(float)


def test_episodes_are_identical_for_every_method_and_never_show_query_masks(tiny):
    data = synthetic_shapes(Context(seed=1, dataset="shapes-deepglobe"), target="deepglobe", **tiny)
    context = Context(seed=1, dataset="shapes-deepglobe")
    first, second = _Recorder(tag=1), _Recorder(tag=2)
    scores = TASK.evaluate(first, data, context)
    TASK.evaluate(second, data, context)
    assert set(scores) == set(TASK.metrics)
    assert [s[0].shape[:2] for s in first.seen] == [(3, 1), (3, 5)]  # 1-shot, then 5-shot, 3 episodes each
    for a, b in zip(first.seen, second.seen):
        for x, y in zip(a, b):
            np.testing.assert_array_equal(x, y)
    # support and query images of an episode are different images of one class
    support, masks, query = first.seen[1]
    for e in range(support.shape[0]):
        rows = [image.tobytes() for image in support[e]] + [image.tobytes() for image in query[e]]
        assert len(set(rows)) == len(rows)


def test_source_training_is_cached_across_target_parameters_only(tiny):
    data = synthetic_shapes(Context(seed=2, dataset="shapes-isic"), target="isic", **tiny)
    context = Context(seed=2, dataset="shapes-isic")
    cdfss._SOURCE_TRAINING.clear()
    calls = []

    class Counting(DomainFeatureNavigator):
        def fit_source(self, source, context):
            calls.append((self.finetune_lr, context.split, context.dataset))
            return super().fit_source(source, context)

    base = dict(widths=(4, 8, 8, 8), hidden=4, backbone_epochs=1, source_epochs=1, finetune_steps=2)
    first = Counting(**base, finetune_lr=0.01)
    one = TASK.evaluate(first, data, context)
    trained = {name: {k: v.clone() for k, v in first.state_[name].items()} for name in ("head", "adapters")}
    second = Counting(**base, finetune_lr=0.1)
    two = TASK.evaluate(second, data, replace_split(context, "val"))
    assert calls == [(0.01, "train", cdfss.SOURCE_STREAM)] and one["train_s"] == two["train_s"]
    # the restored instance shares the trained tensors, and fine-tuning on the target writes to none of them
    assert second.state_ is first.state_
    for name, tensors in trained.items():
        for key, value in tensors.items():
            torch.testing.assert_close(first.state_[name][key], value, rtol=0, atol=0)
    TASK.evaluate(Counting(**{**base, "rho": 0.1}, finetune_lr=0.1), data, context)  # a source parameter
    assert len(calls) == 2
    # a restored instance still checks its target-stage parameters
    with pytest.raises(ValueError, match="finetune_steps and finetune_lr must be ≥ 0"):
        TASK.evaluate(Counting(**base, finetune_lr=-1.0), data, context)
    assert len(calls) == 2
    cdfss._SOURCE_TRAINING.clear()


def replace_split(context: Context, split: str) -> Context:
    import dataclasses

    return dataclasses.replace(context, split=split)


# --------------------------------------------------------------------------- the folder loader


def _write_domain(root, domain, classes, per_class, seed):
    rng = np.random.default_rng(seed)
    labels = np.repeat(np.arange(len(classes)), per_class)
    look = cdfss.class_appearance(len(classes), rng)
    images, masks = cdfss.render_shapes(labels, classes, "source", 16, 0.0, look, rng)
    write_segmentation_folder(root, domain, SegmentationSet(images, masks, labels, classes))
    return images, masks


def test_folder_loader_reads_both_mask_layouts(tmp_path):
    from PIL import Image

    _, source_masks = _write_domain(tmp_path, "PASCAL", ("disc", "square"), 3, 0)
    images, masks = _write_domain(tmp_path, "Deepglobe", ("hexagon", "blob"), 7, 1)
    # FSS-1000's layout: <name>.jpg with a 0/1 mask <name>.png beside it
    extra = tmp_path / "Deepglobe" / "crescent"
    extra.mkdir()
    for i in range(7):
        Image.fromarray(images[i].transpose(1, 2, 0)).save(extra / f"{i}.jpg", quality=95)
        Image.fromarray(masks[i].astype(np.uint8)).save(extra / f"{i}.png")
    (extra / "notes.txt").write_text("ignored")
    data = cdfss_folder(Context(seed=0, data_dir=tmp_path), source="PASCAL", target="Deepglobe", image_size=16,
                        episodes=4, cka_images=4)
    assert data.source.class_names == ("disc", "square") and data.source.images.shape == (6, 3, 16, 16)
    np.testing.assert_array_equal(data.source.masks, source_masks)  # PNG round trip, 0/255 cut at 128
    assert data.target.class_names == ("blob", "crescent", "hexagon")
    assert np.bincount(data.target.labels).tolist() == [7, 7, 7]
    np.testing.assert_array_equal(data.target.masks[data.target.labels == 1], masks[:7])  # 0/1 masks cut at 0
    # a given root wins over --data-dir; subsampling a class is seeded
    small = cdfss_folder(Context(seed=0), root=str(tmp_path), source="PASCAL", target="Deepglobe", image_size=8,
                         max_target_per_class=6, episodes=2)
    assert small.target.images.shape[2:] == (8, 8) and np.bincount(small.target.labels).tolist() == [6, 6, 6]
    with pytest.raises(DataUnavailable, match="ISIC"):
        cdfss_folder(Context(seed=0, data_dir=tmp_path), target="ISIC", source="PASCAL")
    with pytest.raises(DataUnavailable, match="--data-dir"):
        cdfss_folder(Context(seed=0))


def test_sixteen_bit_images_and_masks_keep_their_values(tmp_path):
    from PIL import Image

    _write_domain(tmp_path, "PASCAL", ("disc", "square"), 3, 0)
    rng = np.random.default_rng(0)
    folder = tmp_path / "Chest X-ray" / "lungs"
    folder.mkdir(parents=True)
    grey = rng.integers(1000, 60001, size=(6, 16, 16)).astype(np.uint16)
    labels = np.zeros((6, 16, 16), dtype=np.uint16)
    labels[:, 4:12, 3:9] = 1  # a 0/1 label mask, stored in 16 bits
    for i in range(6):
        Image.fromarray(grey[i]).save(folder / f"{i}.png")
        Image.fromarray(labels[i]).save(folder / f"{i}{cdfss.MASK_SUFFIX}")
    assert Image.open(folder / "0_mask.png").mode == "I;16"
    data = cdfss_folder(Context(seed=0, data_dir=tmp_path), source="PASCAL", target="Chest X-ray", image_size=16,
                        episodes=2, cka_images=4)
    expected = np.round(grey / 257.0)[:, None].repeat(3, axis=1)
    assert np.abs(data.target.images.astype(float) - expected).max() <= 1.0  # scaled, not clipped to white
    np.testing.assert_array_equal(data.target.masks, labels > 0)


def test_folder_problems_fail_before_training_naming_the_file(tmp_path, monkeypatch):
    import shutil

    from PIL import Image

    from harness.execute import execute_cell
    from harness.tasks.base import DataError

    good = tmp_path / "good"
    _write_domain(good, "PASCAL", ("disc", "square"), 3, 0)
    _write_domain(good, "FSS-1000", ("hexagon", "blob"), 6, 1)

    def variant(name):
        root = tmp_path / name
        shutil.copytree(good, root)
        return root, root / "FSS-1000" / "blob"

    def load(root):
        return cdfss_folder(Context(seed=0, data_dir=root), source="PASCAL", target="FSS-1000", image_size=16,
                            episodes=2, cka_images=4)

    load(good)
    root, blob = variant("unpaired")
    Image.fromarray(np.zeros((16, 16, 3), np.uint8)).save(blob / "extra.jpg")
    with pytest.raises(DataError, match=r"1 image file\(s\) under .*FSS-1000 have no partner: blob/extra.jpg; "):
        load(root)
    root, blob = variant("sizes")
    Image.fromarray(np.zeros((20, 16), np.uint8)).save(blob / "0008_mask.png")
    with pytest.raises(DataError, match=r"blob/0008_mask.png is 16×20 but its image 0008.png is 16×16"):
        load(root)
    root, blob = variant("truncated")
    (blob / "0009.png").write_bytes((blob / "0009.png").read_bytes()[:50])
    with pytest.raises(DataError, match=r"1 of the 24 image files under .*FSS-1000 cannot be used.*blob/0009.png \(OSError"):
        load(root)

    # too few pairs for a 5-shot episode and its query: refused by the engine before the source training
    root, blob = variant("few")
    for i in (6, 7):
        (blob / f"{i:04d}.png").unlink()
        (blob / f"{i:04d}_mask.png").unlink()
    started = []
    monkeypatch.setattr(cdfss._SOURCE_TRAINING, "fit", lambda *args: started.append(args) or 0.0)
    result = execute_cell({"task": "fewshot.cdfss", "dataset_id": "fss1000", "dataset_name": "cdfss-folder",
                           "dataset_params": {"root": str(root), "image_size": 16, "episodes": 2, "cka_images": 4},
                           "method_name": "dfn", "params": {}, "seed": 0, "split": "test", "device": "cpu",
                           "threads": 1, "timeout_s": 60, "data_dir": None})
    assert started == [] and result["status"] == "failed"
    assert result["error"] == (f"DataError: cdfss-folder: {root / 'FSS-1000'}: class 'blob' has 4 image/mask pairs; "
                               "5-shot episodes with 1 query (validation and test draw theirs from the same images) "
                               "need at least 6 image/mask pairs per class")


# --------------------------------------------------------------------------- DFN and SAM-SVN


def test_zero_initialised_residual_adapters_leave_the_backbone_unchanged():
    generator = torch.Generator().manual_seed(0)
    backbone = _net.init_backbone((4, 8, 8, 8), 3, generator)
    images = torch.randint(0, 256, (5, 3, 16, 16), dtype=torch.uint8)
    plain = _net.frozen_features(backbone, images, _net.DEPTH)
    frozen = [f[None] for f in _net.frozen_features(backbone, images, 3)]
    zero = {3: _net.init_adapter("residual", 8, generator), 4: _net.init_adapter("residual", 8, generator)}
    adapted = _net.adapted_features(backbone, frozen, zero, "residual")
    for a, b in zip(adapted, plain):
        torch.testing.assert_close(a[0], b)
    # a non-zero residual adapter does change level 3 and everything after it, nothing before
    moved = _net.adapted_features(backbone, frozen, {3: torch.eye(8) * 0.5}, "residual")
    torch.testing.assert_close(moved[1][0], plain[1])
    torch.testing.assert_close(moved[2][0], 1.5 * plain[2])
    # a serial adapter at the identity is the residual one at zero: only its init tells them apart
    serial = _net.adapted_features(backbone, frozen, {3: torch.eye(8), 4: torch.eye(8)}, "serial")
    for a, b in zip(serial, plain):
        torch.testing.assert_close(a[0], b)


def test_svn_gradient_is_the_derivative_along_the_singular_values():
    generator = torch.Generator().manual_seed(1)
    weight = torch.randn(6, 6, generator=generator)
    x = torch.randn(6, 10, generator=generator)

    def loss(w):
        return torch.sin(w @ x).sum() + (w**2).sum()

    w = weight.clone().requires_grad_(True)
    (grad,) = torch.autograd.grad(loss(w), w)
    u, vh, g_s = _net.svn_perturbation(weight, grad)
    s = torch.linalg.svdvals(weight).clone().requires_grad_(True)
    (expected,) = torch.autograd.grad(loss(u @ torch.diag(s) @ vh), s)
    torch.testing.assert_close(g_s, expected, rtol=1e-4, atol=1e-4)


def test_svn_perturbation_lies_in_the_singular_value_subspace():
    generator = torch.Generator().manual_seed(2)
    weights = [torch.randn(5, 5, generator=generator), torch.randn(3, 3, generator=generator)]
    grads = [torch.randn(5, 5, generator=generator), torch.randn(3, 3, generator=generator)]
    steps = _net.sam_directions(weights, grads, "svn", rho=0.7)
    norms = []
    for w, e in zip(weights, steps):
        u, s, vh = torch.linalg.svd(w)
        inside = u.T @ e @ vh.T  # Uᵀ ε V: diagonal when ε = U diag(ε_S) Vᵀ
        torch.testing.assert_close(inside, torch.diag(torch.diagonal(inside)), atol=1e-5, rtol=0)
        # α̂ = U (S + ε_S) Vᵀ: same singular vectors, shifted values
        torch.testing.assert_close(u @ torch.diag(s + torch.diagonal(inside)) @ vh, w + e, atol=1e-5, rtol=0)
        norms.append(torch.diagonal(inside))
    assert float(torch.cat(norms).norm()) == pytest.approx(0.7, rel=1e-5)  # one ρ over all adapters
    plain = _net.sam_directions(weights, grads, "all", rho=0.7)
    total = torch.sqrt(sum((g**2).sum() for g in grads))
    for g, e in zip(grads, plain):
        torch.testing.assert_close(e, 0.7 * g / total)


@pytest.mark.parametrize("mode", ["all", "svn"])
def test_sam_step_takes_the_gradient_at_the_perturbed_point_and_restores(mode):
    generator = torch.Generator().manual_seed(3)
    adapter = torch.randn(4, 4, generator=generator).requires_grad_(True)
    other = torch.randn(4, generator=generator).requires_grad_(True)
    x = torch.randn(4, 7, generator=generator)

    def loss_fn():
        return torch.tanh(adapter @ x + other[:, None]).pow(2).sum()

    start_a, start_o = adapter.detach().clone(), other.detach().clone()
    (grad,) = torch.autograd.grad(loss_fn(), adapter)
    (step,) = _net.sam_directions([start_a], [grad], mode, 0.3)
    a_hat = (start_a + step).requires_grad_(True)
    o = start_o.clone().requires_grad_(True)
    expected_a, expected_o = torch.autograd.grad(torch.tanh(a_hat @ x + o[:, None]).pow(2).sum(), (a_hat, o))
    optimizer = torch.optim.SGD([adapter, other], lr=0.1)
    _net.sam_step(loss_fn, [adapter, other], [adapter], mode, 0.3, optimizer)
    torch.testing.assert_close(adapter.detach(), start_a - 0.1 * expected_a)
    torch.testing.assert_close(other.detach(), start_o - 0.1 * expected_o)


def _episodes(data, shots, count, seed):
    from harness.tasks.fewshot.episodes import sample_episodes

    drawn = sample_episodes(data.target.labels, ways=1, shots=shots, queries=1, episodes=count,
                            rng=np.random.default_rng(seed))
    t = data.target
    return t.images[drawn.support[:, 0]], t.masks[drawn.support[:, 0]], t.images[drawn.query[:, 0]]


def test_dfn_episodes_are_independent_and_the_source_weights_stay_put(tiny):
    data = synthetic_shapes(Context(seed=4, dataset="shapes-isic"), target="isic", **tiny)
    context = Context(seed=4)
    method = tiny_method()
    method.fit_source(data.source, source_context(4))
    before = {k: v.clone() for k, v in method.state_["adapters"].items()}
    support, masks, query = _episodes(data, 5, 4, 0)
    together = method.segment(support, masks, query, np.random.default_rng(0), context)
    alone = method.segment(support[2:3], masks[2:3], query[2:3], np.random.default_rng(0), context)
    torch.testing.assert_close(together[2:3], alone, atol=1e-5, rtol=1e-5)
    method.episode_batch = 3  # chunks of episodes give the same answers
    torch.testing.assert_close(method.segment(support, masks, query, np.random.default_rng(0), context), together,
                               atol=1e-5, rtol=1e-5)
    for level, weight in method.state_["adapters"].items():
        torch.testing.assert_close(weight, before[level])
    # fine-tuning moved the adapters: without it the answer differs
    method.finetune_steps = 0
    assert not torch.allclose(method.segment(support, masks, query, np.random.default_rng(0), context), together)


def test_episode_block_with_per_episode_weights_equals_each_episode_alone():
    generator = torch.Generator().manual_seed(0)
    backbone = _net.init_backbone((4, 6, 6, 5), 3, generator)
    x = torch.randn(3, 2, 6, 8, 8, generator=generator)  # 3 episodes, 2 images each, level-3 features
    last = _net.DEPTH - 1
    weight = torch.randn(3, 5, 6, 3, 3, generator=generator)
    bias = torch.randn(3, 5, generator=generator)
    grouped = _net.episode_block({**backbone, f"block{last}.weight": weight, f"block{last}.bias": bias}, last, x)
    for b in range(3):
        alone = _net.block({**backbone, f"block{last}.weight": weight[b], f"block{last}.bias": bias[b]}, last, x[b])
        torch.testing.assert_close(grouped[b], alone, atol=1e-5, rtol=1e-5)
    shared = _net.episode_block(backbone, last, x)  # shared weights take the plain path
    torch.testing.assert_close(shared[1], _net.block(backbone, last, x[1]))


def test_last_block_finetuning_is_per_episode_and_leaves_the_source_backbone_alone(tiny):
    data = synthetic_shapes(Context(seed=4, dataset="shapes-isic"), target="isic", **tiny)
    context = Context(seed=4)
    plain = tiny_method(adapter="none", sam="none")
    plain.fit_source(data.source, source_context(4))
    method = tiny_method(adapter="none", sam="none", finetune="last-block")
    method.state_ = plain.state_  # what the task's source cache does: finetune acts after the source stage
    before = {k: v.clone() for k, v in plain.state_["backbone"].items()}
    support, masks, query = _episodes(data, 5, 4, 0)
    together = method.segment(support, masks, query, np.random.default_rng(0), context)
    alone = method.segment(support[1:2], masks[1:2], query[1:2], np.random.default_rng(0), context)
    torch.testing.assert_close(together[1:2], alone, atol=1e-5, rtol=1e-5)
    for key, value in plain.state_["backbone"].items():
        torch.testing.assert_close(value, before[key], rtol=0, atol=0)
    untuned = plain.segment(support, masks, query, np.random.default_rng(0), context)
    assert not torch.allclose(together, untuned)  # the block moved
    method.finetune_steps = 0  # no step: exactly the no-adapter arm
    torch.testing.assert_close(method.segment(support, masks, query, np.random.default_rng(0), context), untuned,
                               atol=1e-5, rtol=1e-5)


def test_dfn_source_training_is_deterministic_and_shares_the_backbone_across_arms(tiny):
    data = synthetic_shapes(Context(seed=5, dataset="shapes-fss"), target="fss", **tiny)
    _method._BACKBONES.clear()
    states, reused = [], []
    for params in ({"sam": "svn"}, {"sam": "svn"}, {"adapter": "none", "sam": "none"}):
        method = tiny_method(**params)
        reused.append(method.fit_source(data.source, source_context(5)))
        states.append(method.state_)
    # the backbone is pre-trained once; later arms report its original seconds for train_s
    assert reused[0] == 0.0 and reused[1] > 0.0 and reused[2] == reused[1]
    for a, b in zip(states[0]["head"].values(), states[1]["head"].values()):
        torch.testing.assert_close(a, b, rtol=0, atol=0)
    for key, value in states[0]["backbone"].items():
        torch.testing.assert_close(states[2]["backbone"][key], value, rtol=0, atol=0)
    assert states[2]["adapters"] == {}


def test_parameter_checks(tiny):
    data = synthetic_shapes(Context(seed=0), **tiny)
    for bad, message in (({"adapter": "parallel"}, "adapter='parallel'"), ({"adapter": "none", "sam": "svn"}, "perturbs"),
                         ({"levels": (0,)}, "levels=\\[0\\]"), ({"sam": "adam"}, "sam='adam'"),
                         ({"finetune": "head"}, "finetune='head'"), ({"finetune": "last-block"}, "no-adapter baseline")):
        with pytest.raises(ValueError, match=message):
            tiny_method(**bad).fit_source(data.source, source_context(0))
    with pytest.raises(ValueError, match="target"):
        synthetic_shapes(Context(seed=0), target="mars")


def test_validating_the_modules_does_not_import_torch():
    code = ("import sys; import harness.tasks.fewshot.cdfss, implementations.dfn; "
            "sys.exit('torch' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


# --------------------------------------------------------------------------- the trivial answers


def test_mask_prior_votes_the_support_masks_and_never_reads_the_query():
    from baselines.mask_prior import MaskPrior

    masks = np.zeros((2, 3, 4, 4), dtype=bool)  # 2 episodes × 3 shots
    masks[0, 0, :2] = masks[0, 1, :2] = True  # two of three shots: the top half
    masks[0, 2, 3] = True  # one of three: the bottom row, outvoted
    masks[1, :, :, 0] = True  # every shot: the first column
    queries = np.random.default_rng(0).integers(0, 256, (2, 5, 3, 4, 4), dtype=np.uint8)
    rng = np.random.default_rng(1)
    out = MaskPrior().segment(None, masks, queries, rng, Context(seed=0))
    assert out.shape == (2, 5, 4, 4) and out.dtype == bool
    assert (out[0] == np.arange(4)[:, None].__lt__(2)).all() and (out[1] == (np.arange(4) == 0)[None, :]).all()
    assert (MaskPrior().segment(None, masks, 255 - queries, rng, Context(seed=0)) == out).all()  # the query unread
    one_shot = MaskPrior().segment(None, masks[:, :1], queries, rng, Context(seed=0))
    assert (one_shot == masks[:, :1]).all()  # one shot: the support mask itself


def test_the_all_foreground_mask_scores_the_objects_share_of_the_image():
    from baselines.mask_prior import MaskPrior

    truth = np.zeros((1, 1, 10, 10), dtype=bool)
    truth[0, 0, :3, :4] = True  # 12 of 100 pixels
    out = MaskPrior(rule="all").segment(None, truth, np.zeros((1, 1, 3, 10, 10), dtype=np.uint8), None, None)
    assert out.all() and class_miou(out, truth, np.array([0])) == pytest.approx(0.12)
    with pytest.raises(ValueError, match="rule = 'half'; expected one of support-mean, all"):
        MaskPrior(rule="half")


def test_mask_prior_embeds_pooled_pixels_of_any_size():
    from baselines.mask_prior import MaskPrior

    images = np.random.default_rng(0).integers(0, 256, (4, 3, 20, 13), dtype=np.uint8)
    features = MaskPrior().embed(images, None)
    assert features.shape == (4, 3 * 8 * 8)
    assert features[:, 0] == pytest.approx(images[:, 0, :3, :2].mean(axis=(1, 2)) / 255.0)  # the first 3 × 2 block
