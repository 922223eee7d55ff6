"""robustness.certified: BRO and the other Lipschitz layers' properties, the certificate's formulas and checks, the loader."""
from __future__ import annotations

import math

import numpy as np
import pytest

from harness.tasks.base import Context
from harness.tasks.robustness.certified import (
    TASK,
    CertificateViolation,
    certified_radii,
    digits_certified,
    empirical_lipschitz,
    lipschitz_bound,
    operator_norm,
)

torch = pytest.importorskip("torch")
F = torch.nn.functional

from baselines.lipschitz_layers import (  # noqa: E402  (needs torch)
    AOLConv2d,
    AOLLinear,
    CayleyConv2d,
    CayleyLinear,
    SOCConv2d,
    SOCLinear,
    series_tail,
)
from components.lipschitz_torch import (  # noqa: E402
    MinMax,
    batched_product,
    batched_solve,
    fft_conv_apply,
    frequency_batch,
    margin_loss,
    rank_from_ratio,
)
from implementations.bronet import BRONet, BROConv2d, BROConv2dStride2, BROLinear, block_reflector  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")

DENSE = {"bro": BROLinear, "cayley": CayleyLinear, "soc": SOCLinear, "aol": AOLLinear}
CONV = {"bro": BROConv2d, "cayley": CayleyConv2d, "soc": SOCConv2d, "aol": AOLConv2d}


def generator(seed: int = 0):
    return torch.Generator().manual_seed(seed)


def ratios(layer, x, y):
    """‖layer(x) − layer(y)‖ / ‖x − y‖ per pair."""
    with torch.no_grad():
        return ((layer(x) - layer(y)).flatten(1).norm(dim=1) / (x - y).flatten(1).norm(dim=1))


# --------------------------------------------------------------------------- BRO


def test_block_reflector_is_orthogonal_symmetric_and_an_involution():
    v = torch.randn(12, 5, dtype=torch.float64, generator=generator())
    w = block_reflector(v, ridge=1e-14)
    eye = torch.eye(12, dtype=torch.float64)
    assert float((w.T @ w - eye).norm()) < 1e-10
    assert float((w - w.T).norm()) < 1e-12
    assert float((w @ w - eye).norm()) < 1e-10  # W² = I
    eigenvalues = torch.linalg.eigvalsh(w)
    assert int((eigenvalues < 0).sum()) == 5 and torch.allclose(eigenvalues.abs(), torch.ones(12, dtype=torch.float64))


def test_the_ridge_keeps_the_norm_at_most_one():
    # nearly rank-deficient V: without δ the solve blows up; with it every eigenvalue stays in [-1, 1]
    v = torch.randn(8, 4, dtype=torch.float64, generator=generator())
    v[:, 3] = v[:, 2] * (1 + 1e-13)
    w = block_reflector(v, ridge=1e-5)
    assert torch.isfinite(w).all() and float(torch.linalg.matrix_norm(w, ord=2)) <= 1 + 1e-12


def test_rank_mapping_keeps_the_rank_below_the_width():
    assert rank_from_ratio(64, 1.0) == 63 and rank_from_ratio(64, 0.5) == 32 and rank_from_ratio(64, 0.125) == 8
    with pytest.raises(ValueError, match="rank_ratio must be in"):
        rank_from_ratio(64, 0.0)


def test_bro_conv_is_unitary_per_frequency_and_norm_preserving_on_the_torus():
    layer = BROConv2d(6, 3, rank_ratio=0.5, ridge=1e-13, init_noise=0.5, generator=generator()).double().eval()
    w = layer.unitary(10)  # (F, c, c) on the 10×10 grid
    eye = torch.eye(6, dtype=w.dtype)
    w = w.detach()
    assert float((w.mH @ w - eye).abs().max()) < 1e-9
    assert float((w @ w - eye).abs().max()) < 1e-9  # the per-frequency reflector is an involution too
    x = torch.randn(3, 6, 10, 10, dtype=torch.float64, generator=generator(1))
    circular = fft_conv_apply(x, lambda xf: w @ xf, padding=0)  # the orthogonal map on the torus, no crop
    assert torch.allclose(circular.flatten(1).norm(dim=1), x.flatten(1).norm(dim=1), rtol=1e-10)


