"""spatial.expression and STFlow: the frame averaging's invariance, the prior, the sampler, the metrics, the
simulator's splits, the equal training, the memory scaling and the HEST-1k loader."""
from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from components.spatial_transformer_torch import (FullAttentionTransformer, SpatialTransformer,  # noqa: E402
                                                  frame_averaged_edges)
from harness.tasks.base import Context, DataError, DataUnavailable  # noqa: E402
from harness.tasks.spatial import expression as ex  # noqa: E402
from harness.tasks.spatial.hest import hest_1k, write_miniature  # noqa: E402
from harness.tasks.spatial.slides import SlideGraph, knn_index  # noqa: E402
from implementations.stflow import FlowSampler, STFlow, prior_sample  # noqa: E402

TINY = dict(train_slides=2, validation_slides=1, test_slides=2, spots=[40, 60], genes=5, feature_dim=8,
            oracle_draws=2, every=2, min_steps=4, max_steps=4, timing_repeats=1)


def _turn(coordinates, angle, mirror=False):
    turn = np.array([[math.cos(angle), -math.sin(angle)], [math.sin(angle), math.cos(angle)]])
    if mirror:
        turn = turn @ np.diag([1.0, -1.0])
    return coordinates @ turn.T + np.array([3.0, -7.0])


@pytest.mark.parametrize("mirror", [False, True])
def test_frame_averaged_edges_are_invariant_to_rotation_reflection_and_translation(mirror):
    torch.manual_seed(0)
    coordinates = ex.hex_spots(np.random.default_rng(0), 80)
    edge_mlp = torch.nn.Sequential(torch.nn.Linear(3, 16), torch.nn.SiLU(), torch.nn.Linear(16, 8))
    before = SlideGraph.build(coordinates, 8)
    after = SlideGraph.build(_turn(coordinates, 1.1, mirror), 8)
    assert torch.equal(before.neighbours, after.neighbours)
    with torch.no_grad():
        invariant = [frame_averaged_edges(g.offsets, edge_mlp) for g in (before, after)]
        raw = [frame_averaged_edges(g.offsets, edge_mlp, frame_averaging=False) for g in (before, after)]
    assert torch.allclose(*invariant, atol=1e-5)
    assert not torch.allclose(*raw, atol=1e-3)  # the ablation sees the turn


def test_the_whole_network_is_invariant_with_frame_averaging_and_not_without():
    torch.manual_seed(0)
    coordinates = ex.hex_spots(np.random.default_rng(1), 60)
    features, state = torch.randn(60, 8), torch.randn(60, 5)
    graphs = [SlideGraph.build(c, 8) for c in (coordinates, _turn(coordinates, 2.0, True))]
    for averaging, equal in ((True, True), (False, False)):
        net = SpatialTransformer(8, 5, width=16, layers=2, frame_averaging=averaging).eval()
        with torch.no_grad():
            outputs = [net(features, state, 0.3, g) for g in graphs]
        assert torch.allclose(*outputs, atol=1e-4) is equal


def test_knn_graph_excludes_each_spot_and_finds_its_nearest():
    coordinates = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 2.0], [5.0, 5.0], [5.0, 5.0]])
    graph = SlideGraph.build(coordinates, 2)
    index = graph.neighbours.numpy()
    assert all(i not in row for i, row in enumerate(index))
    assert set(index[0]) == {1, 2}
    assert 4 in index[3] and 3 in index[4]  # duplicates: each other's nearest, never themselves
    assert np.allclose(graph.offsets.numpy()[0], coordinates[index[0]] - coordinates[0])


