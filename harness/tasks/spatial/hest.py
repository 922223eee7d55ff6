"""Real slides for ``spatial.expression`` in the HEST-1k layout, read from a local folder (nothing is downloaded).

The folder (``root``, else ``--data-dir``/``hest``, else ``--data-dir``) holds, per slide id:

* ``st/<id>.h5ad``: an AnnData file of raw counts (spots × genes, ``var_names`` the gene symbols) with the spot
  coordinates in ``obsm['spatial']`` (pixels), as HEST-1k ships them;
* ``patch_embeddings/<id>.h5``: an HDF5 file with ``embeddings`` (spots × D, a pathology foundation model's patch
  features, e.g. UNI's 1,024) and ``barcodes`` (the spots' ``obs_names``, bytes or text), matched by barcode.

HEST-1k ships the counts and the image patches; the embeddings are what HEST-Benchmark computes from the patches
with a foundation model, so the user computes them once (no model is run here). Expression is log1p of the raw
counts (no library-size normalisation, as upstream's); ``genes`` is a list of symbols (HEST-Benchmark's
``var_50genes.json``) or a number: that many genes of highest log1p variance over the training slides' spots.
Coordinates are divided by the slide's median nearest-spot distance, so that they are in spot spacings as the
simulated slides' are. Reading ``.h5ad`` needs anndata (``pip install -e '.[spatial]'``).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from harness.tasks.base import Context, DataError, DataUnavailable
from harness.tasks.parameters import count
from harness.tasks.spatial.slides import Slide, SlideData, train_plan

def _root(context: Context, root: str | None) -> Path:
    if root:
        base = Path(root)
    elif context.data_dir:
        base = Path(context.data_dir) / "hest" if (Path(context.data_dir) / "hest" / "st").is_dir() \
            else Path(context.data_dir)
    else:
        raise DataUnavailable("hest-1k needs real data: pass --data-dir DIR (or set HARNESS_DATA_DIR) holding "
                              "st/<id>.h5ad and patch_embeddings/<id>.h5 for every slide the spec names")
    if not (base / "st").is_dir():
        raise DataUnavailable(f"hest-1k: no folder {base / 'st'} (the slides' .h5ad files); expected the HEST-1k "
                              f"layout under {base}")
    return base


def _ids(name: str, value) -> list[str]:
    if not (isinstance(value, list) and value and all(isinstance(v, str) and v for v in value)):
        raise DataError(f"hest-1k: {name} = {value!r}: expected a non-empty list of slide ids")
    return list(value)


def _anndata():
    try:
        import anndata
    except ImportError as error:
        raise DataUnavailable("hest-1k reads .h5ad files with anndata, which is not installed: "
                              "pip install -e '.[spatial]'") from error
    return anndata


def _read_counts(path: Path):
    anndata = _anndata()
    if not path.is_file():
        raise DataError(f"hest-1k: no file {path}; every slide the spec names needs st/<id>.h5ad")
    try:
        adata = anndata.read_h5ad(path)
    except Exception as error:  # a damaged or foreign file: h5py and anndata raise many kinds
        raise DataError(f"hest-1k: {path} is not a readable .h5ad file ({type(error).__name__}: {error})") from None
    if "spatial" not in adata.obsm:
        raise DataError(f"hest-1k: {path} has no obsm['spatial'] (the spots' pixel coordinates)")
    coordinates = np.asarray(adata.obsm["spatial"], dtype=np.float64)
    if coordinates.ndim != 2 or coordinates.shape[1] != 2 or coordinates.shape[0] != adata.n_obs:
        raise DataError(f"hest-1k: {path}: obsm['spatial'] has shape {coordinates.shape}; expected ({adata.n_obs}, 2)")
    matrix = adata.X.toarray() if hasattr(adata.X, "toarray") else np.asarray(adata.X)
    if not np.isfinite(matrix).all() or (matrix < 0).any():
        raise DataError(f"hest-1k: {path}: the counts hold negative or non-finite values; expected raw counts")
    return [str(b) for b in adata.obs_names], [str(g) for g in adata.var_names], coordinates, matrix


def _read_embeddings(path: Path, barcodes: list[str]) -> np.ndarray:
    import h5py

    if not path.is_file():
        raise DataError(f"hest-1k: no file {path}; every slide needs patch_embeddings/<id>.h5 (embeddings, "
                        "barcodes)")
    try:
        with h5py.File(path, "r") as file:
            embeddings = np.asarray(file["embeddings"], dtype=np.float32)
            names = [b.decode() if isinstance(b, bytes) else str(b) for b in np.asarray(file["barcodes"]).ravel()]
    except KeyError as error:
        raise DataError(f"hest-1k: {path} lacks the dataset {error}; expected 'embeddings' and 'barcodes'") from None
    except OSError as error:
        raise DataError(f"hest-1k: {path} is not a readable HDF5 file ({error})") from None
    if embeddings.ndim != 2 or len(embeddings) != len(names):
        raise DataError(f"hest-1k: {path}: embeddings of shape {embeddings.shape} for {len(names)} barcodes")
    row = {name: i for i, name in enumerate(names)}
    missing = [b for b in barcodes if b not in row]
    if missing:
        raise DataError(f"hest-1k: {path} has no embedding for {len(missing)} of the slide's {len(barcodes)} spots "
                        f"(first: {missing[0]!r})")
    return embeddings[[row[b] for b in barcodes]]


def _read_slide(base: Path, slide_id: str):
    counts_path, embedding_path = base / "st" / f"{slide_id}.h5ad", base / "patch_embeddings" / f"{slide_id}.h5"
    barcodes, genes, coordinates, matrix = _read_counts(counts_path)
    features = _read_embeddings(embedding_path, barcodes)
    if len(barcodes) < 3:
        raise DataError(f"hest-1k: {counts_path} has {len(barcodes)} spots; a slide needs at least 3")
    from scipy.spatial import cKDTree

    spacing = float(np.median(cKDTree(coordinates).query(coordinates, k=2)[0][:, 1]))
    if not spacing > 0:
        raise DataError(f"hest-1k: {counts_path}: spots share coordinates (median nearest distance {spacing})")
    return genes, coordinates / spacing, features, np.log1p(matrix).astype(np.float32)


def hest_1k(context: Context, *, train: list | None = None, validation: list | None = None,
            test: list | None = None, genes: Any = 50, root: str | None = None,
            neighbours: int = 8, lr: float = 5e-4, crops_per_step: int = 2, min_crop: float = 0.25, clip: float = 1.0,
            every: int = 50, min_steps: int = 500, max_steps: int = 3000, tolerance: float = 0.005,
            timing_repeats: int = 3) -> SlideData:
    """The HEST-1k slides ``train``, ``validation`` and ``test`` (lists of slide ids, e.g. a HEST-Benchmark fold's
    patients, the validation slides taken from its training side, never its test side) from ``root`` or
    ``--data-dir``; ``genes`` a list of symbols or the number of highest-variance genes on the training slides;
    the training plan as :func:`~harness.tasks.spatial.expression.synthetic_slides`'s."""
    base = _root(context, root)
    parts = {"train": _ids("train", train), "validation": _ids("validation", validation), "test": _ids("test", test)}
    seen: dict[str, str] = {}
    for part, ids in parts.items():
        for slide_id in ids:
            if slide_id in seen:
                raise DataError(f"hest-1k: slide {slide_id!r} is in both {seen[slide_id]} and {part}; the split is "
                                "by slide")
            seen[slide_id] = part
    plan = train_plan(lr, crops_per_step, min_crop, clip, every, min_steps, max_steps, tolerance, neighbours)
    repeats = count("timing_repeats", timing_repeats)
    raw = {slide_id: _read_slide(base, slide_id) for ids in parts.values() for slide_id in ids}
    chosen = _genes(genes, [raw[s] for s in parts["train"]], base)
    slides = {part: tuple(_select(slide_id, raw[slide_id], chosen, base) for slide_id in ids)
              for part, ids in parts.items()}
    dims = {s.features.shape[1] for group in slides.values() for s in group}
    if len(dims) > 1:
        raise DataError(f"hest-1k: the slides' embeddings have {sorted(dims)} dimensions; one encoder's, please")
    key = json.dumps({"root": str(base.resolve()), **parts, "genes": chosen, "plan": repr(plan)}, sort_keys=True)
    return SlideData(key, tuple(chosen), slides["train"], slides["validation"], slides["test"], plan, repeats)