def test_the_spectrum_and_the_batched_product_match_torch():
    kernel = torch.randn(5, 3, 3, 3, dtype=torch.float64, generator=generator())
    reference = torch.fft.rfft2(kernel, s=(10, 10), norm="ortho").permute(2, 3, 0, 1).reshape(-1, 5, 3)
    assert torch.allclose(frequency_batch(kernel, 10), reference, atol=1e-12)
    a = torch.randn(7, 4, 3, dtype=torch.complex128, generator=generator(1), requires_grad=True)
    b = torch.randn(7, 3, 5, dtype=torch.complex128, generator=generator(2), requires_grad=True)
    target = torch.randn(7, 4, 5, dtype=torch.complex128, generator=generator(3))
    ours = torch.autograd.grad((batched_product(a, b) * target).real.sum(), (a, b))
    theirs = torch.autograd.grad((torch.bmm(a, b) * target).real.sum(), (a, b))
    assert all(torch.allclose(x, y) for x, y in zip(ours, theirs))
    m = torch.randn(7, 3, 3, dtype=torch.complex128, generator=generator(4)) + 3 * torch.eye(3)
    m.requires_grad_(True)
    rhs = torch.randn(7, 3, 5, dtype=torch.complex128, generator=generator(5), requires_grad=True)
    ours = torch.autograd.grad((batched_solve(m, rhs) * target[:, :3]).real.sum(), (m, rhs))
    theirs = torch.autograd.grad((torch.linalg.solve(m, rhs) * target[:, :3]).real.sum(), (m, rhs))
    assert all(torch.allclose(x, y) for x, y in zip(ours, theirs))


def test_bro_conv_eval_cache_matches_training_computation():
    layer = BROConv2d(4, 3, generator=generator()).double()
    x = torch.randn(2, 4, 8, 8, dtype=torch.float64, generator=generator(2))
    trained = layer(x)
    # a batch above twice the width takes the formed-W̃ path: the same map
    large = torch.cat([x] * 5)
    assert torch.allclose(layer(large)[:2], trained, atol=1e-10)
    layer.eval()
    assert torch.allclose(layer(x), trained, atol=1e-10)
    assert layer._cache is not None  # cached, detached
    layer.train()
    assert layer._cache is None


# --------------------------------------------------------------------------- every family


@pytest.mark.parametrize("family", sorted(DENSE))
def test_dense_layers_are_one_lipschitz_and_the_orthogonal_ones_orthogonal(family):
    layer = DENSE[family](16, 16, generator=generator()).double().eval()
    w = layer.weight()
    if family != "aol":
        ridge_free = (block_reflector(layer.v, 1e-14) if family == "bro" else w).detach()
        assert float((ridge_free.T @ ridge_free - torch.eye(16, dtype=w.dtype)).norm()) < 1e-10
    x, y = (torch.randn(64, 16, dtype=torch.float64, generator=generator(s)) for s in (1, 2))
    assert float(ratios(layer, x, y).max()) <= 1 + 1e-9
    assert operator_norm(layer, (16,)) <= 1 + 1e-9
    # a non-square slice keeps orthonormal rows (or columns): still 1-Lipschitz
    wide = DENSE[family](24, 10, generator=generator()).double().eval()
    assert operator_norm(wide, (24,)) <= 1 + 1e-9