def test_zinb_prior_has_the_note_s_zero_share_and_mean():
    generator = torch.Generator().manual_seed(0)
    sample = prior_sample((400_000,), "zinb", generator)
    counts = torch.expm1(sample)
    assert torch.allclose(counts, counts.round(), atol=1e-3)  # log1p of counts
    nb_zero = 1 / (1 + math.exp(0.1))  # NB(r = 1, mean m): P(0) = 1 / (1 + m)
    assert float((counts == 0).float().mean()) == pytest.approx(0.5 + 0.5 * nb_zero, abs=0.003)
    assert float(counts.mean()) == pytest.approx(0.5 * math.exp(0.1), abs=0.01)
    gaussian = prior_sample((100_000,), "gaussian", generator)
    assert float(gaussian.mean()) == pytest.approx(0, abs=0.01) and float(gaussian.std()) == pytest.approx(1, abs=0.01)


class _Recorder(torch.nn.Module):
    """Returns a fixed clean expression and records the times it is called at."""

    def __init__(self, clean):
        super().__init__()
        self.clean, self.times, self.genes = clean, [], clean.shape[1]

    def forward(self, features, state, t, graph):
        self.times.append(t)
        return self.clean


def test_euler_sampler_lands_on_the_last_clean_prediction_after_steps_minus_one_calls():
    clean = torch.randn(30, 4)
    network = _Recorder(clean)
    slide = type("S", (), {"spots": 30, "features": torch.zeros(30, 2), "graph": None})()
    out = FlowSampler(network, "zinb", 5).predict(slide, torch.Generator().manual_seed(0))
    assert torch.allclose(out, clean, atol=1e-6)
    assert network.times == pytest.approx([0.01, 0.2575, 0.505, 0.7525])


def test_pearson_matches_numpy_and_guards_constant_genes():
    rng = np.random.default_rng(0)
    measured = rng.standard_normal((50, 3))
    predicted = measured + rng.standard_normal((50, 3))
    expected = [np.corrcoef(predicted[:, g], measured[:, g])[0, 1] for g in range(3)]
    assert np.allclose(ex.pearson_per_gene(predicted, measured), expected)
    measured[:, 1] = 2.0  # constant measured gene: left out
    predicted[:, 2] = 1.0  # constant prediction: 0
    values = ex.pearson_per_gene(predicted, measured)
    assert np.isnan(values[1]) and values[2] == 0.0
    assert ex.mean_pearson(predicted, measured) == pytest.approx(expected[0] / 2)


def test_morans_i_matches_the_weight_matrix_formula():
    rng = np.random.default_rng(0)
    coordinates = ex.hex_spots(rng, 70)
    values = np.stack([coordinates[:, 0] + 0.1 * rng.standard_normal(70), rng.standard_normal(70)], 1)
    neighbours = knn_index(coordinates, 6)
    weights = np.zeros((70, 70))
    for i, row in enumerate(neighbours):
        weights[i, row] = 1.0
    z = values - values.mean(0)
    direct = [70 / weights.sum() * z[:, g] @ weights @ z[:, g] / (z[:, g] ** 2).sum() for g in range(2)]
    got = ex.morans_i(values, neighbours)
    assert np.allclose(got, direct)
    assert got[0] > 0.8 and abs(got[1]) < 0.2  # a gradient is autocorrelated, noise is not


def _data(seed=0, split="test", **params):
    return ex.synthetic_slides(Context(seed=seed, split=split, dataset="synthetic-slides"), **{**TINY, **params})


def test_training_slides_are_shared_by_splits_and_held_out_slides_are_not():
    test, val = _data(), _data(split="val")
    assert test.training_key == val.training_key
    assert np.array_equal(test.train[0].expression, val.train[0].expression)
    assert not np.array_equal(test.test[0].expression, val.test[0].expression)
    assert not np.array_equal(_data(seed=1).train[0].expression[:40], test.train[0].expression[:40])


