"""fewshot.cdfsl: the ProtoNet protocol, CKA, episodes, loaders, the ViT and ReCIT's perturbations."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from harness.tasks.base import Context, DataUnavailable
from harness.tasks.fewshot import cdfsl
from harness.tasks.fewshot.cdfsl import (
    TASK,
    SourceSet,
    cdfsl_imagefolder,
    ci95,
    protonet_accuracy,
    synthetic_digit_domains,
)
from harness.tasks.fewshot.episodes import Episodes, sample_episodes
from harness.tasks.fewshot.images import covariance_alignment, resize_bilinear, translate, write_image_folder

torch = pytest.importorskip("torch")


pytestmark = pytest.mark.usefixtures("one_torch_thread")


# --------------------------------------------------------------------------- ProtoNet scoring


def test_protonet_centring_against_a_hand_computation():
    # 2-way 2-shot. Way A: (4,0), (5,2); way B: (6,1), (4,2); queries (5,3) of A and (6,1.2) of B.
    # L2-normalised, the support mean is m = (0.95232, 0.24575). After subtracting m and
    # normalising again, prototype A = (0.00198, 0.00038), B = (0.05504, 0.01936); query A
    # = (−0.33276, 0.94301): squared distances 1.00061 (A) < 1.00352 (B); query B =
    # (0.49473, −0.86904): 0.99870 (A) > 0.98259 (B). Both right: 100 %.
    # Without the centring both queries go to the other way (0 %): the test tells them apart.
    features = np.array([[4.0, 0.0], [5.0, 2.0], [6.0, 1.0], [4.0, 2.0], [5.0, 3.0], [6.0, 1.2]])
    episode = Episodes(support=np.array([[[0, 1], [2, 3]]]), query=np.array([[[4], [5]]]), classes=np.array([[0, 1]]))
    assert protonet_accuracy(features, episode)[0] == pytest.approx(100.0)
    f = features / np.linalg.norm(features, axis=1, keepdims=True)
    uncentred = np.stack([f[[0, 1]].mean(0), f[[2, 3]].mean(0)])
    assert [np.argmin(((f[q] - uncentred) ** 2).sum(1)) for q in (4, 5)] == [1, 0]
    # swapping the queries' ways makes every answer wrong
    swapped = Episodes(support=episode.support, query=np.array([[[5], [4]]]), classes=episode.classes)
    assert protonet_accuracy(features, swapped)[0] == pytest.approx(0.0)


def _reference_accuracy(features, episodes):
    """One episode at a time, written straight from the paper's description."""
    out = []
    for e in range(episodes.count):
        s = features[episodes.support[e]]
        q = features[episodes.query[e]]
        s = s / np.linalg.norm(s, axis=-1, keepdims=True)
        q = q / np.linalg.norm(q, axis=-1, keepdims=True)
        mean = s.reshape(-1, s.shape[-1]).mean(0)
        s, q = s - mean, q - mean
        s = s / np.linalg.norm(s, axis=-1, keepdims=True)
        q = q / np.linalg.norm(q, axis=-1, keepdims=True)
        prototypes = s.mean(1)
        correct = 0
        for way in range(q.shape[0]):
            for query in q[way]:
                correct += int(np.argmin(((query - prototypes) ** 2).sum(1)) == way)
        out.append(100.0 * correct / (q.shape[0] * q.shape[1]))
    return np.array(out)


def test_protonet_matches_the_per_episode_reference_and_chunks_agree():
    rng = np.random.default_rng(0)
    labels = np.repeat(np.arange(6), 12)
    features = rng.normal(size=(labels.size, 7)) + 1.5 * rng.normal(size=(6, 7))[labels] + 3.0
    episodes = sample_episodes(labels, ways=5, shots=3, queries=4, episodes=40, rng=rng)
    expected = _reference_accuracy(features, episodes)
    for gram in (False, True):  # gathering the features, and the pool's Gram matrix
        np.testing.assert_allclose(protonet_accuracy(features, episodes, gram=gram), expected)
        np.testing.assert_allclose(protonet_accuracy(features, episodes, chunk_elements=1, gram=gram), expected)
    assert 20.0 < expected.mean() < 100.0


def test_the_gram_path_scores_wide_features_as_the_reference_does():
    """Raw pixels: D far above the pool size, where the Gram path is taken; 1 and 5 shots."""
    rng = np.random.default_rng(1)
    labels = np.repeat(np.arange(8), 10)
    features = rng.uniform(size=(labels.size, 3072)) + 0.05 * rng.normal(size=(8, 3072))[labels]
    for shots in (1, 5):
        episodes = sample_episodes(labels, ways=5, shots=shots, queries=3, episodes=30, rng=rng)
        expected = _reference_accuracy(features, episodes)
        np.testing.assert_allclose(protonet_accuracy(features, episodes), expected)
        assert 20.0 < expected.mean() < 100.0


def test_ci95_is_the_papers_interval():
    accuracies = np.array([60.0, 70.0, 80.0, 90.0])
    assert ci95(accuracies) == pytest.approx(1.96 * np.sqrt(125.0) / 2.0)


# --------------------------------------------------------------------------- CKA