@pytest.mark.parametrize("family", sorted(CONV))
def test_convolutions_are_one_lipschitz_on_random_pairs(family):
    layer = CONV[family](6, 3, generator=generator()).double().eval()
    x, y = (torch.randn(32, 6, 8, 8, dtype=torch.float64, generator=generator(s)) for s in (1, 2))
    assert float(ratios(layer, x, y).max()) <= layer.lipschitz_bound * (1 + 1e-9)
    assert operator_norm(layer, (6, 8, 8)) <= layer.lipschitz_bound * (1 + 1e-9)


def test_bro_stride_two_halves_the_size_and_stays_one_lipschitz():
    layer = BROConv2dStride2(3, 3, generator=generator()).double().eval()
    x, y = (torch.randn(16, 3, 8, 8, dtype=torch.float64, generator=generator(s)) for s in (1, 2))
    assert layer(x).shape == (16, 12, 4, 4)
    assert float(ratios(layer, x, y).max()) <= 1 + 1e-9
    assert operator_norm(layer, (3, 8, 8)) <= 1 + 1e-9


def test_cayley_and_soc_convolutions_preserve_norms():
    # Cayley on the torus (no crop) and SOC with zero padding are orthogonal maps
    cayley = CayleyConv2d(4, 3, generator=generator()).double().eval()
    cayley._size = 8
    w = cayley.compute_weight()
    x = torch.randn(3, 4, 8, 8, dtype=torch.float64, generator=generator(3))
    assert torch.allclose(fft_conv_apply(x, lambda xf: w @ xf, 0).flatten(1).norm(dim=1), x.flatten(1).norm(dim=1))
    soc = SOCConv2d(4, 3, generator=generator()).double().eval()
    out = soc(x) - soc.bias[:, None, None]
    assert torch.allclose(out.flatten(1).norm(dim=1), x.flatten(1).norm(dim=1), rtol=1e-8)
    assert soc.lipschitz_bound == 1 + series_tail(12) and series_tail(12) < 1e-9


def soc_by_definition(layer, x):
    """SOC from its definition: Σ_{k≤T} Aᵏx/k! + b, A = conv_K − conv_Kᵀ (a convolution minus its transpose)."""
    k = layer.kernel
    k = k / torch.clamp(2 * torch.sqrt(k.abs().sum(dim=(1, 2, 3)).max() * k.abs().sum(dim=(0, 2, 3)).max()), min=1.0)
    pad = layer.padding
    terms = layer.train_terms if layer.training else layer.eval_terms
    out, power = x, x
    for i in range(1, terms + 1):
        power = F.conv2d(power, k, padding=pad) - F.conv_transpose2d(power, k, padding=pad)
        out = out + power / math.factorial(i)
    return out + layer.bias[:, None, None]


@pytest.mark.parametrize("training", [True, False])
def test_soc_is_the_series_of_a_skew_convolution_and_stays_orthogonal(training):
    layer = SOCConv2d(5, 3, generator=generator()).double().train(training)
    with torch.no_grad():
        layer.kernel.mul_(40)  # past the Schur-bound threshold: the scaling acts and gets a gradient
        layer.bias.normal_(generator=generator(4))
    x = torch.randn(3, 5, 7, 7, dtype=torch.float64, generator=generator(3), requires_grad=True)
    # a linear read-out: ‖exp(A)x‖ hardly moves with K, so the gradient of a norm would cancel to rounding noise
    probe = torch.randn(3, 5, 7, 7, dtype=torch.float64, generator=generator(5))
    out, expected = layer(x), soc_by_definition(layer, x)
    assert float((out - expected).detach().norm() / expected.detach().norm()) < 1e-10
    if training:
        grads = torch.autograd.grad((out * probe).sum(), (x, layer.kernel, layer.bias))
        expected_grads = torch.autograd.grad((expected * probe).sum(), (x, layer.kernel, layer.bias))
        for grad, expected_grad in zip(grads, expected_grads):
            assert torch.isfinite(grad).all()
            assert float((grad - expected_grad).norm() / expected_grad.norm()) < 1e-10

    # the filter is skew: ⟨Au, v⟩ = −⟨u, Av⟩
    skew = layer.compute_weight().detach()
    u, v = (torch.randn(2, 5, 7, 7, dtype=torch.float64, generator=generator(s)) for s in (6, 7))
    au, av = (F.conv2d(z, skew, padding=layer.padding) for z in (u, v))
    assert torch.allclose((au * v).sum(), -(u * av).sum(), rtol=1e-12, atol=1e-14)

    # orthogonal up to the series' truncation: |‖Wx‖ − ‖x‖| ≤ Σ_{k>T} ‖A‖ᵏ/k! · ‖x‖ with ‖A‖ ≤ 1
    with torch.no_grad():
        norms, x_norms = (out - layer.bias[:, None, None]).flatten(1).norm(dim=1), x.flatten(1).norm(dim=1)
    tail = layer.lipschitz_bound - 1
    assert ((norms - x_norms).abs() <= tail * x_norms * (1 + 1e-9) + 1e-12).all()
    assert tail == series_tail(5 if training else 12)  # 5 powers after the identity, as the public SOC codes train