def test_rotated_and_swept_held_out_slides_share_the_training():
    plain, turned, swept = _data(), _data(rotate_test=True), _data(test_spots=123)
    assert plain.training_key == turned.training_key == swept.training_key
    a, b = plain.test[0], turned.test[0]
    assert np.array_equal(a.expression, b.expression) and not np.allclose(a.coordinates, b.coordinates)
    from scipy.spatial.distance import pdist

    assert np.allclose(pdist(a.coordinates), pdist(b.coordinates))  # the same tissue, turned
    assert len(swept.test) == 1 and swept.test[0].spots == 123
    # the timing's repeats are not part of the training: a sweep timed less often still shares it
    assert _data(test_spots=123, timing_repeats=2).training_key == plain.training_key


def test_a_worker_draws_a_seed_s_training_slides_once_for_all_its_datasets():
    """The training and validation slides (their oracle is most of a load) are drawn once per worker and seed: the
    rotated and swept datasets get the very same objects; another seed gets its own."""
    ex._SHARED_SLIDES.clear()
    plain, turned, swept = _data(), _data(rotate_test=True), _data(test_spots=123)
    assert plain.train is turned.train is swept.train and plain.validation is swept.validation
    assert _data(seed=1).train is not plain.train


def test_the_sweep_slide_has_no_oracle_and_the_oracle_row_is_skipped_there():
    """The cost sweep's held-out slide is timed and scored, not given the sanity row: its oracle is not drawn (the
    same slide otherwise), and the oracle method is skipped on it with a line that says why."""
    from baselines.spatial import Oracle

    swept = _data(test_spots=123)
    assert swept.test[0].oracle is None and all(s.oracle is not None for s in swept.validation)
    result = ex.TASK.evaluate
    with pytest.raises(DataUnavailable, match="sweep"):
        result(Oracle(), swept, Context(seed=0, split="test", dataset="sweep"))


def test_the_oracle_correlates_with_the_measured_expression_and_a_constant_scores_zero():
    data = _data(test_slides=3, spots=[200, 200], oracle_draws=16)
    measured = np.concatenate([s.expression for s in data.test])
    oracle = np.concatenate([s.oracle for s in data.test])
    assert ex.mean_pearson(oracle, measured) > 0.2
    assert ex.mean_pearson(np.tile(measured.mean(0), (len(measured), 1)), measured) == 0.0


def test_every_method_gets_the_same_training_crops(monkeypatch):
    """Through the task's training loop: two methods with different networks and losses see the same crops."""
    from baselines.spatial import SpotMLP, SpatialRegressor

    seen = []
    crop = ex.SlideSession.crop

    def recording(self, rng):
        part = crop(self, rng)
        seen[-1].append(part.slide.coordinates.copy())
        return part

    monkeypatch.setattr(ex.SlideSession, "crop", recording)
    data = _data()
    for method in (SpotMLP(width=8, layers=1), SpatialRegressor(width=8, layers=1, heads=2)):
        seen.append([])
        method.fit(ex.SlideSession(data, Context(seed=0)))
    assert len(seen[0]) == len(seen[1]) > 2
    assert all(np.array_equal(a, b) for a, b in zip(*seen))


def test_bad_parameters_name_the_parameter():
    with pytest.raises(DataError, match="spots"):
        _data(spots=[60, 40])
    with pytest.raises(DataError, match="min_steps"):
        _data(min_steps=10, max_steps=4)
    with pytest.raises(DataError, match="min_crop"):
        _data(min_crop=1.5)


def test_stflow_trains_and_scores_through_the_task():
    data = _data()
    evaluation = ex.TASK.evaluate(STFlow(width=8, layers=1, heads=2), data, Context(seed=0))
    metrics = evaluation.metrics
    assert set(metrics) == set(ex.TASK.metrics)
    assert all(math.isfinite(v) for v in metrics.values())
    assert metrics["training_steps"] == 20  # the plateau rule's minimum, rounded up to 10 readings of every 2 steps
    assert "validation_pearson" in evaluation.curves