def _genes(genes, training: list, base: Path) -> list[str]:
    if isinstance(genes, list):
        if not genes or not all(isinstance(g, str) for g in genes) or len(set(genes)) != len(genes):
            raise DataError(f"hest-1k: genes = {genes!r}: expected distinct gene symbols or a number")
        return list(genes)
    how_many = count("genes", genes, 2)
    common = set(training[0][0]).intersection(*(set(t[0]) for t in training[1:]))
    if len(common) < how_many:
        raise DataError(f"hest-1k: genes = {how_many}, but the training slides share {len(common)} genes")
    names = sorted(common)
    stacked = np.concatenate([t[3][:, [t[0].index(g) for g in names]] for t in training])
    order = np.argsort(-stacked.var(0), kind="stable")[:how_many]
    return [names[i] for i in sorted(order)]


def _select(slide_id: str, raw, genes: list[str], base: Path) -> Slide:
    names, coordinates, features, expression = raw
    index = {g: i for i, g in enumerate(names)}
    missing = [g for g in genes if g not in index]
    if missing:
        raise DataError(f"hest-1k: {base / 'st' / (slide_id + '.h5ad')} lacks {len(missing)} of the chosen genes "
                        f"(first: {missing[0]!r})")
    return Slide(slide_id, coordinates, features, expression[:, [index[g] for g in genes]])


def write_miniature(folder: Path, slides: int = 4, spots: int = 40, genes: int = 8, feature_dim: int = 6,
                    seed: int = 0) -> Path:
    """A tiny HEST-1k-layout folder (slides S0, S1, …): Poisson counts on a jittered grid, random embeddings listed
    in shuffled barcode order (the reader must match by barcode). For the tests and the conformance run."""
    import anndata
    import h5py

    rng = np.random.default_rng(seed)
    (folder / "st").mkdir(parents=True, exist_ok=True)
    (folder / "patch_embeddings").mkdir(parents=True, exist_ok=True)
    for s in range(slides):
        side = int(np.ceil(np.sqrt(spots)))
        grid = np.stack(np.meshgrid(np.arange(side), np.arange(side)), -1).reshape(-1, 2)[:spots] * 100.0
        coordinates = grid + rng.uniform(-5, 5, grid.shape)
        features = rng.standard_normal((spots, feature_dim)).astype(np.float32)
        rate = np.exp(features[:, :1] + rng.standard_normal((1, genes)) * 0.5 + 1)
        adata = anndata.AnnData(X=rng.poisson(rate).astype(np.float32))
        adata.obs_names = [f"S{s}-spot{i}" for i in range(spots)]
        adata.var_names = [f"GENE{g}" for g in range(genes)]
        adata.obsm["spatial"] = coordinates
        adata.write_h5ad(folder / "st" / f"S{s}.h5ad")
        order = rng.permutation(spots)
        with h5py.File(folder / "patch_embeddings" / f"S{s}.h5", "w") as file:
            file["embeddings"] = features[order]
            file["barcodes"] = np.array([f"S{s}-spot{i}".encode() for i in order])
    return folder