def test_soc_needs_an_odd_kernel():
    with pytest.raises(ValueError, match="odd kernel_size; got 2"):
        SOCConv2d(4, 2)


def test_minmax_is_one_lipschitz():
    x, y = (torch.randn(128, 8, dtype=torch.float64, generator=generator(s)) for s in (1, 2))
    assert float(ratios(MinMax(), x, y).max()) <= 1 + 1e-12


# --------------------------------------------------------------------------- losses


def test_losses_by_hand():
    logits = torch.tensor([[2.0, 0.0, -1.0]], dtype=torch.float64)
    labels = torch.tensor([0])
    t, xi, beta, alpha = 0.75, 2 * math.sqrt(2), 5.0, 0.25
    shifted = (logits[0] - torch.tensor([xi, 0.0, 0.0], dtype=torch.float64)) / t
    p = torch.softmax(shifted, 0)[0]
    assert float(margin_loss(logits, labels, "ce")) == pytest.approx(-math.log(float(torch.softmax(logits[0], 0)[0])))
    assert float(margin_loss(logits, labels, "ce-offset")) == pytest.approx(t * -math.log(float(p)))
    assert float(margin_loss(logits, labels, "la")) == pytest.approx(t * alpha * (1 - float(p)) ** beta * -math.log(float(p)))
    with pytest.raises(ValueError, match="loss must be one of"):
        margin_loss(logits, labels, "hinge")


# --------------------------------------------------------------------------- the certificate


def test_radii_formulas_by_hand():
    logits = np.array([[3.0, 1.0, 0.0], [0.0, 0.5, 2.0]])
    # plain head: margin / (√2 L)
    assert certified_radii(logits, 2.0, None) == pytest.approx([2.0 / (math.sqrt(2) * 2), 1.5 / (math.sqrt(2) * 2)])
    # LLN head: min over j of (z_ŷ − z_j) / (L ‖w_ŷ − w_j‖)
    w = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]])
    expected0 = min(2.0 / math.sqrt(2), 3.0 / 2.0)
    expected1 = min(2.0 / 2.0, 1.5 / math.sqrt(2))
    assert certified_radii(logits, 1.0, w) == pytest.approx([expected0, expected1])
    assert (certified_radii(logits, math.inf, w) == 0).all()