def test_covariance_alignment_properties():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(300, 6)) @ rng.normal(size=(6, 6))
    y = rng.normal(size=(200, 6)) @ rng.normal(size=(6, 6))
    q, _ = np.linalg.qr(rng.normal(size=(6, 6)))
    value = covariance_alignment(x, y)
    assert 0.0 <= value <= 1.0
    assert covariance_alignment(x, x) == pytest.approx(1.0)
    assert covariance_alignment(y, x) == pytest.approx(value)
    assert covariance_alignment(3.0 * x + 5.0, y) == pytest.approx(value)  # scale and offset of a domain
    assert covariance_alignment(x @ q, y @ q) == pytest.approx(value)  # one rotation applied to both
    # covariances diag(1, 0) and diag(0, 1): orthogonal → 0
    a = np.column_stack([rng.normal(size=100), np.zeros(100)])
    b = np.column_stack([np.zeros(100), rng.normal(size=100)])
    assert covariance_alignment(a, b) == pytest.approx(0.0)
    # hand case: covariances diag(1, 1) and diag(1, 0) → 1 / √2
    c = np.array([[1.0, 1.0], [1.0, -1.0], [-1.0, 1.0], [-1.0, -1.0]])
    d = np.array([[1.0, 0.0], [-1.0, 0.0]])
    assert covariance_alignment(c, d) == pytest.approx(1.0 / np.sqrt(2.0))
    # two samples of one distribution are more alike than two different distributions
    same = covariance_alignment(rng.normal(size=(2000, 4)) * [3, 2, 1, 1], rng.normal(size=(2000, 4)) * [3, 2, 1, 1])
    other = covariance_alignment(rng.normal(size=(2000, 4)) * [3, 2, 1, 1], rng.normal(size=(2000, 4)) * [1, 1, 2, 3])
    assert same > 0.99 and other < 0.6


def test_covariance_alignment_with_more_channels_than_images_equals_the_covariance_form():
    # raw pixels have d = 3072 channels and a few hundred images: the Gram-matrix form is used
    rng = np.random.default_rng(2)
    x = rng.normal(size=(20, 60)) @ rng.normal(size=(60, 60))
    y = rng.normal(size=(15, 60))
    xc, yc = x - x.mean(axis=0), y - y.mean(axis=0)
    cov_x, cov_y = xc.T @ xc, yc.T @ yc
    expected = np.sum(cov_x * cov_y) / (np.linalg.norm(cov_x) * np.linalg.norm(cov_y))
    assert covariance_alignment(x, y) == pytest.approx(expected, rel=1e-10)
    assert covariance_alignment(x, x[:10]) == pytest.approx(covariance_alignment(x[:10], x), rel=1e-10)


# --------------------------------------------------------------------------- episodes


def test_episodes_are_valid_and_reproducible():
    labels = np.repeat(np.arange(8), [20, 21, 22, 23, 24, 25, 26, 27])
    draw = lambda seed: sample_episodes(labels, ways=5, shots=5, queries=15, episodes=300,
                                        rng=np.random.default_rng(seed))
    first, again, other = draw(3), draw(3), draw(4)
    np.testing.assert_array_equal(first.support, again.support)
    np.testing.assert_array_equal(first.query, again.query)
    assert not np.array_equal(first.query, other.query)
    assert first.support.shape == (300, 5, 5) and first.query.shape == (300, 5, 15)
    images = np.concatenate([first.support, first.query], axis=2)  # (E, ways, 20)
    assert np.all(labels[images] == first.classes[:, :, None])  # every image belongs to its way
    for e in range(300):
        assert len(set(images[e].ravel())) == images[e].size  # no image twice in an episode
        assert len(set(first.classes[e])) == 5
    assert set(np.unique(first.classes)) == set(range(8))
    with pytest.raises(ValueError, match="class 0 has 20 images"):
        sample_episodes(labels, ways=5, shots=10, queries=15, episodes=2, rng=np.random.default_rng(0))


def test_episodes_identical_across_methods_and_val_test_disjoint():
    test, val = Context(seed=3, split="test", dataset="near"), Context(seed=3, split="val", dataset="near")
    params = dict(target="near", image_size=16, per_class=None, episodes=5)
    data_test, data_again, data_val = (synthetic_digit_domains(c, **params) for c in (test, test, val))
    # the task's episodes come from the cell's context alone: the same for every method
    draw = lambda data, ctx: sample_episodes(data.target.labels, ways=5, shots=5, queries=15, episodes=5,
                                             rng=ctx.rng("episodes", "target", "5-shot"))
    np.testing.assert_array_equal(draw(data_test, test).query, draw(data_again, test).query)
    np.testing.assert_array_equal(data_test.target.images, data_again.target.images)
    # the source is the same for val and test and for every target; the targets' images differ
    other_target = synthetic_digit_domains(test, **{**params, "target": "inverted"})
    assert data_val.source_train.images is data_test.source_train.images
    assert other_target.source_heldout.images is data_test.source_heldout.images
    assert data_val.source_key == data_test.source_key
    # val and test draw each target class's digits from disjoint halves, as the loader splits them
    from sklearn.datasets import load_digits

    digits = load_digits().target

    def halves(split):
        partition = cdfsl._source_context(Context(seed=3, split=split)).rng("partition", "target-digits")
        return [cdfsl._half_for_split(np.flatnonzero(digits == c), split, partition) for c in range(5, 10)]

    for val_half, test_half, c in zip(halves("val"), halves("test"), range(5, 10)):
        assert not set(val_half) & set(test_half)
        assert sorted([*val_half, *test_half]) == np.flatnonzero(digits == c).tolist()
    assert data_val.target.images.shape[0] == sum(map(len, halves("val")))
    assert data_test.target.images.shape[0] == sum(map(len, halves("test")))