def test_full_attention_memory_is_quadratic_and_local_attention_linear():
    from harness.tasks.memory import peak_activation_bytes

    torch.manual_seed(0)
    local, full = SpatialTransformer(8, 5, width=16, layers=2).eval(), FullAttentionTransformer(8, 5, 16, 2).eval()
    peaks = {}
    for n in (1000, 2000):
        graph = SlideGraph.build(ex.hex_spots(np.random.default_rng(n), n), 8)
        features, state = torch.randn(n, 8), torch.zeros(n, 5)
        with torch.no_grad():
            peaks[n] = [peak_activation_bytes(lambda: net(features, state, 0.0, graph)) for net in (local, full)]
    local_ratio, full_ratio = (peaks[2000][i] / peaks[1000][i] for i in range(2))
    assert 1.8 < local_ratio < 2.2 and 3.6 < full_ratio < 4.4


def test_hest_loader_reads_the_layout_and_matches_embeddings_by_barcode(tmp_path):
    import h5py

    root = write_miniature(tmp_path / "hest", genes=8)
    data = hest_1k(Context(seed=0), train=["S0", "S1"], validation=["S2"], test=["S3"], genes=3, root=str(root))
    assert len(data.genes) == 3 and data.train[0].expression.shape == (40, 3)
    with h5py.File(root / "patch_embeddings" / "S0.h5") as file:
        order = [b.decode() for b in file["barcodes"]]
        embeddings = np.asarray(file["embeddings"])
    first = order.index("S0-spot0")
    assert np.array_equal(data.train[0].features[0], embeddings[first])
    nearest = np.sort(np.linalg.norm(data.train[0].coordinates[1:] - data.train[0].coordinates[0], axis=1))[0]
    assert 0.8 < nearest < 1.2  # in spot spacings
    named = hest_1k(Context(seed=0), train=["S0"], validation=["S2"], test=["S3"], genes=["GENE1", "GENE0"],
                    root=str(root))
    assert named.genes == ("GENE1", "GENE0")


def test_hest_loader_errors_name_the_file_and_what_was_expected(tmp_path):
    root = write_miniature(tmp_path / "hest", slides=3)
    with pytest.raises(DataError, match="S9.h5ad"):
        hest_1k(Context(seed=0), train=["S0", "S9"], validation=["S1"], test=["S2"], root=str(root))
    with pytest.raises(DataError, match="both train and test"):
        hest_1k(Context(seed=0), train=["S0"], validation=["S1"], test=["S0"], root=str(root))
    with pytest.raises(DataError, match="GENE99"):
        hest_1k(Context(seed=0), train=["S0"], validation=["S1"], test=["S2"], genes=["GENE99"], root=str(root))
    (root / "patch_embeddings" / "S2.h5").write_bytes(b"not hdf5")
    with pytest.raises(DataError, match="S2.h5"):
        hest_1k(Context(seed=0), train=["S0"], validation=["S1"], test=["S2"], root=str(root))
    with pytest.raises(DataUnavailable, match="--data-dir"):
        hest_1k(Context(seed=0), train=["S0"], validation=["S1"], test=["S2"])


def test_the_iterative_regressor_calls_the_network_as_often_as_stflow_s_sampler():
    from baselines.spatial import Iterated

    clean = torch.randn(30, 4)
    slide = type("S", (), {"spots": 30, "features": torch.zeros(30, 2), "graph": None})()
    flow, iterated = _Recorder(clean), _Recorder(clean)
    FlowSampler(flow, "zinb", 5).predict(slide, torch.Generator().manual_seed(0))
    Iterated(iterated, 4).predict(slide, None)
    assert len(flow.times) == len(iterated.times) == 4
    assert iterated.times == [0.0, 0.25, 0.5, 0.75]


def test_the_oracle_row_is_skipped_on_real_slides(tmp_path):
    from baselines.spatial import Oracle

    root = write_miniature(tmp_path / "hest", slides=3)
    data = hest_1k(Context(seed=0), train=["S0"], validation=["S1"], test=["S2"], genes=3, root=str(root))
    with pytest.raises(DataUnavailable, match="simulated"):
        Oracle().fit(ex.SlideSession(data, Context(seed=0)))
