"""Task ``fewshot.cdfsl``: pre-train on a source domain, then N-way K-shot episodes on a target domain.

Protocol (ReCIT, Yi et al., ICML 2025, and its CLS-token code base). A method
(:class:`FewShotLearner`) is trained once on the labelled source images, then only
embeds images: the task draws every episode itself, computes prototypes from the frozen
features and scores the queries, so a method never sees a query label.

* Features are L2-normalised; the mean of the episode's *support* features is subtracted
  from support and query features; both are L2-normalised again; the prototypes are the
  class means of the support features and a query goes to the prototype at the least
  squared Euclidean distance (:func:`protonet_accuracy`).
* ``accuracy_1shot`` / ``accuracy_5shot``: mean accuracy (%) over the episodes on the
  target domain, ``…_ci95`` the half-width 1.96·std/√E of the paper's interval.
* ``source_accuracy``: 5-shot accuracy (%) of the same protocol on *novel classes of the
  source domain* (classes never trained on, like the target's), so that source and target
  differ in domain only and not in class novelty; ``source_target_gap`` = source_accuracy
  − accuracy_5shot, the quantity the paper's phenomenon is about.
* ``source_seen_accuracy``: the same on held-out images of the *trained* source classes
  (what ``source_accuracy`` measured up to task version 1): the class-novelty confound is
  source_seen_accuracy − source_accuracy.
* ``covariance_alignment``: how alike the source and target feature distributions are,
  ⟨Σ_s, Σ_t⟩_F / (‖Σ_s‖_F ‖Σ_t‖_F) for the d × d feature covariances of the held-out
  source images (trained classes) and of the target images, each centred over its own
  images (computed by :func:`harness.tasks.fewshot.images.covariance_alignment`). It is *not* the
  standard linear CKA of Kornblith et al., which compares two representations of the
  *same* inputs; source and target images are not paired, so this is linear CKA with the
  feature channels as the paired samples. The paper's figure uses "CKA" but its authors'
  code (github.com/shuaiyi308/ReCIT) holds no CKA computation to follow, so the metric
  is named for what it measures (up to task version 1 it was reported as ``cka``).
* ``train_s``: seconds of source training; ``runtime_s``: seconds of the method's
  :meth:`~FewShotLearner.embed` calls in this cell.

Caching. The source domain and the training budget do not depend on the target, so the
task keeps the last two source-trained models of a worker process (cells run seed →
method → dataset) in a :class:`harness.tasks.base.SourceTraining` and reuses one when
everything that determines it matches: the method's class and parameters (less those
listed in its ``after_source_params``), the seed, the source data, the budget, the device
and the precision. ``train_s`` then reports the original training time.

Loaders: :func:`synthetic_digit_domains` (scikit-learn's bundled digits and procedural
gratings, no download) and :func:`cdfsl_imagefolder` (the BSCD-FSL benchmark under
``--data-dir``).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from harness.tasks.base import Context, DataError, DataUnavailable, SourceTraining, Task, WorkerCache
from harness.tasks.fewshot.episodes import Episodes, sample_episodes
from harness.tasks.fewshot.images import (
    IMAGE_SUFFIXES,
    check_class_sizes,
    check_images,
    class_folders,
    gratings,
    covariance_alignment,
    read_images,
    smooth_noise,
    to_rgb_uint8,
    upsample_digits,
    write_image_folder,
)

SHOTS = (1, 5)
SOURCE_SHOTS = 5
WAYS = 5  # the loaders' default number of classes per episode
SYNTHETIC_TARGETS = ("near", "inverted", "grating", "texture")


# --------------------------------------------------------------------------- data


@dataclass(frozen=True, eq=False)
class Domain:
    """Images (N, 3, H, W) uint8, read-only, with one integer label each."""

    name: str
    images: np.ndarray
    labels: np.ndarray

    def __post_init__(self):
        if self.images.ndim != 4 or self.images.shape[1] != 3 or self.images.dtype != np.uint8:
            raise ValueError(f"domain {self.name}: images must be uint8 (N, 3, H, W); got {self.images.dtype} {self.images.shape}")
        if self.labels.shape != (self.images.shape[0],):
            raise ValueError(f"domain {self.name}: {self.labels.shape[0]} labels for {self.images.shape[0]} images")
        self.images.setflags(write=False)  # shared by every method of a cell through the engine's cache
        self.labels.setflags(write=False)


@dataclass(frozen=True, eq=False)
class SourceSet:
    """What a method trains on: the labelled source images and the task's training budget.

    ``images`` (N, 3, H, W) uint8 and ``labels`` (N,) integers, both read-only; ``epochs``
    and ``batch_size`` are the same for every method.
    """

    images: np.ndarray
    labels: np.ndarray
    epochs: int
    batch_size: int


@dataclass(frozen=True, eq=False)
class CdfslData:
    """One target domain with its source domain, the episode settings and the training budget."""

    source_train: Domain
    source_heldout: Domain  # held-out images of the trained source classes
    target: Domain
    source_key: tuple  # what determines the source data: part of the trained-model cache key
    ways: int = WAYS
    queries: int = 15
    episodes: int = 600
    epochs: int = 30
    batch_size: int = 64
    source_novel: Domain | None = None  # source-domain images of classes never trained on (source_accuracy)


def _source_context(context: Context) -> Context:
    """The context of everything source-side: the same for val and test and for every target.

    The source domain is training data, so its stream is the ``train`` split's; the split
    only changes the target side.
    """
    return replace(context, split="train", dataset="cdfsl-source")


def _check_budget(ways: int, queries: int, episodes: int, epochs: int, batch_size: int) -> None:
    for name, value in (("ways", ways), ("queries", queries), ("episodes", episodes), ("epochs", epochs),
                        ("batch_size", batch_size)):
        if int(value) != value or value < 1:
            raise ValueError(f"{name}={value} must be a positive integer")


_SOURCES = WorkerCache(2)  # one array per source domain, shared by the datasets of a worker


@lru_cache(maxsize=1)
def _digits():
    """scikit-learn's bundled digits (parsed once per process)."""
    from sklearn.datasets import load_digits

    return load_digits()