def test_the_certificate_inequality_holds_for_a_trained_bro_network():
    # for every test point and perturbation δ with ‖δ‖ < R(x), the prediction does not change
    context = Context(seed=0, split="test", dataset="digits-certified")
    data = digits_certified(context, max_images=400, epochs=3, batch_size=64)
    model = BRONet(width=32, depth=2).fit(data.train, context).double().eval()
    x = torch.as_tensor(data.test_images, dtype=torch.float64)
    bound, measured = lipschitz_bound(model)
    assert bound == 1.0 and all(m <= 1 + 1e-6 for m in measured)
    with torch.no_grad():
        logits = model(x).numpy()
    radii = certified_radii(logits, bound, model.head_weight().detach().numpy())
    direction = torch.randn(x.shape, dtype=torch.float64, generator=generator(5))
    direction /= direction.flatten(1).norm(dim=1)[:, None, None, None]
    with torch.no_grad():
        moved = model(x + 0.999 * torch.as_tensor(radii)[:, None, None, None] * direction).numpy()
    assert (moved.argmax(1) == logits.argmax(1)).all()
    assert empirical_lipschitz(model.embed, x, rng=np.random.default_rng(0)) <= bound * (1 + 1e-6)


def test_a_layer_that_lies_about_its_bound_fails_the_cell():
    context = Context(seed=0, split="val", dataset="digits-certified")
    data = digits_certified(context, max_images=300, epochs=1, batch_size=64)

    class Inflated(BROLinear):
        def compute_weight(self):
            return 1.5 * super().compute_weight()  # still declares lipschitz_bound = 1

    class Liar(BRONet):
        def fit(self, train, context):
            model = super().fit(train, context)
            model.body[1].__class__ = Inflated
            return model

    with pytest.raises(CertificateViolation, match="declares a Lipschitz bound 1 but power iteration measures 1\\.49"):
        TASK.evaluate(Liar(width=16, depth=2), data, context)


# --------------------------------------------------------------------------- loader and task


def test_the_seed_draws_the_partition_and_splits_share_it():
    a = digits_certified(Context(seed=0, split="val", dataset="digits-certified"))
    b = digits_certified(Context(seed=0, split="test", dataset="digits-certified"))
    c = digits_certified(Context(seed=1, split="test", dataset="digits-certified"))
    assert np.array_equal(a.train.labels, b.train.labels) and np.array_equal(a.test_images, b.test_images)
    assert not np.array_equal(a.train.labels, c.train.labels)
    n = len(a.train.labels) + len(a.val_labels) + len(a.test_labels)
    assert n == 1797 and 0.0 <= a.train.images.min() and a.train.images.max() <= 1.0
    assert a.train.images.shape[1:] == (1, 8, 8) and a.train.classes == 10
    with pytest.raises(ValueError, match="the budget needs epochs"):
        digits_certified(Context(seed=0), epochs=0)


def test_the_unconstrained_network_gets_no_certificate():
    from baselines.lipschitz import UnconstrainedNet

    context = Context(seed=0, split="val", dataset="digits-certified")
    # 20 epochs: after 2 (six steps) the net still predicted one class, exactly chance
    data = digits_certified(context, max_images=300, epochs=20, batch_size=64)
    scores = TASK.evaluate(UnconstrainedNet(width=16, depth=2), data, context)
    assert scores["certified_accuracy_36"] == 0 and scores["average_certified_radius"] == 0
    assert scores["empirical_lipschitz_ratio"] == 0 and scores["clean_accuracy"] > 30  # it learned: chance is 10


# --------------------------------------------------------------------------- real data from --data-dir


