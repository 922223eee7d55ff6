"""Real data for ``robustness.certified``, read from ``--data-dir`` (no download).

* CIFAR-10 and CIFAR-100 in their python pickle format, as the archives unpack:
  ``DATA_DIR/cifar-10-batches-py/data_batch_1..5`` and ``test_batch`` (``b"labels"``),
  ``DATA_DIR/cifar-100-python/train`` and ``test`` (``b"fine_labels"``); each file a
  pickled dict whose ``b"data"`` is uint8 (n, 3072), the red, green and blue planes of a
  32×32 image in turn.
* Tiny-ImageNet as its archive unpacks: ``DATA_DIR/tiny-imagenet-200/train/<wnid>/images/*.JPEG``
  and ``val/images/*.JPEG`` with ``val/val_annotations.txt`` (file name, wnid, box, tab
  separated); 200 classes of 64×64 images. Its labelled validation set is the test set, as
  in the paper (the official test set has no labels).

The seed draws a stratified validation split out of the training images (the same for the
validation and the test cells of a seed, and for every method) and, where a cap is set,
stratified subsamples; the test images are the dataset's own test set. Pixels are float32
in [0, 1]. A missing folder skips the dataset (:class:`DataUnavailable`); a file that is
there but cannot be read fails the cell with a :class:`DataError` naming it.
"""
from __future__ import annotations

import dataclasses
import pickle
from pathlib import Path

import numpy as np

from harness.tasks.base import Context, DataError, DataUnavailable, WorkerCache

CIFAR = {
    # variant: (folder, training files, test files, label key, classes)
    "cifar10": ("cifar-10-batches-py", tuple(f"data_batch_{i}" for i in range(1, 6)), ("test_batch",), b"labels", 10),
    "cifar100": ("cifar-100-python", ("train",), ("test",), b"fine_labels", 100),
}
TINY_IMAGENET = "tiny-imagenet-200"
TINY_IMAGENET_CLASSES = 200

_READ = WorkerCache(4)  # (what, path, size, mtime) → arrays: the cells of a worker read each file once


def data_root(context: Context, root: str | None, who: str, folder: str) -> Path:
    """``root`` (a dataset parameter) or the run's data folder, holding ``folder``; else skip the dataset."""
    base = Path(root) if root else (Path(context.data_dir) if context.data_dir else None)
    if base is None:
        raise DataUnavailable(f"{who} needs real data: pass --data-dir DIR (or set HARNESS_DATA_DIR) holding {folder}/")
    if not (base / folder).is_dir():
        raise DataUnavailable(f"{who}: no folder {base / folder} (the unpacked archive's folder, under the data directory)")
    return base / folder


def read_cifar_file(path: Path, label_key: bytes, classes: int) -> tuple[np.ndarray, np.ndarray]:
    """(uint8 images (n, 3, 32, 32), int64 labels (n,)) from one CIFAR python pickle; DataError if malformed."""
    if not path.is_file():
        raise DataError(f"{path}: missing; the CIFAR python archive unpacks to this file")
    status = path.stat()

    def build():
        try:
            with open(path, "rb") as handle:
                batch = pickle.load(handle, encoding="bytes")
        except Exception as exc:  # pickle raises UnpicklingError, EOFError, ValueError, ... on a broken file
            raise DataError(f"{path}: not a readable pickle ({type(exc).__name__}: {exc}); expected the CIFAR "
                            "python version's batch file") from None
        if not isinstance(batch, dict) or b"data" not in batch or label_key not in batch:
            keys = sorted(k.decode() if isinstance(k, bytes) else str(k) for k in batch) if isinstance(batch, dict) else None
            raise DataError(f"{path}: expected a dict with keys b'data' and {label_key!r}; found "
                            f"{'keys ' + ', '.join(keys) if keys is not None else type(batch).__name__}")
        data = np.asarray(batch[b"data"])
        labels = np.asarray(batch[label_key])
        if data.dtype != np.uint8 or data.ndim != 2 or data.shape[1] != 3 * 32 * 32:
            raise DataError(f"{path}: b'data' is {data.dtype} of shape {data.shape}; expected uint8 of shape (n, 3072)")
        if labels.shape != (data.shape[0],) or not np.issubdtype(labels.dtype, np.integer):
            raise DataError(f"{path}: {label_key!r} holds {labels.shape[0] if labels.ndim else 'no'} labels for "
                            f"{data.shape[0]} images; expected one integer label per image")
        if len(labels) and (labels.min() < 0 or labels.max() >= classes):
            raise DataError(f"{path}: labels span {labels.min()}..{labels.max()}; expected 0..{classes - 1}")
        return data.reshape(-1, 3, 32, 32), labels.astype(np.int64)

    return _READ.get_or_build(("cifar", str(path.resolve()), status.st_size, status.st_mtime_ns), build)


def stratified_subset(labels: np.ndarray, count: int | None, rng: np.random.Generator) -> np.ndarray:
    """Sorted indices of ``count`` items (None: all), each class in proportion to its share."""
    from sklearn.model_selection import train_test_split

    index = np.arange(len(labels))
    if count is None or count >= len(labels):
        return index
    kept, _ = train_test_split(index, train_size=int(count), stratify=labels, random_state=int(rng.integers(2**31 - 1)))
    return np.sort(kept)