def _digits_by_class(classes, per_class: int | None, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Indices into scikit-learn's digits, ``per_class`` of each class (all when None), and their labels."""
    target = _digits().target
    chosen = []
    for digit in classes:
        members = np.flatnonzero(target == digit)
        if per_class is not None:
            if per_class > members.size:
                raise ValueError(f"per_class={per_class}: digit {digit} has only {members.size} images")
            members = np.sort(rng.choice(members, size=per_class, replace=False))
        chosen.append(members)
    index = np.concatenate(chosen)
    return index, target[index]


def _check_fraction(fraction: float) -> None:
    if not 0.0 < fraction < 1.0:
        raise ValueError(f"heldout_fraction={fraction} must lie strictly between 0 and 1")


def _heldout_count(size: int, fraction: float) -> int:
    """How many of a source class's ``size`` images are held out from training."""
    return max(1, int(round(fraction * size)))


def _split_heldout(labels: np.ndarray, fraction: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Positions of the training and the held-out images: ``fraction`` of every class held out."""
    _check_fraction(fraction)
    train, heldout = [], []
    for label in np.unique(labels):
        members = rng.permutation(np.flatnonzero(labels == label))
        cut = _heldout_count(members.size, fraction)
        heldout.append(members[:cut])
        train.append(members[cut:])
    return np.sort(np.concatenate(train)), np.sort(np.concatenate(heldout))


def _half_for_split(members: np.ndarray, split: str, rng: np.random.Generator) -> np.ndarray:
    """Validation gets one half of a class's images and test the other (from a split-independent ``rng``)."""
    shuffled = rng.permutation(members)
    half = shuffled.size // 2
    return np.sort(shuffled[half:] if split == "test" else shuffled[:half])


def style_images(strokes: np.ndarray, style: str, shift: float, rng: np.random.Generator) -> np.ndarray:
    """Render (N, S, S) digit strokes in [0, 1] in a target style, as grey images in [0, 1].

    * ``near``: unchanged (the source's style);
    * ``inverted``: (1 − shift)·d + shift·(1 − d) plus Gaussian noise of std 0.2·shift;
    * ``grating``: strokes filled with an oriented sinusoid (5–8 periods per image) over a
      background of a weaker, roughly orthogonal grating (2–4 periods) mixed with smooth
      noise, so that the mean intensities of stroke and background match and only texture
      marks the digit; blended with the clean strokes as (1 − shift)·d + shift·textured.
    """
    n, size, _ = strokes.shape
    if style == "near":
        return strokes
    if style == "inverted":
        inverted = (1.0 - shift) * strokes + shift * (1.0 - strokes)
        return np.clip(inverted + rng.normal(0.0, 0.2 * shift, strokes.shape), 0.0, 1.0)
    if style == "grating":
        theta = rng.uniform(0.0, np.pi, n)
        foreground = gratings(size, theta, rng.uniform(5.0, 8.0, n), rng.uniform(0.0, 2 * np.pi, n))
        theta_back = theta + np.pi / 2 + rng.uniform(-np.pi / 8, np.pi / 8, n)
        background = gratings(size, theta_back, rng.uniform(2.0, 4.0, n), rng.uniform(0.0, 2 * np.pi, n))
        background = 0.5 * (0.5 + 0.5 * (background - 0.5)) + 0.5 * smooth_noise(n, size, rng)
        textured = strokes * foreground + (1.0 - strokes) * background
        return (1.0 - shift) * strokes + shift * textured
    raise ValueError(f"style {style!r} is unknown; expected one of near, inverted, grating")


def texture_classes(per_class: int, size: int, shift: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Five procedural texture classes, (5·per_class, S, S) grey images in [0, 1] and labels 0..4.

    Class c is a grating at orientation c·π/5 with 3·(8/3)^(c/4) periods per image (3 to 8),
    each instance with orientation jitter (std π/40), a ±5 % frequency jitter, a random
    phase, a random distractor grating of contrast 0.3·shift and pixel noise of std
    0.1·shift. Only local (within-patch) patterns tell the classes apart.
    """
    labels = np.repeat(np.arange(5), per_class)
    n = labels.size
    theta = labels * np.pi / 5 + rng.normal(0.0, np.pi / 40, n)
    cycles = 3.0 * (8.0 / 3.0) ** (labels / 4) * np.exp(rng.normal(0.0, 0.05, n))
    signal = gratings(size, theta, cycles, rng.uniform(0.0, 2 * np.pi, n))
    distractor = gratings(size, rng.uniform(0.0, np.pi, n), rng.uniform(2.0, 8.0, n), rng.uniform(0.0, 2 * np.pi, n))
    images = (signal + 0.3 * shift * distractor) / (1.0 + 0.3 * shift)
    return np.clip(images + rng.normal(0.0, 0.1 * shift, images.shape), 0.0, 1.0), labels


def synthetic_digit_domains(
    context: Context,
    *,
    target: str = "grating",
    image_size: int = 32,
    shift: float = 1.0,
    source_classes: tuple[int, ...] = (0, 1, 2, 3, 4),
    target_classes: tuple[int, ...] = (5, 6, 7, 8, 9),
    per_class: int | None = None,
    heldout_fraction: float = 0.3,
    source_rotations: int = 1,
    ways: int = WAYS,
    queries: int = 15,
    episodes: int = 600,
    epochs: int = 30,
    batch_size: int = 64,
) -> CdfslData:
    """Source: digits ``source_classes``; target: novel classes under a domain shift (the paper note's CPU setting).

    Digits are scikit-learn's bundled 8×8 images, upsampled bilinearly to ``image_size``
    with random shifts of ±3 px per 32 px. Source images (``per_class`` per class, all
    ≈180 when None) are split per class into training and ``heldout_fraction`` held-out
    images; they depend on the seed only, not on the split or the target.

    Novel source classes (``source_accuracy``): the digits have ten classes, five trained
    on and five for the targets, so no sixth class is left for a source-only novel set;
    the novel source classes are therefore ``target_classes`` in the source style, from
    this split's half of each class, drawn independently of the target (the same for every
    target). On the three digit targets source and target then share their classes and
    differ in domain alone; on ``texture`` they differ in classes too, both novel.

    ``target``: ``near`` (``target_classes`` in the source style), ``inverted`` (inverted
    intensity + noise), ``grating`` (strokes as oriented gratings on a textured
    background; far), ``texture`` (five grating texture classes; far) — see
    :func:`style_images` and :func:`texture_classes`; ``shift`` in [0, 1] scales the
    shift. Validation and test use disjoint halves of each target digit class (the
    texture target draws fresh instances per split), so tuning never sees a test image.

    ``source_rotations`` (1 to 4; 1, none, is the default): every *training* source image
    is also given turned by 90°, 180°, … ((``source_rotations`` − 1) quarter turns), each
    turn of a digit as a class of its own (label digit + 10·turns), the Omniglot trick for
    more source classes from the same images. It is source data, the same for every
    method. Held-out source images stay upright (``source_seen_accuracy`` and
    ``covariance_alignment`` still see the source domain proper). No turn of a digit 0-4
    is a digit 5-9 (only 6 and 9 are turns of each other, and both are target classes).

    ``ways``, ``queries``, ``episodes``: the episodes (1- and 5-shot are both evaluated);
    ``epochs``, ``batch_size``: the source-training budget, the same for every method.
    """
    _check_budget(ways, queries, episodes, epochs, batch_size)
    if int(source_rotations) != source_rotations or not 1 <= source_rotations <= 4:
        raise ValueError(f"source_rotations={source_rotations} must be an integer from 1 (no rotation) to 4 "
                         "(0°, 90°, 180° and 270°)")
    source_rotations = int(source_rotations)
    if target not in SYNTHETIC_TARGETS:
        raise ValueError(f"target={target!r} is unknown; expected one of {', '.join(SYNTHETIC_TARGETS)}")
    if image_size < 8:
        raise ValueError(f"image_size={image_size} must be at least 8")
    if not 0.0 <= shift <= 1.0:
        raise ValueError(f"shift={shift} must lie in [0, 1]")
    source_classes = tuple(int(c) for c in source_classes)
    target_classes = tuple(int(c) for c in target_classes)
    if set(source_classes) & set(target_classes) or not set(source_classes) | set(target_classes) <= set(range(10)):
        raise ValueError(f"source_classes {list(source_classes)} and target_classes {list(target_classes)} "
                         "must be disjoint digits 0..9")
    max_shift = int(round(3 * image_size / 32))
    source_context = _source_context(context)
    source_key = ("cdfsl-digits", context.seed, image_size, source_classes, per_class, heldout_fraction, source_rotations)

    def build_source():
        rng = source_context.rng("data", "digits")
        index, labels = _digits_by_class(source_classes, per_class, rng)
        strokes = upsample_digits(_digits().images[index], image_size, max_shift, rng)
        train, heldout = _split_heldout(labels, heldout_fraction, rng)
        images = to_rgb_uint8(strokes)
        train_images, train_labels = rotated_classes(images[train], labels[train], source_rotations)
        return (Domain("source", train_images, train_labels),
                Domain("source-heldout", images[heldout], labels[heldout].copy()))

    source_train, source_heldout = _SOURCES.get_or_build(source_key, build_source)

    digits = _digits()
    partition = source_context.rng("partition", "target-digits")
    halves = [_half_for_split(np.flatnonzero(digits.target == c), context.split, partition) for c in target_classes]
    novel_rng = replace(context, dataset="cdfsl-source").rng("data", "novel-source-classes")
    novel = [np.sort(novel_rng.choice(h, size=per_class, replace=False)) if per_class is not None and per_class <= h.size
             else h for h in halves]
    novel_index = np.concatenate(novel)
    source_novel = Domain("source-novel", to_rgb_uint8(upsample_digits(digits.images[novel_index], image_size, max_shift,
                                                                       novel_rng)),
                          np.asarray(digits.target[novel_index], dtype=np.int64))

    rng = context.rng("data", target)
    if target == "texture":
        count = per_class if per_class is not None else 90  # about half a digit class, like the digit targets
        grey, labels = texture_classes(count, image_size, shift, rng)
    else:
        if per_class is not None:
            if per_class > min(h.size for h in halves):
                raise ValueError(f"per_class={per_class}: a split holds only {min(h.size for h in halves)} images of a class")
            halves = [np.sort(rng.choice(h, size=per_class, replace=False)) for h in halves]
        index = np.concatenate(halves)
        strokes = upsample_digits(digits.images[index], image_size, max_shift, rng)
        grey, labels = style_images(strokes, target, shift, rng), digits.target[index]
    target_domain = Domain(target, to_rgb_uint8(grey), np.asarray(labels, dtype=np.int64))
    _check_pool(target_domain.labels, ways, max(SHOTS), queries, f"the {target!r} target's {context.split} split")
    _check_pool(source_heldout.labels, ways, SOURCE_SHOTS, queries, "the held-out source images")
    _check_pool(source_novel.labels, ways, SOURCE_SHOTS, queries, "the novel source classes")
    return CdfslData(source_train, source_heldout, target_domain, source_key, ways, queries, episodes, epochs, batch_size,
                     source_novel)


def rotated_classes(images: np.ndarray, labels: np.ndarray, rotations: int) -> tuple[np.ndarray, np.ndarray]:
    """``images`` (N, C, H, W) under 0, 1, …, ``rotations`` − 1 quarter turns, turn k labelled ``label + 10·k``."""
    labels = np.asarray(labels, dtype=np.int64)
    if rotations == 1:
        return images, labels.copy()
    turned = [np.rot90(images, k, axes=(2, 3)) for k in range(rotations)]
    return (np.ascontiguousarray(np.concatenate(turned)),
            np.concatenate([labels + 10 * k for k in range(rotations)]))


def _check_pool(labels: np.ndarray, ways: int, shots: int, queries: int, what: str) -> None:
    """Raise before any training when ``labels`` cannot give the episodes (a parameter error: generated data)."""
    classes, counts = np.unique(labels, return_counts=True)
    if classes.size < ways or counts.min() < shots + queries:
        raise ValueError(f"{what}: {classes.size} classes, the smallest with {counts.min()} images; {ways}-way "
                         f"{shots}-shot {queries}-query episodes need {ways} classes of {shots + queries}: "
                         "raise per_class (or heldout_fraction) or lower ways or queries")


def _domain_folder(base: Path, name: str, prefer: str | None = None) -> Path:
    """``base/name``, descending into a ``prefer`` sub-folder or a lone wrapping folder (e.g. EuroSAT/2750)."""
    folder = base / name
    if not folder.is_dir():
        raise DataUnavailable(f"cdfsl-imagefolder: no folder {folder} (expected {name}/ with one sub-folder of images "
                              f"per class under the data directory)")
    if prefer and (folder / prefer).is_dir():
        folder = folder / prefer
    while True:
        subs = [p for p in folder.iterdir() if p.is_dir()]
        has_images = any(p.is_file() and p.suffix.lower() in IMAGE_SUFFIXES for p in folder.iterdir())
        if len(subs) == 1 and not has_images and class_folders(subs[0]):
            folder = subs[0]
        else:
            return folder


def cdfsl_imagefolder(
    context: Context,
    *,
    target: str = "EuroSAT",
    source: str = "miniImageNet",
    root: str | None = None,
    image_size: int = 224,
    source_per_class: int | None = 100,
    target_per_class: int | None = 100,
    heldout_fraction: float = 0.2,
    novel_per_class: int | None = 100,
    ways: int = WAYS,
    queries: int = 15,
    episodes: int = 600,
    epochs: int = 50,
    batch_size: int = 16,
) -> CdfslData:
    """The BSCD-FSL benchmark from image folders under ``--data-dir`` (or ``root``).

    Layout: ``DATA_DIR/miniImageNet/`` (a ``train/`` sub-folder is used when present) and
    ``DATA_DIR/<target>/`` for CropDisease, EuroSAT, ISIC and ChestX, each holding one
    sub-folder of images per class (a lone wrapping folder such as EuroSAT's ``2750/`` is
    descended into; ISIC and ChestX, which ship as CSV labels, must be arranged this way).
    Images are read with Pillow, the shorter side resized to ``image_size`` and centre-
    cropped. ``source_per_class`` / ``target_per_class`` cap the images kept per class
    (None: all), drawn at random; the source's held-out images (``heldout_fraction`` of
    each class) give ``source_seen_accuracy``, and the source's novel classes,
    ``DATA_DIR/<source>/test/`` (miniImageNet's 20 test classes, never trained on;
    ``novel_per_class`` images of each, None: all) give ``source_accuracy``; validation and
    test use disjoint halves of each target class. Missing folders skip the dataset with
    one line.

    Before any image is read for training, the folders are checked, and a
    :class:`~harness.tasks.base.DataError` names what is wrong: fewer than ``ways`` class
    folders; a class with too few images for the episodes (counted in the folder, before
    any halving or cap); a file that does not decode (every image of both folders is
    decoded once per worker process, whichever a seed draws).
    """
    _check_budget(ways, queries, episodes, epochs, batch_size)
    _check_fraction(heldout_fraction)
    base = Path(root) if root else (Path(context.data_dir) if context.data_dir else None)
    if base is None:
        raise DataUnavailable("cdfsl-imagefolder needs real data: pass --data-dir DIR (or set HARNESS_DATA_DIR) "
                              f"holding {source}/ and {target}/ image folders")
    source_context = _source_context(context)
    threads = max(1, int(context.threads))
    source_folder = _domain_folder(base, source, prefer="train")
    target_folder = _domain_folder(base, target)
    source_classes = class_folders(source_folder)
    target_classes = class_folders(target_folder)
    _check_source_classes(source_classes, source_folder, ways, queries, source_per_class, heldout_fraction)
    _check_target_classes(target_classes, target_folder, ways, queries, target_per_class)
    for folder, classes in ((source_folder, source_classes), (target_folder, target_classes)):
        check_images([(path,) for _, files in classes for path in files], folder, "cdfsl-imagefolder", threads)
    novel_folder = base / source / "test"
    if not novel_folder.is_dir() or novel_folder == source_folder:
        raise DataError(f"cdfsl-imagefolder: no folder {novel_folder}: source_accuracy is measured on source classes "
                        f"never trained on; put the source's test classes there (one sub-folder of images per class), "
                        f"the training classes under {base / source / 'train'}")
    novel_classes = class_folders(novel_folder)
    _check_classes(novel_classes, novel_folder, ways, SOURCE_SHOTS + queries,
                   f"source_accuracy's {ways}-way {SOURCE_SHOTS}-shot {queries}-query episodes on novel source classes")
    check_images([(path,) for _, files in novel_classes for path in files], novel_folder, "cdfsl-imagefolder", threads)
    source_key = ("cdfsl-imagefolder", context.seed, str(source_folder.resolve()), image_size, source_per_class,
                  heldout_fraction)

    def build_source():
        rng = source_context.rng("data", "imagefolder")
        files, labels = _pick_files(source_classes, source_per_class, rng)
        train, heldout = _split_heldout(labels, heldout_fraction, rng)
        images = read_images(files, image_size, threads)
        return (Domain(source, images[train], labels[train]), Domain(f"{source}-heldout", images[heldout], labels[heldout]))

    source_train, source_heldout = _SOURCES.get_or_build(source_key, build_source)
    partition = source_context.rng("partition", "imagefolder", target)
    halves = [(name, [files[i] for i in _half_for_split(np.arange(len(files)), context.split, partition)])
              for name, files in target_classes]
    files, labels = _pick_files(halves, target_per_class, context.rng("data", target))
    target_domain = Domain(target, read_images(files, image_size, threads), labels)
    novel_files, novel_labels = _pick_files(novel_classes, novel_per_class,
                                            replace(source_context, split=context.split).rng("data", "novel-source"))
    source_novel = Domain(f"{source}-novel", read_images(novel_files, image_size, threads), novel_labels)
    return CdfslData(source_train, source_heldout, target_domain, source_key, ways, queries, episodes, epochs, batch_size,
                     source_novel)


def _check_classes(classes: list[tuple[str, list[Path]]], folder: Path, ways: int, minimum: int, why: str) -> None:
    """Raise :class:`DataError` when ``folder`` has fewer than ``ways`` classes or a class below ``minimum`` images."""
    if len(classes) < ways:
        found = ", ".join(repr(name) for name, _ in classes[:8]) + (", ..." if len(classes) > 8 else "")
        raise DataError(f"cdfsl-imagefolder: {folder} holds {len(classes)} class folder(s) with images"
                        f"{f' ({found})' if classes else ''}; {ways}-way episodes need at least {ways} (one sub-folder "
                        "of images per class)")
    check_class_sizes([(name, len(files)) for name, files in classes], folder, minimum, "cdfsl-imagefolder", why)


def _check_source_classes(classes, folder: Path, ways: int, queries: int, per_class: int | None,
                          fraction: float) -> None:
    """Enough source classes, and enough images per class for the held-out source episodes."""
    need = SOURCE_SHOTS + queries
    minimum = need
    while _heldout_count(minimum, fraction) < need:
        minimum += 1
    why = (f"source_accuracy's {ways}-way {SOURCE_SHOTS}-shot {queries}-query episodes on the {100 * fraction:g}% of "
           "each class held out from training")
    if per_class is not None and per_class < minimum:
        raise ValueError(f"source_per_class={per_class} keeps too few images: {why} need {minimum} per class")
    _check_classes(classes, folder, ways, minimum, why)


def _check_target_classes(classes, folder: Path, ways: int, queries: int, per_class: int | None) -> None:
    """Enough target classes, and enough images per class for the episodes of both halves (val and test)."""
    need = max(SHOTS) + queries
    why = (f"{ways}-way {max(SHOTS)}-shot {queries}-query episodes on half of each class for validation and the "
           "other half for test")
    if per_class is not None and per_class < need:
        raise ValueError(f"target_per_class={per_class} keeps too few images: {max(SHOTS)}-shot {queries}-query "
                         f"episodes need {need} per class")
    _check_classes(classes, folder, ways, 2 * need, why)


def _pick_files(classes: list[tuple[str, list[Path]]], per_class: int | None,
                rng: np.random.Generator) -> tuple[list[Path], np.ndarray]:
    files, labels = [], []
    for label, (_, members) in enumerate(classes):
        if per_class is not None and len(members) > per_class:
            members = [members[i] for i in np.sort(rng.choice(len(members), size=per_class, replace=False))]
        files.extend(members)
        labels.extend([label] * len(members))
    return files, np.asarray(labels, dtype=np.int64)


# --------------------------------------------------------------------------- scoring


def _l2_normalise(x: np.ndarray) -> np.ndarray:
    return x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), 1e-12)


GRAM_POOL_LIMIT = 4096  # pools up to this size are scored from their Gram matrix (at most 128 MiB)


def protonet_accuracy(features: np.ndarray, episodes: Episodes, chunk_elements: int = 2**24,
                      gram: bool | None = None) -> np.ndarray:
    """Accuracy (%) of every episode, scored with support-mean-centred prototypes (episodes batched).

    features: (N, D), one row per image of the pool the episodes index. Per episode:
    L2-normalise, subtract the mean of the support features from support and queries,
    L2-normalise again, prototypes = class means of the support, score = −squared distance.
    Episodes are scored in chunks of about ``chunk_elements`` gathered values, so 4000
    episodes stay within a few hundred MB.

    Every quantity above is a function of the inner products between the episode's images,
    so a pool of at most ``GRAM_POOL_LIMIT`` images is scored from its Gram matrix, computed
    once (``gram`` None: by that rule; True / False forces a path): the cost per episode no
    longer grows with D. Raw pixels (D = 3072) took 10 s a cell by gathering the features of
    every episode, a tenth of that from the Gram matrix.
    """
    f = _l2_normalise(np.asarray(features, dtype=np.float64))
    _, ways, shots = episodes.support.shape
    points = ways * (shots + episodes.query.shape[2])
    if gram if gram is not None else f.shape[0] <= GRAM_POOL_LIMIT:
        inner = f @ f.T
        step = max(1, chunk_elements // (points * ways * shots))
        score = lambda support, query: _protonet_chunk_gram(inner, support, query)  # noqa: E731
    else:
        step = max(1, chunk_elements // (points * f.shape[1]))
        score = lambda support, query: _protonet_chunk(f, support, query)  # noqa: E731
    return np.concatenate([
        score(episodes.support[start:start + step], episodes.query[start:start + step])
        for start in range(0, episodes.count, step)
    ])


def _protonet_chunk(f: np.ndarray, support_index: np.ndarray, query_index: np.ndarray) -> np.ndarray:
    support = f[support_index]  # (E, N, K, D)
    query = f[query_index]  # (E, N, Q, D)
    centre = support.mean(axis=(1, 2), keepdims=True)
    support = _l2_normalise(support - centre)
    query = _l2_normalise(query - centre)
    prototypes = support.mean(axis=2)  # (E, N, D)
    distance = (
        (query**2).sum(-1)[..., None]
        - 2.0 * np.einsum("enqd,emd->enqm", query, prototypes)
        + (prototypes**2).sum(-1)[:, None, None, :]
    )  # (E, N, Q, N): query of way n against prototype m
    predicted = np.argmax(-distance, axis=-1)
    correct = predicted == np.arange(predicted.shape[1])[None, :, None]
    return 100.0 * correct.mean(axis=(1, 2))


def _protonet_chunk_gram(inner: np.ndarray, support_index: np.ndarray, query_index: np.ndarray) -> np.ndarray:
    """:func:`_protonet_chunk` from the pool's Gram matrix ``inner`` (of the L2-normalised features).

    With c the support mean, (x − c)·(y − c) = x·y − x·c − y·c + c·c, where x·c and c·c are
    means of Gram entries over the support; the norms after centring, the prototypes'
    products with the queries and their own norms follow from those centred products.
    """
    e, ways, shots = support_index.shape
    queries = query_index.shape[2]
    support = support_index.reshape(e, ways * shots)
    query = query_index.reshape(e, ways * queries)
    ss = inner[support[:, :, None], support[:, None, :]]  # (E, NK, NK)
    qs = inner[query[:, :, None], support[:, None, :]]  # (E, NQ, NK)
    s_dot_c, q_dot_c = ss.mean(axis=2), qs.mean(axis=2)
    c_dot_c = s_dot_c.mean(axis=1)
    diagonal = np.diagonal(inner)
    ss = ss - s_dot_c[:, :, None] - s_dot_c[:, None, :] + c_dot_c[:, None, None]
    qs = qs - q_dot_c[:, :, None] - s_dot_c[:, None, :] + c_dot_c[:, None, None]
    s_norm = np.maximum(np.sqrt(np.maximum(np.diagonal(ss, axis1=1, axis2=2), 0.0)), 1e-12)  # (E, NK)
    q_sq = np.maximum(diagonal[query] - 2.0 * q_dot_c + c_dot_c[:, None], 0.0)
    q_norm = np.maximum(np.sqrt(q_sq), 1e-12)  # (E, NQ)
    ss = ss / (s_norm[:, :, None] * s_norm[:, None, :])
    qs = qs / (q_norm[:, :, None] * s_norm[:, None, :])
    # prototype m is the mean of its K normalised shots: block means of the normalised products
    query_dot_prototype = qs.reshape(e, ways * queries, ways, shots).mean(axis=3)  # (E, NQ, N)
    prototype_sq = np.einsum("emkmj->em", ss.reshape(e, ways, shots, ways, shots)) / shots**2  # (E, N)
    query_sq = q_sq / q_norm**2
    distance = query_sq[:, :, None] - 2.0 * query_dot_prototype + prototype_sq[:, None, :]
    predicted = np.argmax(-distance, axis=-1).reshape(e, ways, queries)
    correct = predicted == np.arange(ways)[None, :, None]
    return 100.0 * correct.mean(axis=(1, 2))


def ci95(accuracies: np.ndarray) -> float:
    """Half-width of the paper's 95% interval over episodes, 1.96·std/√E."""
    return float(1.96 * np.std(accuracies) / np.sqrt(len(accuracies)))


# --------------------------------------------------------------------------- the task


class FewShotLearner(Protocol):
    """What a method of ``fewshot.cdfsl`` implements.

    What :meth:`fit_source` learns is kept in public attributes ending in ``_`` (scikit-
    learn's convention): the task caches them and sets them on later instances with the
    same source parameters, which then skip :meth:`fit_source`; nothing may write to them
    after it. ``after_source_params`` (optional) names constructor parameters that act
    only after source training (a test-time probe), so tuning them never retrains.
    """

    def fit_source(self, source: SourceSet, context: Context) -> float | None:
        """Train on the labelled source domain: ``source.images`` uint8 (N, 3, H, W), ``source.labels``.

        ``source.epochs`` and ``source.batch_size`` are the task's budget, the same for every
        method. ``context`` is the source side's: it carries the device, precision and
        thread count, and ``context.rng("method", ...)`` is the method's only source of
        randomness (the same for every target and split). Returns ``None``, or the original
        seconds of any part of the training it reused from a cache of its own (the task
        adds them to ``train_s``).
        """
        ...

    def embed(self, images: np.ndarray) -> np.ndarray:
        """Frozen (N, D) features of uint8 images (N, 3, H, W); the task scores episodes on them."""
        ...


# the last two source trainings of this worker: cells run seed → method → target, so every
# target of a method finds its training here
_SOURCE_TRAINING = SourceTraining(2)


def write_tiny_image_folders(root: Path) -> Path:
    """A miniature BSCD-FSL layout under ``root``: miniImageNet (train/ and test/ classes) and EuroSAT, 16-px gratings."""
    rng = np.random.default_rng(0)
    for domain, count, first in (("miniImageNet/train", 16, 0), ("miniImageNet/test", 8, 5), ("EuroSAT", 20, 0)):
        by_class = {}
        for c in range(first, first + 5):
            grey = gratings(16, np.full(count, c * np.pi / 5), rng.uniform(2, 6, count), rng.uniform(0, 6.28, count))
            tint = rng.uniform(0.3, 1.0, (count, 3, 1, 1))
            by_class[f"class{c}"] = to_rgb_uint8(grey[:, None] * tint)
        write_image_folder(Path(root) / domain, by_class)
    return Path(root)


class CrossDomainFewShotTask(Task):
    """Source pre-training, then 5-way 1-/5-shot ProtoNet episodes on one target domain."""

    name = "fewshot.cdfsl"
    version = "2"  # 2 (issue 9): source_accuracy on novel source classes (the old one: source_seen_accuracy); cka renamed covariance_alignment
    framework = "torch"
    metrics = ("accuracy_1shot", "accuracy_1shot_ci95", "accuracy_5shot", "accuracy_5shot_ci95", "source_accuracy",
               "source_seen_accuracy", "source_target_gap", "covariance_alignment", "train_s", "runtime_s")
    protocol = FewShotLearner

    def tiny(self, workdir: Path) -> dict[str, dict[str, Any]]:
        """Small configurations for the conformance test; the image-folder one reads a miniature in ``workdir``."""
        small = {"image_size": 16, "per_class": 40, "queries": 3, "episodes": 4, "epochs": 1, "batch_size": 64}
        return {
            "cdfsl-digits": {**small, "target": "grating"},
            "cdfsl-imagefolder": {"root": str(write_tiny_image_folders(Path(workdir) / "bscd-fsl")), "image_size": 16, "source_per_class": None,
                                  "target_per_class": None, "heldout_fraction": 0.5, "queries": 3, "episodes": 4,
                                  "epochs": 1, "batch_size": 32},
        }

    def chance(self, dataset: str, params: dict[str, Any]) -> dict[str, float]:
        """Guessing one of the episode's ``ways`` classes: 100/N % on the target's and on the source's episodes."""
        level = 100.0 / params.get("ways", WAYS)
        return {"accuracy_1shot": level, "accuracy_5shot": level, "source_accuracy": level, "source_seen_accuracy": level}

    def evaluate(self, method: FewShotLearner, data: CdfslData, context: Context) -> dict[str, float]:
        who = type(method).__name__
        source = SourceSet(data.source_train.images, data.source_train.labels, data.epochs, data.batch_size)
        train_s = _SOURCE_TRAINING.fit(method, context, (data.source_key, data.epochs, data.batch_size),
                                       lambda: method.fit_source(source, _source_context(context)))

        started = time.perf_counter()
        if data.source_novel is None:
            raise ValueError("CdfslData.source_novel is None: the loader must give novel source classes for source_accuracy")
        target = np.asarray(method.embed(data.target.images))
        source = np.asarray(method.embed(data.source_heldout.images))
        novel = np.asarray(method.embed(data.source_novel.images))
        runtime_s = time.perf_counter() - started
        for name, features, domain in (("target", target, data.target), ("source", source, data.source_heldout),
                                       ("novel source", novel, data.source_novel)):
            if features.ndim != 2 or features.shape[0] != domain.images.shape[0]:
                raise ValueError(f"{who}.embed returned shape {features.shape} for {domain.images.shape[0]} {name} images; "
                                 "expected (N, D)")
            if not np.all(np.isfinite(features)):
                raise ValueError(f"{who}.embed returned non-finite {name} features")

        metrics: dict[str, float] = {}
        for shots in SHOTS:
            episodes = sample_episodes(data.target.labels, ways=data.ways, shots=shots, queries=data.queries,
                                       episodes=data.episodes, rng=context.rng("episodes", "target", f"{shots}-shot"))
            accuracies = protonet_accuracy(target, episodes)
            metrics[f"accuracy_{shots}shot"] = float(accuracies.mean())
            metrics[f"accuracy_{shots}shot_ci95"] = ci95(accuracies)
        # source episodes depend on the seed and split only, so every target's cell reports the same number
        source_rng = replace(context, dataset="cdfsl-source").rng("episodes", "source", f"{SOURCE_SHOTS}-shot")
        source_episodes = sample_episodes(data.source_heldout.labels, ways=data.ways, shots=SOURCE_SHOTS,
                                          queries=data.queries, episodes=data.episodes, rng=source_rng)
        metrics["source_seen_accuracy"] = float(protonet_accuracy(source, source_episodes).mean())
        novel_rng = replace(context, dataset="cdfsl-source").rng("episodes", "novel-source", f"{SOURCE_SHOTS}-shot")
        novel_episodes = sample_episodes(data.source_novel.labels, ways=data.ways, shots=SOURCE_SHOTS,
                                         queries=data.queries, episodes=data.episodes, rng=novel_rng)
        metrics["source_accuracy"] = float(protonet_accuracy(novel, novel_episodes).mean())
        metrics["source_target_gap"] = metrics["source_accuracy"] - metrics[f"accuracy_{SOURCE_SHOTS}shot"]
        metrics["covariance_alignment"] = covariance_alignment(source, target)
        metrics["train_s"] = train_s
        metrics["runtime_s"] = runtime_s
        return metrics


TASK = CrossDomainFewShotTask()