def test_cifar_is_read_from_its_pickle_layout_and_the_seed_draws_the_validation_split(tmp_path):
    from harness.tasks.robustness.certified import cifar10_certified, cifar100_certified
    from harness.tasks.robustness.images import write_cifar

    write_cifar(tmp_path, "cifar10", train_per_class=10, test_per_class=4)
    write_cifar(tmp_path, "cifar100", train_per_class=2, test_per_class=1)
    a = cifar10_certified(Context(seed=0, split="val", dataset="cifar10-certified"), root=str(tmp_path), val_fraction=0.2)
    b = cifar10_certified(Context(seed=0, split="test", dataset="cifar10-certified"), root=str(tmp_path), val_fraction=0.2)
    c = cifar10_certified(Context(seed=1, split="test", dataset="cifar10-certified"), root=str(tmp_path), val_fraction=0.2)
    assert a.train.images.shape == (80, 3, 32, 32) and a.val_images.shape == (20, 3, 32, 32)
    assert a.test_images.shape == (40, 3, 32, 32) and a.train.classes == 10
    assert a.train.images.dtype == np.float32 and 0.0 <= a.train.images.min() and a.train.images.max() <= 1.0
    assert np.array_equal(a.train.images, b.train.images) and np.array_equal(a.val_labels, b.val_labels)
    assert not np.array_equal(a.val_images, c.val_images)
    assert np.bincount(a.val_labels, minlength=10).tolist() == [2] * 10  # stratified
    # the writer ties brightness to the class, so images and labels stayed together through the pickle
    brightness = a.train.images.mean(axis=(1, 2, 3))
    assert np.all(np.diff([brightness[a.train.labels == k].mean() for k in range(10)]) > 0)
    small = cifar10_certified(Context(seed=0, split="test", dataset="cifar10-certified"), root=str(tmp_path),
                              val_fraction=0.2, max_train=50, max_test=20)
    assert len(small.train.labels) + len(small.val_labels) == 50 and len(small.test_labels) == 20
    with pytest.raises(ValueError, match="val_fraction 0.2 of 40 training images leaves fewer than one image per class"):
        cifar10_certified(Context(seed=0, split="test", dataset="cifar10-certified"), root=str(tmp_path),
                          val_fraction=0.2, max_train=40)
    eight = cifar10_certified(Context(seed=0, split="test", dataset="cifar10-certified"), root=str(tmp_path),
                              val_fraction=0.2, image_size=8)
    assert eight.train.images.shape == (80, 3, 8, 8)
    assert np.allclose(eight.train.images[0, 1, 2, 3], a.train.images[0, 1, 8:12, 12:16].mean(), atol=1e-6)
    with pytest.raises(ValueError, match="image_size must divide 32"):
        cifar10_certified(Context(seed=0), root=str(tmp_path), image_size=12)
    hundred = cifar100_certified(Context(seed=0, split="test", dataset="cifar100-certified"), root=str(tmp_path),
                                 val_fraction=0.5)
    assert hundred.train.classes == 100 and len(hundred.test_labels) == 100
    assert TASK.chance("cifar100-certified", {}) == {"clean_accuracy": 1.0}


def test_missing_or_broken_cifar_files_are_named(tmp_path):
    import pickle

    from harness.tasks.base import DataError, DataUnavailable
    from harness.tasks.robustness.certified import cifar10_certified
    from harness.tasks.robustness.images import write_cifar

    context = Context(seed=0, split="test", dataset="cifar10-certified")
    with pytest.raises(DataUnavailable, match="pass --data-dir DIR"):
        cifar10_certified(context)
    with pytest.raises(DataUnavailable, match="no folder .*cifar-10-batches-py"):
        cifar10_certified(context, root=str(tmp_path))
    folder = write_cifar(tmp_path, "cifar10", train_per_class=4, test_per_class=2) / "cifar-10-batches-py"
    (folder / "data_batch_3").write_bytes(b"not a pickle")
    with pytest.raises(DataError, match="data_batch_3: not a readable pickle"):
        cifar10_certified(context, root=str(tmp_path))
    with open(folder / "data_batch_3", "wb") as handle:
        pickle.dump({b"data": np.zeros((4, 100), np.uint8), b"labels": [0, 1, 2, 3]}, handle)
    with pytest.raises(DataError, match=r"data_batch_3: b'data' is uint8 of shape \(4, 100\); expected uint8 of shape \(n, 3072\)"):
        cifar10_certified(context, root=str(tmp_path))
    with open(folder / "data_batch_3", "wb") as handle:
        pickle.dump({b"data": np.zeros((2, 3072), np.uint8), b"fine_labels": [0, 1]}, handle)
    with pytest.raises(DataError, match="expected a dict with keys b'data' and b'labels'; found keys data, fine_labels"):
        cifar10_certified(context, root=str(tmp_path))
    (folder / "data_batch_3").unlink()
    with pytest.raises(DataError, match="data_batch_3: missing"):
        cifar10_certified(context, root=str(tmp_path))