def split_train_val(labels: np.ndarray, val_fraction: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Stratified (train, validation) index arrays."""
    from sklearn.model_selection import train_test_split

    index = np.arange(len(labels))
    train, val = train_test_split(index, test_size=val_fraction, stratify=labels, random_state=int(rng.integers(2**31 - 1)))
    return np.sort(train), np.sort(val)


def block_average(images: np.ndarray, size: int) -> np.ndarray:
    """(n, c, H, W) → (n, c, size, size), each output pixel the mean of an (H/size)×(W/size) block."""
    n, c, height, width = images.shape
    if size == height == width:
        return images
    fy, fx = height // size, width // size
    return images.reshape(n, c, size, fy, size, fx).mean(axis=(3, 5), dtype=np.float32)


def _check_size(image_size: int, native: int, who: str) -> None:
    if image_size < 1 or native % image_size:
        raise ValueError(f"{who}: image_size must divide {native} (each pixel the mean of a block); got {image_size}")


def _check_split(val_fraction: float, max_train: int | None, max_test: int | None, classes: int, who: str) -> None:
    if not 0 < val_fraction < 1:
        raise ValueError(f"{who}: val_fraction must be in (0, 1); got {val_fraction}")
    for name, value in (("max_train", max_train), ("max_test", max_test)):
        if value is not None and int(value) < 2 * classes:
            raise ValueError(f"{who}: {name} must keep at least two images per class ({2 * classes}); got {value}")


def cifar_arrays(context: Context, variant: str, *, root: str | None, val_fraction: float, max_train: int | None,
                 max_test: int | None, image_size: int = 32) -> tuple[tuple[np.ndarray, np.ndarray],
                                                                     tuple[np.ndarray, np.ndarray],
                                                                     tuple[np.ndarray, np.ndarray], int]:
    """(train, validation, test) as (float32 images in [0, 1], labels), and the number of classes.

    ``image_size`` below 32 averages blocks of pixels (16: 2×2 blocks), for networks a CPU can train.
    """
    folder_name, train_files, test_files, label_key, classes = CIFAR[variant]
    who = f"{variant}-certified"
    _check_size(image_size, 32, who)
    _check_split(val_fraction, max_train, max_test, classes, who)
    folder = data_root(context, root, who, folder_name)
    parts = [read_cifar_file(folder / name, label_key, classes) for name in train_files]
    images = np.concatenate([p[0] for p in parts])
    labels = np.concatenate([p[1] for p in parts])
    test_parts = [read_cifar_file(folder / name, label_key, classes) for name in test_files]
    test_images = np.concatenate([p[0] for p in test_parts])
    test_labels = np.concatenate([p[1] for p in test_parts])
    train, val, test = draw_partition(context, labels, test_labels, val_fraction, max_train, max_test)

    def scaled(x):
        return block_average(x.astype(np.float32) / np.float32(255.0), image_size)

    return ((scaled(images[train]), labels[train]), (scaled(images[val]), labels[val]),
            (scaled(test_images[test]), test_labels[test]), classes)


def draw_partition(context: Context, labels: np.ndarray, test_labels: np.ndarray, val_fraction: float,
                   max_train: int | None, max_test: int | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Indices (train, validation) into the training images and (test) into the test images, drawn by the seed.

    The draw depends on the seed only, not the split: the validation and the test cells of a
    seed train on the same images.
    """
    classes = len(np.unique(labels))
    kept_count = len(labels) if max_train is None else min(int(max_train), len(labels))
    if int(np.ceil(kept_count * val_fraction)) < classes or kept_count - int(np.ceil(kept_count * val_fraction)) < classes:
        raise ValueError(f"{context.dataset}: val_fraction {val_fraction} of {kept_count} training images leaves fewer "
                         f"than one image per class ({classes}) in the validation or the training split; raise "
                         "max_train or move val_fraction towards 0.5")
    rng = dataclasses.replace(context, split="train").rng("partition")
    kept = stratified_subset(labels, None if max_train is None else int(max_train), rng)
    train, val = split_train_val(labels[kept], val_fraction, rng)
    test = stratified_subset(test_labels, None if max_test is None else int(max_test), rng)
    return kept[train], kept[val], test


def tiny_imagenet_arrays(context: Context, *, root: str | None, val_fraction: float, max_train: int | None,
                         max_test: int | None, classes: int = TINY_IMAGENET_CLASSES, image_size: int = 64,
                         threads: int = 1):
    """Tiny-ImageNet's (train, validation, test) as (float32 images in [0, 1], labels), and the number of classes.

    ``classes`` is how many class folders ``train/`` must hold (200; fewer for a subset
    the user made, which then says so in the spec); ``image_size`` below 64 averages blocks.
    """
    from harness.tasks.fewshot.images import check_images, class_folders, read_images

    who = "tiny-imagenet-certified"
    _check_size(image_size, 64, who)
    _check_split(val_fraction, max_train, max_test, classes, who)
    folder = data_root(context, root, who, TINY_IMAGENET)
    train_folder, val_folder = folder / "train", folder / "val"
    if not train_folder.is_dir():
        raise DataError(f"{who}: no folder {train_folder}; expected one sub-folder of images per class (wnid)")
    found = class_folders(train_folder)
    if len(found) != classes:
        raise DataError(f"{who}: {train_folder} holds {len(found)} class folders with images; expected {classes} "
                        "(one per wnid; the dataset parameter classes says how many)")
    index = {name: i for i, (name, _) in enumerate(found)}
    annotations = val_folder / "val_annotations.txt"
    if not annotations.is_file():
        raise DataError(f"{who}: no file {annotations}; it names each validation image's class (file, wnid, box)")
    test_files, test_labels = [], []
    for number, line in enumerate(annotations.read_text().splitlines(), start=1):
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) < 2:
            raise DataError(f"{who}: {annotations}, line {number}: expected tab-separated file name and wnid; "
                            f"found {line!r}")
        if fields[1] not in index:
            raise DataError(f"{who}: {annotations}, line {number}: class {fields[1]!r} has no folder under {train_folder}")
        path = val_folder / "images" / fields[0]
        if not path.is_file():
            raise DataError(f"{who}: {annotations}, line {number}: no image {path}")
        test_files.append(path)
        test_labels.append(index[fields[1]])
    files = [path for _, paths in found for path in paths]
    labels = np.concatenate([np.full(len(paths), i, dtype=np.int64) for i, (_, paths) in enumerate(found)])
    test_labels = np.asarray(test_labels, dtype=np.int64)
    # only the drawn images are read, but every file is checked once per worker, whichever a seed draws
    check_images([(p,) for p in files], train_folder, who, threads)
    check_images([(p,) for p in test_files], val_folder, who, threads)
    train, val, test = draw_partition(context, labels, test_labels, val_fraction, max_train, max_test)

    def load(indices, paths):
        images = read_images([paths[i] for i in indices], 64, threads).astype(np.float32) / np.float32(255.0)
        return block_average(images, image_size)

    return ((load(train, files), labels[train]), (load(val, files), labels[val]),
            (load(test, test_files), test_labels[test]), classes)