def test_synthetic_targets_and_shift():
    ctx = Context(seed=0, split="test", dataset="x")
    near = synthetic_digit_domains(ctx, target="near", image_size=16, per_class=20, queries=1)
    assert near.source_train.images.dtype == np.uint8 and near.source_train.images.shape[1:] == (3, 16, 16)
    assert set(near.source_train.labels) == {0, 1, 2, 3, 4} and set(near.target.labels) == {5, 6, 7, 8, 9}
    assert near.source_heldout.images.shape[0] == 5 * 6  # 30 % of 20 per class
    inverted = synthetic_digit_domains(ctx, target="inverted", image_size=16, per_class=20, queries=1, shift=1.0)
    assert inverted.target.images.mean() > near.target.images.mean() + 60  # dark strokes on white
    unshifted = synthetic_digit_domains(ctx, target="grating", image_size=16, per_class=20, queries=1, shift=0.0)
    assert unshifted.target.images.mean() == pytest.approx(near.target.images.mean(), abs=25)
    texture = synthetic_digit_domains(ctx, target="texture", image_size=16, per_class=20, queries=1)
    assert set(texture.target.labels) == set(range(5)) and texture.target.images.shape[0] == 100
    with pytest.raises(ValueError, match="target="):
        synthetic_digit_domains(ctx, target="sketch")
    with pytest.raises(ValueError, match="must be disjoint digits"):  # source and target classes overlap
        synthetic_digit_domains(ctx, source_classes=(0, 1, 5))
    # episodes the data cannot give are refused before any training: 6 held-out images of a class
    with pytest.raises(ValueError, match="held-out source images: 5 classes, the smallest with 6 images; 5-way "
                                         "5-shot 15-query episodes need 5 classes of 20"):
        synthetic_digit_domains(ctx, target="near", image_size=16, per_class=20)


def test_resize_and_translate():
    image = np.arange(16, dtype=float).reshape(1, 4, 4)
    np.testing.assert_allclose(resize_bilinear(image, 4), image)  # same size → unchanged
    up = resize_bilinear(np.ones((2, 8, 8)), 32)
    np.testing.assert_allclose(up, 1.0)
    shifted = translate(image, np.array([1]), np.array([-1]))
    np.testing.assert_array_equal(shifted[0, 1:, :3], image[0, :3, 1:])
    assert np.all(shifted[0, 0] == 0) and np.all(shifted[0, :, 3] == 0)


# --------------------------------------------------------------------------- image folders