def test_tiny_imagenet_is_read_from_its_folders_and_annotations(tmp_path):
    from harness.tasks.base import DataError
    from harness.tasks.robustness.certified import tiny_imagenet_certified
    from harness.tasks.robustness.images import write_tiny_imagenet

    write_tiny_imagenet(tmp_path, classes=4, train_per_class=5, val_per_class=3)
    context = Context(seed=0, split="test", dataset="tiny-imagenet-certified")
    data = tiny_imagenet_certified(context, root=str(tmp_path), classes=4, val_fraction=0.2)
    assert data.train.images.shape == (16, 3, 64, 64) and data.val_images.shape == (4, 3, 64, 64)
    assert data.test_images.shape == (12, 3, 64, 64) and data.train.classes == 4
    # the writer ties brightness to the class: the val annotations map each test image to its class
    brightness = data.test_images.mean(axis=(1, 2, 3))
    assert np.all(np.diff([brightness[data.test_labels == k].mean() for k in range(4)]) > 0)
    assert TASK.chance("tiny-imagenet-certified", {"classes": 4}) == {"clean_accuracy": 25.0}
    with pytest.raises(DataError, match="holds 4 class folders with images; expected 200"):
        tiny_imagenet_certified(context, root=str(tmp_path))
    annotations = tmp_path / "tiny-imagenet-200" / "val" / "val_annotations.txt"
    lines = annotations.read_text().splitlines()
    annotations.write_text("\n".join([*lines[:2], "val_1.JPEG\tn99999999\t0\t0\t63\t63", *lines[3:]]) + "\n")
    with pytest.raises(DataError, match="val_annotations.txt, line 3: class 'n99999999' has no folder"):
        tiny_imagenet_certified(context, root=str(tmp_path), classes=4)
    annotations.write_text("\n".join(lines) + "\n")
    (tmp_path / "tiny-imagenet-200" / "train" / "n00000002" / "images" / "n00000002_1.JPEG").write_bytes(b"broken")
    with pytest.raises(DataError, match="1 of the 20 image files .* cannot be used.*n00000002_1.JPEG"):
        tiny_imagenet_certified(context, root=str(tmp_path), classes=4)


@pytest.mark.parametrize("family", ["bro", "cayley", "soc", "aol"])
def test_the_lipconvnet_layout_keeps_its_certificate(family):
    from baselines.lipschitz import AOLNet, CayleyNet, SOCNet

    cls = {"bro": BRONet, "cayley": CayleyNet, "soc": SOCNet, "aol": AOLNet}[family]
    net = cls(arch="lipconvnet", channels=4, depth=1, stages=2, width=16).build(
        (3, 8, 8), 10, torch.Generator().manual_seed(0)).double().eval()
    x = torch.rand(6, 3, 8, 8, dtype=torch.float64)
    assert net(x).shape == (6, 10) and net.embed(x).shape == (6, 16)
    # lift, then per stage one conv and one stride-2 step on 4× the channels, then the dense layer
    shapes = [shape for _, shape, _ in net.lipschitz_factors()]
    assert shapes == [(3, 8, 8), (4, 8, 8), (4, 8, 8), (8, 4, 4), (8, 4, 4), (16 * 2 * 2,)]
    bound, _ = lipschitz_bound(net)
    assert bound <= 1.0 + 1e-6
    assert empirical_lipschitz(net.embed, x, rng=np.random.default_rng(0), random_pairs=32, searched_pairs=4) <= bound + 1e-9
    with pytest.raises(ValueError, match="3 stages halve the size 3 times; the input is 12×12"):
        cls(arch="lipconvnet", channels=4, depth=1, stages=3).build((3, 12, 12), 10, torch.Generator().manual_seed(0))