# --------------------------------------------------------------------------- miniatures in the real layouts


def write_cifar(root: Path, variant: str, *, train_per_class: int, test_per_class: int, seed: int = 0) -> Path:
    """Write a miniature of ``variant`` ("cifar10" or "cifar100") in its python pickle layout under ``root``.

    Random images whose mean brightness follows the class, so that a network can learn
    something; ``train_per_class`` images of each class spread over the training files,
    ``test_per_class`` in the test file. Returns ``root``.
    """
    folder_name, train_files, test_files, label_key, classes = CIFAR[variant]
    rng = np.random.default_rng(seed)
    folder = Path(root) / folder_name
    folder.mkdir(parents=True, exist_ok=True)

    def batch(per_class):
        labels = np.repeat(np.arange(classes), per_class)
        rng.shuffle(labels)
        level = (labels[:, None] + 0.5) * (255.0 / classes)
        data = np.clip(rng.normal(level, 40.0, size=(len(labels), 3 * 32 * 32)), 0, 255).astype(np.uint8)
        return data, labels

    data, labels = batch(train_per_class)
    for name, part in zip(train_files, np.array_split(np.arange(len(labels)), len(train_files))):
        with open(folder / name, "wb") as handle:
            pickle.dump({b"data": data[part], label_key: labels[part].tolist(), b"batch_label": name.encode()}, handle)
    data, labels = batch(test_per_class)
    for name in test_files:
        with open(folder / name, "wb") as handle:
            pickle.dump({b"data": data, label_key: labels.tolist()}, handle)
    return Path(root)


def write_tiny_imagenet(root: Path, *, classes: int, train_per_class: int, val_per_class: int, seed: int = 0) -> Path:
    """Write a miniature Tiny-ImageNet (``classes`` wnids, 64×64 JPEGs) in the archive's layout under ``root``."""
    from PIL import Image

    rng = np.random.default_rng(seed)
    folder = Path(root) / TINY_IMAGENET
    wnids = [f"n{index:08d}" for index in range(classes)]

    def image(label):
        level = (label + 0.5) * (255.0 / classes)
        return Image.fromarray(np.clip(rng.normal(level, 40.0, size=(64, 64, 3)), 0, 255).astype(np.uint8))

    for label, wnid in enumerate(wnids):
        images = folder / "train" / wnid / "images"
        images.mkdir(parents=True, exist_ok=True)
        for i in range(train_per_class):
            image(label).save(images / f"{wnid}_{i}.JPEG", format="JPEG")
    (folder / "val" / "images").mkdir(parents=True, exist_ok=True)
    lines = []
    for label, wnid in enumerate(wnids):
        for i in range(val_per_class):
            name = f"val_{label * val_per_class + i}.JPEG"
            image(label).save(folder / "val" / "images" / name, format="JPEG")
            lines.append(f"{name}\t{wnid}\t0\t0\t63\t63")
    (folder / "val" / "val_annotations.txt").write_text("\n".join(lines) + "\n")
    return Path(root)