def _write_layout(root, wrap_target=True):
    rng = np.random.default_rng(0)
    counter = iter(range(10_000))

    def images(n):  # every image unique: its first pixel holds a counter
        out = rng.integers(0, 255, size=(n, 3, 20, 24), dtype=np.uint8)
        for image in out:
            k = next(counter)
            image[:, 0, 0] = (k % 256, k // 256, 7)
        return out

    write_image_folder(root / "miniImageNet" / "train", {f"n0{c}": images(16) for c in range(5)})
    write_image_folder(root / "miniImageNet" / "test", {f"n1{c}": images(8) for c in range(5)})
    target = root / "EuroSAT" / "2750" if wrap_target else root / "EuroSAT"
    write_image_folder(target, {name: images(16) for name in ("Forest", "River", "Highway", "Sea", "Pasture")})


def test_imagefolder_loader_reads_the_layout(tmp_path):
    _write_layout(tmp_path)
    common = dict(target="EuroSAT", image_size=16, source_per_class=None, target_per_class=None,
                  heldout_fraction=0.5, queries=3, episodes=4)
    test = cdfsl_imagefolder(Context(seed=0, split="test", dataset="eurosat", data_dir=tmp_path), **common)
    val = cdfsl_imagefolder(Context(seed=0, split="val", dataset="eurosat"), root=str(tmp_path), **common)
    assert test.source_train.images.shape == (40, 3, 16, 16) and test.source_heldout.images.shape == (40, 3, 16, 16)
    assert set(test.source_train.labels) == {0, 1, 2, 3, 4}  # train/ is used, test/ is not
    assert test.target.images.shape == (40, 3, 16, 16) and np.bincount(test.target.labels).tolist() == [8] * 5
    # the source is the same object for both splits; the targets are disjoint halves
    assert val.source_train.images is test.source_train.images
    signature = lambda images: {tuple(im[:, 0, 0]) for im in images}
    assert not signature(val.target.images) & signature(test.target.images)
    capped = cdfsl_imagefolder(Context(seed=0, split="test", dataset="eurosat", data_dir=tmp_path),
                               **{**common, "queries": 1, "target_per_class": 6})
    assert np.bincount(capped.target.labels).tolist() == [6] * 5


def test_imagefolder_loader_skips_cleanly_without_data(tmp_path):
    with pytest.raises(DataUnavailable, match="--data-dir"):
        cdfsl_imagefolder(Context(seed=0))
    with pytest.raises(DataUnavailable, match="no folder"):
        cdfsl_imagefolder(Context(seed=0, data_dir=tmp_path))


def _imagefolder_cell(root, seed=0, **params):
    """A cell of the engine running vit-protonet on cdfsl-imagefolder at ``root`` (16 px, 3 queries)."""
    from harness.execute import execute_cell

    params = {"root": str(root), "image_size": 16, "source_per_class": None, "target_per_class": None,
              "heldout_fraction": 0.5, "queries": 3, "episodes": 4, "epochs": 1, "batch_size": 32, **params}
    return execute_cell({"task": "fewshot.cdfsl", "dataset_id": "eurosat", "dataset_name": "cdfsl-imagefolder",
                         "dataset_params": params, "method_name": "vit-protonet", "params": {}, "seed": seed,
                         "split": "test", "device": "cpu", "threads": 1, "timeout_s": 60, "data_dir": None})


@pytest.fixture
def training_spy(monkeypatch):
    """Every source training the task starts, recorded and stopped (the tests below expect none)."""
    started = []

    def fit(method, context, source_key, train):
        started.append(type(method).__name__)
        raise RuntimeError("source training started")

    monkeypatch.setattr(cdfsl._SOURCE_TRAINING, "fit", fit)
    return started


def test_too_few_images_per_class_fail_before_training_with_the_true_count(tmp_path, training_spy):
    rng = np.random.default_rng(0)
    write_image_folder(tmp_path / "miniImageNet", {f"n0{c}": rng.integers(0, 255, (16, 3, 16, 16)) for c in range(5)})
    target = tmp_path / "EuroSAT"
    write_image_folder(target, {name: rng.integers(0, 255, (10, 3, 16, 16))
                                for name in ("Forest", "River", "Highway", "Sea", "Pasture")})
    result = _imagefolder_cell(tmp_path)
    assert training_spy == []  # the data was refused before any training
    assert result["status"] == "failed" and result["error"].startswith("DataError: cdfsl-imagefolder: ")
    # the folder, the count on disk (10, not the 5 of a split's half), the minimum and why
    assert f"{target}: class 'Forest' has 10 images" in result["error"]
    assert "(and 2 more classes)" in result["error"]
    assert ("5-way 5-shot 3-query episodes on half of each class for validation and the other half for test need "
            "at least 16 images per class") in result["error"]
    # too few classes is said as plainly
    for name in ("River", "Highway", "Sea", "Pasture"):
        for path in (target / name).iterdir():
            path.unlink()
        (target / name).rmdir()
    fewer = _imagefolder_cell(tmp_path)
    assert training_spy == [] and fewer["status"] == "failed"
    assert f"{target} holds 1 class folder(s) with images ('Forest'); 5-way episodes need at least 5" in fewer["error"]


def test_a_corrupt_image_fails_every_seed_before_training_naming_the_file(tmp_path, training_spy):
    rng = np.random.default_rng(0)
    write_image_folder(tmp_path / "miniImageNet", {f"n0{c}": rng.integers(0, 255, (16, 3, 16, 16)) for c in range(5)})
    write_image_folder(tmp_path / "EuroSAT", {f"c{c}": rng.integers(0, 255, (20, 3, 16, 16)) for c in range(5)})
    broken = tmp_path / "EuroSAT" / "c2" / "0007.png"
    broken.write_bytes(broken.read_bytes()[:60])  # a download cut short
    for seed in range(4):  # a seed draws 8 of the 10 images of a class's half: most seeds miss the file
        result = _imagefolder_cell(tmp_path, seed=seed, target_per_class=8)
        assert training_spy == [] and result["status"] == "failed", (seed, result["error"])
        assert result["error"].startswith("DataError: cdfsl-imagefolder: 1 of the 100 image files under "
                                          f"{tmp_path / 'EuroSAT'} cannot be used")
        assert f"{broken} (OSError: " in result["error"] and result["error"].endswith("Replace or remove them")


def test_every_image_is_decoded_once_per_process_until_it_changes(tmp_path, monkeypatch):
    from harness.tasks.base import DataError
    from harness.tasks.fewshot import images

    rng = np.random.default_rng(0)
    folder = write_image_folder(tmp_path / "d", {f"c{c}": rng.integers(0, 255, (3, 3, 8, 8)) for c in range(2)})
    files = [(p,) for p in sorted(folder.rglob("*.png"))]
    decoded = []
    real = images._problem
    monkeypatch.setattr(images, "_problem", lambda group: decoded.append(group) or real(group))
    images.check_images(files, folder, "test")
    images.check_images(files, folder, "test")
    assert len(decoded) == 6  # the second check found the first one's answer
    files[0][0].write_bytes(b"not an image")
    with pytest.raises(DataError, match=r"1 of the 6 image files .*/c0/0000.png \(UnidentifiedImageError"):
        images.check_images(files, folder, "test")
    assert len(decoded) == 12


def test_sixteen_bit_images_are_scaled_not_clipped(tmp_path):
    import struct
    import zlib

    from PIL import Image

    from harness.tasks.fewshot.images import load_image

    grey = np.linspace(1000, 60000, 64).round().astype(np.uint16).reshape(8, 8)
    Image.fromarray(grey).save(tmp_path / "grey16.png")
    assert Image.open(tmp_path / "grey16.png").mode == "I;16"
    expected = np.round(grey / 257.0)
    read = load_image(tmp_path / "grey16.png", 8).astype(float)
    assert read.shape == (3, 8, 8) and np.abs(read - expected).max() <= 1.0  # not near-white: 4 .. 233
    assert read.min() <= 5 and read.max() >= 232
    # big-endian 16-bit (TIFF's I;16B) reads the same
    Image.frombytes("I;16B", (8, 8), grey.astype(">u2").tobytes()).save(tmp_path / "grey16.tif")
    assert np.abs(load_image(tmp_path / "grey16.tif", 8) - expected).max() <= 1.0

    # 16-bit colour (Pillow reads 48-bit PNGs as 8-bit RGB): written by hand, Pillow cannot write it
    rgb = np.stack([grey, grey[::-1], np.full_like(grey, 40000)], axis=-1)  # (8, 8, 3)
    rows = b"".join(b"\x00" + row.astype(">u2").tobytes() for row in rgb)
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    png = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 8, 8, 16, 2, 0, 0, 0))
           + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))
    (tmp_path / "rgb48.png").write_bytes(png)
    read = load_image(tmp_path / "rgb48.png", 8).astype(float)
    assert np.abs(read - np.round(rgb.transpose(2, 0, 1) / 257.0)).max() <= 1.0