# --------------------------------------------------------------------------- issue 29: timing, arms, claims


def test_seconds_per_epoch_is_timed_apart_from_the_fit_with_a_warm_up_excluded():
    # the real fit, then one warm-up and TIMING_REPEATS one-epoch fits of the same method: the first (slow) call of a
    # worker is no longer inside the timing, and CPU time and the repeats' spread are reported beside the wall time
    from harness.tasks.robustness.certified import TIMING_REPEATS, TIMING_WARMUP

    context = Context(seed=0, split="val", dataset="digits-certified")
    data = digits_certified(context, max_images=300, epochs=3, batch_size=64)
    budgets = []

    class Counted(BRONet):
        def fit(self, train, context):
            budgets.append(train.epochs)
            return super().fit(train, context)

    scores = TASK.evaluate(Counted(width=16, depth=2), data, context)
    assert budgets == [3] + [1] * (TIMING_WARMUP + TIMING_REPEATS) and TIMING_WARMUP >= 1 and TIMING_REPEATS >= 3
    assert {"seconds_per_epoch", "seconds_per_epoch_cpu", "seconds_per_epoch_spread"} <= set(scores)
    assert scores["seconds_per_epoch"] > 0 and scores["seconds_per_epoch_cpu"] > 0 and scores["seconds_per_epoch_spread"] >= 0
    from harness.tasks.robustness.catalogue import CATALOGUE

    metrics = CATALOGUE["metrics"]
    assert metrics["seconds_per_epoch_spread"]["spread_of"] == "seconds_per_epoch"
    assert set(TASK.metrics) <= set(metrics)


def test_the_matrix_exp_arm_is_the_exact_exponential_and_dense_only():
    from baselines.lipschitz import MatrixExpNet

    model = MatrixExpNet(width=16, depth=2).build((1, 8, 8), 10, generator(0))
    layer = next(m for m in model.modules() if isinstance(m, SOCLinear))
    a = layer.p - layer.p.mT
    with torch.no_grad():
        assert torch.allclose(layer.compute_weight(), torch.linalg.matrix_exp(a)[: layer.features_out, : layer.features_in])
    with pytest.raises(ValueError, match="dense networks only"):
        MatrixExpNet(arch="conv").build((1, 8, 8), 10, generator(0))


def test_the_spec_compares_logit_annealing_with_the_offset_cross_entropy():
    from pathlib import Path

    import yaml

    spec = yaml.safe_load((Path(__file__).parents[1] / "specs" / "bronet.yaml").read_text())
    methods = {m["id"]: m for m in spec["methods"]}
    claims = {c["id"]: c for c in spec["claims"]}
    for claim in ("la-raises-certified-72", "la-raises-certified-108", "la-raises-certified-108-conv"):
        better, than = methods[claims[claim]["better"]], methods[claims[claim]["than"]]
        assert better["params"]["loss"] == "la" and than["params"]["loss"] == "ce-offset"
        assert better["name"] == than["name"] == "bro" and claims[claim]["margin_from"] == "prior"
    assert claims["certificate-holds"]["kind"] == "check" and claims["certificate-holds"]["why"]
    assert all(m["name"] != "soc" or m["params"]["arch"] != "dense" for m in spec["methods"])
    # the offset cross-entropy is T·CE((z − ξ·e_y)/T): not plain cross-entropy
    logits, labels = torch.tensor([[2.0, 1.0, 0.0]]), torch.tensor([0])
    shifted = (logits - 2 * math.sqrt(2) * torch.tensor([[1.0, 0, 0]])) / 0.75
    expected = 0.75 * torch.nn.functional.cross_entropy(shifted, labels)
    assert torch.isclose(margin_loss(logits, labels, "ce-offset"), expected)
    assert not torch.isclose(margin_loss(logits, labels, "ce-offset"), margin_loss(logits, labels, "ce"))