# --------------------------------------------------------------------------- the task


class _PixelMeans:
    """A torch-free learner for protocol tests: features are mean colours of a 2×2 grid."""

    after_source_params = ("tag",)
    fits = 0
    budgets: list = []

    def __init__(self, *, scale: float = 1.0, tag: str = ""):
        self.scale = scale
        self.tag = tag

    def fit_source(self, source, context):
        type(self).fits += 1
        assert context.split == "train" and source.labels.shape == (source.images.shape[0],)
        type(self).budgets.append((source.epochs, source.batch_size))
        self.offset_ = float(source.images.mean())

    def embed(self, images):
        n, c, h, w = images.shape
        grid = images.reshape(n, c, 2, h // 2, 2, w // 2).mean(axis=(3, 5)).reshape(n, -1)
        return self.scale * (grid - self.offset_)


def test_task_scores_and_reuses_source_training():
    cdfsl._SOURCE_TRAINING.clear()
    _PixelMeans.fits, _PixelMeans.budgets = 0, []
    ctx = Context(seed=0, split="test", dataset="near")
    data = synthetic_digit_domains(ctx, target="near", image_size=16, per_class=40, episodes=50, queries=5)
    metrics = TASK.evaluate(_PixelMeans(), data, ctx)
    assert set(metrics) == set(TASK.metrics)
    assert 30.0 < metrics["accuracy_5shot"] <= 100.0 and 20.0 < metrics["accuracy_1shot"] < metrics["accuracy_5shot"]
    assert metrics["source_target_gap"] == pytest.approx(metrics["source_accuracy"] - metrics["accuracy_5shot"])
    assert 0.0 <= metrics["covariance_alignment"] <= 1.0
    # a parameter that changes only embed() reuses the trained model; one that changes training does not
    again = TASK.evaluate(_PixelMeans(tag="probe"), data, ctx)
    assert _PixelMeans.fits == 1 and again["train_s"] == metrics["train_s"]
    assert again["accuracy_5shot"] == metrics["accuracy_5shot"]  # same episodes, same features
    TASK.evaluate(_PixelMeans(scale=2.0), data, ctx)
    assert _PixelMeans.fits == 2
    # the budget is part of what training depends on: another number of epochs retrains
    TASK.evaluate(_PixelMeans(), replace(data, epochs=5), ctx)
    assert _PixelMeans.fits == 3 and _PixelMeans.budgets == [(30, 64), (30, 64), (5, 64)]
    cdfsl._SOURCE_TRAINING.clear()


# --------------------------------------------------------------------------- the ViT


def test_vit_parameter_names_follow_dino():
    from components.vit import build_vit

    model = build_vit("vit-s16")
    names = set(model.state_dict())
    expected = {"cls_token", "pos_embed", "patch_embed.proj.weight", "patch_embed.proj.bias", "norm.weight", "norm.bias"}
    for i in range(12):
        for part in ("norm1", "attn.qkv", "attn.proj", "norm2", "mlp.fc1", "mlp.fc2"):
            expected |= {f"blocks.{i}.{part}.weight", f"blocks.{i}.{part}.bias"}
    assert names == expected
    assert model.pos_embed.shape == (1, 197, 384)


def test_vit_weights_load_and_positions_interpolate(tmp_path):
    from components.vit import build_vit, encode, load_weights, patch_tokens, position_embedding

    torch.manual_seed(0)
    source = build_vit("tiny")
    path = tmp_path / "checkpoint.pth"
    torch.save({"teacher": {f"module.backbone.{k}": v for k, v in source.state_dict().items()},
                "head.weight": torch.zeros(3)}, path)
    target = build_vit("tiny")
    load_weights(target, path)
    x = torch.rand(2, 3, 32, 32)
    with torch.no_grad():
        tokens, grid = patch_tokens(source, x)
        expected = encode(source, tokens, position_embedding(source, grid))
        tokens, grid = patch_tokens(target, x)
        np.testing.assert_allclose(encode(target, tokens, position_embedding(target, grid)), expected, atol=1e-6)
        assert position_embedding(source, (4, 4)) is source.pos_embed  # native grid: untouched
        assert position_embedding(source, (6, 5)).shape == (1, 31, 64)
    with pytest.raises(ValueError, match="lacks"):
        torch.save({"cls_token": torch.zeros(1, 1, 64)}, tmp_path / "partial.pth")
        load_weights(build_vit("tiny"), tmp_path / "partial.pth")


def _tiny_source(n_per_class=12):
    rng = np.random.default_rng(0)
    labels = np.repeat(np.arange(3), n_per_class)
    images = (rng.random((labels.size, 3, 16, 16)) * 60 + labels[:, None, None, None] * 60).astype(np.uint8)
    return images, labels


def test_training_is_deterministic_and_the_probe_shuffles_tokens():
    from baselines.vit import ViTProtoNet
    from implementations.recit import ReCIT

    images, labels = _tiny_source()
    ctx = Context(seed=5, split="train", dataset="cdfsl-source")
    features = []
    for method in (ReCIT(), ReCIT(), ViTProtoNet()):
        method.fit_source(SourceSet(images, labels, epochs=2, batch_size=16), ctx)
        features.append(method.embed(images))
    np.testing.assert_array_equal(features[0], features[1])  # same seed → same model on the CPU
    assert not np.allclose(features[0], features[2])  # ReCIT's perturbations change training
    plain = features[2]
    method.test_shuffle = True
    shuffled = method.embed(images)
    assert shuffled.shape == plain.shape and not np.allclose(shuffled, plain)
    np.testing.assert_array_equal(method.embed(images), shuffled)  # the probe is reproducible


# --------------------------------------------------------------------------- ReCIT's modules


def _authors_grouping(similarity, threshold):
    """The authors' greedy loop over rows, as the paper note describes it."""
    length = similarity.shape[0]
    mask = np.triu((similarity > threshold) | np.eye(length, dtype=bool))
    for i in range(length - 1):
        mask[i + 1:] &= ~mask[i][None, :]
    return mask


def test_greedy_grouping_is_the_authors_partition():
    from implementations.recit import greedy_groups

    rng = np.random.default_rng(2)
    for length in (5, 16, 40):
        z = rng.normal(size=(3, length, 6))
        z /= np.linalg.norm(z, axis=-1, keepdims=True)
        similarity = z @ z.transpose(0, 2, 1)
        groups = greedy_groups(torch.from_numpy(similarity), 0.3).numpy()
        for b in range(3):
            reference = _authors_grouping(similarity[b], 0.3)
            assert np.all(reference.sum(0) == 1)  # the loop leaves every patch in exactly one row
            np.testing.assert_array_equal(groups[b], reference.argmax(0))
            for j, g in enumerate(groups[b]):
                assert g <= j and (g == j or similarity[b, g, j] > 0.3)


def test_flat_patches_form_one_group():
    from implementations.recit import greedy_groups, patch_similarity, patchify

    image = torch.zeros(1, 3, 16, 16)
    image[0, :, :8, 8:] = torch.rand(3, 8, 8)  # one patterned patch among three flat ones
    similarity = patch_similarity(patchify(image, 8))[0]
    assert similarity[0, 2] == 1.0 and similarity[0, 3] == 1.0 and similarity[0, 1] == 0.0
    assert greedy_groups(similarity[None], 0.3)[0].tolist() == [0, 1, 0, 0]


def test_amplitude_resampling_keeps_phases():
    from implementations.recit import amplitude_resample

    generator = torch.Generator().manual_seed(0)
    tokens = torch.randn(2, 9, 16, dtype=torch.float64)
    groups = torch.tensor([[0, 0, 2, 2, 2, 5, 5, 5, 5], [0, 1, 2, 3, 4, 5, 6, 7, 8]])
    out = amplitude_resample(tokens, groups, generator)
    before, after = torch.fft.rfft(tokens, dim=-1), torch.fft.rfft(out, dim=-1)
    kept = after.abs() > 1e-9
    unit = lambda z: z / z.abs()
    np.testing.assert_allclose(unit(after)[kept].numpy(), unit(before)[kept].numpy(), atol=1e-8)
    assert kept.float().mean() > 0.9 and not torch.allclose(after.abs(), before.abs())


def test_amplitude_resampling_is_a_convex_mixture_of_group_amplitudes():
    from implementations.recit import amplitude_resample

    generator = torch.Generator().manual_seed(1)
    # two groups of identical tokens: the group stds are 0, so every new amplitude is a
    # convex combination of the two group amplitudes, frequency by frequency
    a, b = torch.randn(12), torch.randn(12)
    tokens = torch.stack([a, a, a, b, b])[None]
    out = amplitude_resample(tokens, torch.tensor([[0, 0, 0, 3, 3]]), generator)
    amplitude = torch.fft.rfft(out, dim=-1).abs()[0]
    low = torch.minimum(torch.fft.rfft(a).abs(), torch.fft.rfft(b).abs())
    high = torch.maximum(torch.fft.rfft(a).abs(), torch.fft.rfft(b).abs())
    assert torch.all(amplitude >= low - 1e-5) and torch.all(amplitude <= high + 1e-5)
    # a single group of identical tokens is left unchanged
    same = torch.stack([a] * 4)[None]
    torch.testing.assert_close(amplitude_resample(same, torch.zeros(1, 4, dtype=torch.long), generator), same,
                               atol=1e-5, rtol=1e-5)


def test_warmup_shuffles_with_one_permutation_and_keeps_positions():
    from components.vit import build_vit, patch_tokens, position_embedding
    from implementations.recit import ReCIT

    torch.manual_seed(0)
    model = build_vit("tiny")
    method = ReCIT(warmup_epochs=1, warmup_max_scale=1.0)  # grid stays at the data's 4 × 4
    method.epochs_ = 10
    x = torch.rand(3, 3, 32, 32)
    tokens, pos = method._train_tokens(model, x, epoch=0, generator=torch.Generator().manual_seed(0))
    plain, grid = patch_tokens(model, x)
    # one permutation for the whole batch: find it from image 0, then check the others
    match = torch.cdist(tokens[0], plain[0]).argmin(dim=1)
    assert sorted(match.tolist()) == list(range(16)) and match.tolist() != list(range(16))
    torch.testing.assert_close(tokens, plain[:, match])
    torch.testing.assert_close(pos, position_embedding(model, grid))  # positions in the original order
    # after the warm-up the frequency module runs (tokens change, positions do not)
    later, _ = method._train_tokens(model, x, epoch=5, generator=torch.Generator().manual_seed(0))
    assert later.shape == plain.shape and not torch.allclose(later, plain)


# --------------------------------------------------------------------------- the raw-pixel reference


def test_raw_pixel_protonet_is_perfect_on_separable_episodes_and_ignores_the_source():
    from baselines.raw_pixels import RawPixelProtoNet

    # five classes, each a constant image of its own bright quadrant-ish block plus small noise: trivially separable
    rng = np.random.default_rng(0)
    labels = np.repeat(np.arange(5), 20)
    images = np.zeros((labels.size, 3, 8, 8))
    for c in range(5):
        images[labels == c, :, c, :] = 1.0
    images = np.clip(images + rng.uniform(0.0, 0.05, images.shape), 0.0, 1.0)
    images = (255 * images).astype(np.uint8)
    episodes = sample_episodes(labels, ways=5, shots=1, queries=5, episodes=20, rng=np.random.default_rng(1))
    source = SourceSet(images[:10], labels[:10], epochs=1, batch_size=4)
    method = RawPixelProtoNet()
    method.fit_source(source, Context(seed=0, split="train", dataset="cdfsl-source"))
    features = method.embed(images)
    assert features.shape == (labels.size, 3 * 8 * 8) and features.dtype == np.float32
    assert features.min() >= 0.0 and features.max() <= 1.0
    assert protonet_accuracy(features, episodes).mean() == pytest.approx(100.0)
    # the source is never used: another source gives the same features
    other = RawPixelProtoNet()
    other.fit_source(SourceSet(255 - images[10:30], labels[10:30] % 2, epochs=9, batch_size=2), Context(seed=3))
    np.testing.assert_array_equal(other.embed(images), features)


def test_raw_pixel_protonet_through_the_task():
    from baselines.raw_pixels import RawPixelProtoNet

    cdfsl._SOURCE_TRAINING.clear()
    ctx = Context(seed=0, split="test", dataset="near")
    data = synthetic_digit_domains(ctx, target="near", image_size=16, per_class=40, episodes=50, queries=5)
    metrics = TASK.evaluate(RawPixelProtoNet(), data, ctx)
    assert set(metrics) == set(TASK.metrics)
    assert 40.0 < metrics["accuracy_5shot"] <= 100.0  # digits in raw pixels are far above chance (20 %)
    cdfsl._SOURCE_TRAINING.clear()


# --------------------------------------------------------------------------- novel source classes


def test_source_accuracy_is_measured_on_source_classes_never_trained_on():
    ctx = Context(seed=0, split="test", dataset="near")
    near = synthetic_digit_domains(ctx, target="near", image_size=16, per_class=40, episodes=5, queries=5)
    grating = synthetic_digit_domains(replace(ctx, dataset="grating"), target="grating", image_size=16, per_class=40,
                                      episodes=5, queries=5)
    texture = synthetic_digit_domains(replace(ctx, dataset="texture"), target="texture", image_size=16, per_class=40,
                                      episodes=5, queries=5)
    trained = set(near.source_train.labels.tolist())
    assert trained == {0, 1, 2, 3, 4} and set(near.source_heldout.labels.tolist()) == trained
    # novel source classes: the digit targets' classes, in the source style, never trained on
    assert set(near.source_novel.labels.tolist()) == {5, 6, 7, 8, 9} == set(near.target.labels.tolist())
    # the same for every target (source_accuracy is one number per seed and split)
    for other in (grating, texture):
        np.testing.assert_array_equal(other.source_novel.images, near.source_novel.images)
    # drawn from this split's half only: validation and test novel-source images are disjoint
    val = synthetic_digit_domains(replace(ctx, split="val"), target="near", image_size=16, per_class=40, episodes=5,
                                  queries=5)
    signature = lambda d: {im.tobytes() for im in d.source_novel.images}
    assert not signature(val) & signature(near)
    # the task reports both measures
    cdfsl._SOURCE_TRAINING.clear()
    metrics = TASK.evaluate(_PixelMeans(), near, ctx)
    assert {"source_accuracy", "source_seen_accuracy"} <= set(metrics)
    assert metrics["source_target_gap"] == pytest.approx(metrics["source_accuracy"] - metrics["accuracy_5shot"])
    cdfsl._SOURCE_TRAINING.clear()


def test_imagefolder_novel_source_classes_come_from_the_test_folder(tmp_path):
    from harness.tasks.base import DataError

    _write_layout(tmp_path)
    common = dict(target="EuroSAT", image_size=16, source_per_class=None, target_per_class=None,
                  heldout_fraction=0.5, queries=3, episodes=4)
    data = cdfsl_imagefolder(Context(seed=0, split="test", dataset="eurosat", data_dir=tmp_path), **common)
    assert data.source_novel.images.shape == (40, 3, 16, 16) and np.bincount(data.source_novel.labels).tolist() == [8] * 5
    train = {im.tobytes() for im in data.source_train.images}
    assert not train & {im.tobytes() for im in data.source_novel.images}
    for path in sorted((tmp_path / "miniImageNet" / "test").rglob("*")):
        if path.is_file():
            path.unlink()
    for path in sorted((tmp_path / "miniImageNet" / "test").iterdir()):
        path.rmdir()
    (tmp_path / "miniImageNet" / "test").rmdir()
    with pytest.raises(DataError, match="source classes never trained on"):
        cdfsl_imagefolder(Context(seed=0, split="test", dataset="eurosat", data_dir=tmp_path), **common)


# --------------------------------------------------------------------------- issue 9: source-training options


def test_source_rotations_add_turned_training_classes_and_keep_the_held_out_images_upright():
    ctx = Context(seed=3, split="val", dataset="near")
    common = dict(target="near", image_size=16, per_class=20, queries=1, episodes=2)
    upright = synthetic_digit_domains(ctx, **common)
    turned = synthetic_digit_domains(ctx, source_rotations=4, **common)
    n = upright.source_train.images.shape[0]
    assert turned.source_train.images.shape == (4 * n, 3, 16, 16)
    np.testing.assert_array_equal(turned.source_train.images[:n], upright.source_train.images)
    for k in range(4):  # turn k of every training image, labelled digit + 10·k
        np.testing.assert_array_equal(turned.source_train.images[k * n:(k + 1) * n],
                                      np.rot90(upright.source_train.images, k, axes=(2, 3)))
        np.testing.assert_array_equal(turned.source_train.labels[k * n:(k + 1) * n], upright.source_train.labels + 10 * k)
    np.testing.assert_array_equal(turned.source_heldout.images, upright.source_heldout.images)
    np.testing.assert_array_equal(turned.target.images, upright.target.images)  # target and novel source untouched
    np.testing.assert_array_equal(turned.source_novel.images, upright.source_novel.images)
    assert turned.source_key != upright.source_key  # another source: another trained model
    two = synthetic_digit_domains(ctx, source_rotations=2, **common)
    assert sorted(set(two.source_train.labels.tolist())) == [0, 1, 2, 3, 4, 10, 11, 12, 13, 14]
    for bad in (0, 5, 1.5):
        with pytest.raises(ValueError, match=f"source_rotations={bad} must be an integer from 1"):
            synthetic_digit_domains(ctx, source_rotations=bad, **common)


def test_vit_archs_finer_grid_and_conv_stem():
    from components.vit import build_vit, encode, patch_tokens, position_embedding

    torch.manual_seed(0)
    x = torch.rand(2, 3, 32, 32)
    for arch, tokens_expected in (("tiny", 16), ("tiny-p4", 64), ("tiny-conv", 16)):
        model = build_vit(arch).eval()
        with torch.no_grad():
            tokens, grid = patch_tokens(model, x)
            assert tokens.shape == (2, tokens_expected, 64) and grid[0] * grid[1] == tokens_expected
            assert encode(model, tokens, position_embedding(model, grid)).shape == (2, 64)
    conv = build_vit("tiny-conv")
    assert any(name.startswith("patch_embed.stem.") for name in conv.state_dict())
    assert conv.patch_size == 8  # a token still covers 8 × 8 px (ReCIT's patches and warm-up grids)
    # a stem token sees only its neighbourhood: changing the top-left 8 × 8 px leaves far tokens unchanged
    conv.eval()
    y = x.clone()
    y[:, :, :8, :8] = 0.0
    with torch.no_grad():
        near_tokens, _ = patch_tokens(conv, y)
        far = patch_tokens(conv, x)[0][:, -1]
    torch.testing.assert_close(near_tokens[:, -1], far)
    with pytest.raises(ValueError, match="arch='tiny-huge' is unknown"):
        build_vit("tiny-huge")


def test_every_vit_arm_trains_with_the_new_archs_and_scale_augmentation():
    from baselines.vit import ViTProtoNet
    from implementations.recit import ReCIT

    images, labels = _tiny_source(n_per_class=6)
    ctx = Context(seed=5, split="train", dataset="cdfsl-source")
    for arch in ("tiny-p4", "tiny-conv"):
        for method in (ViTProtoNet(arch=arch, scale=0.25), ReCIT(arch=arch, scale=0.25, warmup_epochs=1)):
            method.fit_source(SourceSet(images, labels, epochs=2, batch_size=9), ctx)
            features = method.embed(images)
            assert features.shape == (images.shape[0], 64) and np.all(np.isfinite(features))
    plain, zoomed = ViTProtoNet(), ViTProtoNet(scale=0.25)
    for method in (plain, zoomed):
        method.fit_source(SourceSet(images, labels, epochs=1, batch_size=9), ctx)
    assert not np.allclose(plain.embed(images), zoomed.embed(images))  # the augmentation changes training


def test_random_scale_zooms_about_the_centre():
    from components.vit import random_scale

    x = torch.zeros(1, 1, 32, 32)
    x[:, :, 12:20, 12:20] = 1.0  # an 8 × 8 centred square
    generator = torch.Generator().manual_seed(0)
    assert random_scale(x, 0.0, generator) is x
    for seed in range(5):
        expected_factor = 1.0 + 0.5 * (2.0 * float(torch.rand(1, generator=torch.Generator().manual_seed(seed))) - 1.0)
        zoomed = random_scale(x, 0.5, torch.Generator().manual_seed(seed))
        assert float(zoomed.sum()) == pytest.approx(64.0 * expected_factor**2, rel=0.15)  # area scales by factor²
        rows, cols = torch.nonzero(zoomed[0, 0] > 0.5, as_tuple=True)
        assert abs(float(rows.float().mean()) - 15.5) < 0.6 and abs(float(cols.float().mean()) - 15.5) < 0.6


def test_cosine_lr_schedule_changes_training_and_unknown_schedules_fail():
    from baselines.vit import ViTProtoNet

    images, labels = _tiny_source(n_per_class=6)
    ctx = Context(seed=5, split="train", dataset="cdfsl-source")
    constant, cosine = ViTProtoNet(), ViTProtoNet(lr_schedule="cosine")
    for method in (constant, cosine):
        method.fit_source(SourceSet(images, labels, epochs=2, batch_size=9), ctx)
    assert constant.history_[0] == pytest.approx(cosine.history_[0], rel=0.2)  # the same start
    assert not np.allclose(constant.embed(images), cosine.embed(images))
    with pytest.raises(ValueError, match="lr_schedule='linear' is unknown"):
        ViTProtoNet(lr_schedule="linear").fit_source(SourceSet(images, labels, epochs=1, batch_size=9), ctx)
