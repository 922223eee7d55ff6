"""Task ``fewshot.cdfss``: cross-domain few-shot segmentation.

A method is trained on a labelled source domain (images, binary masks of one class per
image, the class ids), then segments query images of novel classes in a shifted target
domain from K annotated support images (1-shot and 5-shot episodes). It may fine-tune
itself on the support set of each episode; it never sees a query mask.

Scores, per target domain (one spec dataset entry per target):

* ``miou_1shot``, ``miou_5shot``: foreground IoU accumulated per class over the episodes
  (intersections and unions summed over every query of that class), then averaged over
  classes, in % — the PATNet/HSNet convention, the same for every method;
* ``miou``: the mean of the two, the number tuning maximises;
* ``covariance_alignment``: ⟨Σ_s, Σ_t⟩_F / (‖Σ_s‖_F ‖Σ_t‖_F) of the method's pooled features
  of n source and n target images (:func:`harness.tasks.fewshot.images.covariance_alignment`,
  as in ``fewshot.cdfsl``): linear CKA with the feature channels as the paired samples, not
  the standard CKA of paired inputs, so it is named for what it measures (up to task
  version 1 it was reported as ``cka``);
* ``train_s``: seconds of source training (recorded on a cache hit too);
* ``runtime_s``: seconds of the target stage (fine-tuning and prediction, both shot settings).

There is no chance level (:meth:`harness.Task.chance`): a trivial mask's foreground IoU
depends on how much of each image the object covers (the all-foreground mask scores the
object's share of the image), so it is a property of the data, not of the protocol.

Source training does not depend on the target, the split or the target-stage
hyper-parameters, so the task trains once per (method's source parameters, seed, source
data, device, precision) in each worker and keeps what the method learned (its public
``_``-suffixed attributes) in a :class:`harness.tasks.base.SourceTraining`.

Loaders: :func:`synthetic_shapes` (no download: shapes on backgrounds, four target styles)
and :func:`cdfss_folder` (the real CD-FSS benchmarks from ``--data-dir``).
"""
from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from harness.tasks.base import Context, DataError, DataUnavailable, SourceTraining, Task
from harness.tasks.fewshot.episodes import sample_episodes
from harness.tasks.fewshot.images import (
    IMAGE_SUFFIXES,
    SIXTEEN_BIT_MODES,
    as_rgb,
    check_class_sizes,
    check_images,
    covariance_alignment,
)

SHOTS = (1, 5)
SOURCE_SHAPES = ("disc", "square", "triangle", "cross", "ring", "ellipse", "star", "bar")
NOVEL_SHAPES = ("hexagon", "l-shape", "blob", "crescent", "half-disc", "t-shape")
TARGET_STYLES = ("fss", "deepglobe", "chestx", "isic")
SOURCE_STREAM = "cdfss-source"  # the dataset id the source domain's randomness is keyed on


# --------------------------------------------------------------------------- data


@dataclass(frozen=True)
class SegmentationSet:
    """Images with one binary mask each, for the class ``labels[i]``.

    ``images`` is uint8 (n, 3, H, W); ``masks`` bool (n, H, W); ``labels`` int (n,) indexing
    ``class_names``.
    """

    images: np.ndarray
    masks: np.ndarray
    labels: np.ndarray
    class_names: tuple[str, ...]

    def __post_init__(self):
        n = self.images.shape[0]
        if self.images.dtype != np.uint8 or self.images.ndim != 4 or self.images.shape[1] != 3:
            raise ValueError(f"images must be uint8 (n, 3, H, W); got {self.images.dtype} {self.images.shape}")
        if self.masks.shape != (n, *self.images.shape[2:]) or self.masks.dtype != bool:
            raise ValueError(f"masks must be bool (n, H, W) = {(n, *self.images.shape[2:])}; got {self.masks.dtype} {self.masks.shape}")
        if self.labels.shape != (n,):
            raise ValueError(f"labels must have shape ({n},); got {self.labels.shape}")


@dataclass(frozen=True)
class CrossDomainSegmentationData:
    """What a loader returns: the source domain, one target domain and the episode settings.

    ``cka_images`` source and as many target images feed the CKA. ``source_key`` names
    everything that determines the source data, for the source-training cache.
    """

    source: SegmentationSet
    target: SegmentationSet
    episodes: int
    queries: int
    cka_images: int
    source_key: str


class FewShotSegmenter(Protocol):
    """What a method of this task implements.

    Images are uint8 arrays (..., 3, H, W), masks bool arrays (..., H, W). ``rng`` (and, in
    :meth:`fit_source`, ``context.rng``) is the method's only source of randomness;
    ``context`` gives ``device`` and ``precision``.

    What :meth:`fit_source` learns is kept in public attributes ending in ``_`` (scikit-
    learn's convention, e.g. ``state_``): the task caches them and sets them on later
    instances with the same source parameters, which then skip :meth:`fit_source`.
    Nothing may write to them afterwards, in place or not: a method that fine-tunes on an
    episode's support tunes copies.
    """

    #: names of constructor parameters that act only after source training (the task's
    #: source-training cache ignores them, so tuning them never retrains the source model)
    after_source_params: tuple[str, ...]

    def fit_source(self, source: SegmentationSet, context: Context) -> float | None:
        """Train on the source domain: ``source.images`` (n, 3, H, W), ``source.masks`` (n, H, W), ``source.labels`` (n,).

        ``context`` is the source side's (split ``train``, the source domain's stream): it
        gives ``device`` and ``precision``, and ``context.rng("method", "source")`` is the
        training's randomness, the same on every split and target. Returns ``None``, or the
        original seconds of any part of the training it reused from a cache of its own
        (the task adds them to ``train_s``).
        """
        ...

    def segment(self, support_images: np.ndarray, support_masks: np.ndarray, query_images: np.ndarray,
                rng: np.random.Generator, context: Context):
        """Segment the queries of E episodes at once.

        ``support_images`` (E, K, 3, H, W), ``support_masks`` (E, K, H, W) and
        ``query_images`` (E, Q, 3, H, W). Returns (E, Q, H, W): mask logits (foreground
        where > 0) or booleans, as a NumPy array or a tensor. Episodes must not influence
        one another: a method that fine-tunes on an episode's support starts every episode
        from its source weights.
        """
        ...

    def embed(self, images: np.ndarray, context: Context) -> np.ndarray:
        """Pooled features (n, d) of the model as it meets the target, before any fine-tuning (for the CKA)."""
        ...


# --------------------------------------------------------------------------- shapes


def _shape_inside(name: str, u: np.ndarray, v: np.ndarray, wobble: np.ndarray) -> np.ndarray:
    """Whether the local coordinates (u, v) (unit scale, shape centred at 0) fall inside ``name``.

    ``wobble`` (..., 4) holds per-object random numbers in [0, 1) for the irregular shapes.
    """
    rho = np.hypot(u, v)
    phi = np.arctan2(v, u)
    if name == "disc":
        return rho <= 0.9
    if name == "square":
        return np.maximum(np.abs(u), np.abs(v)) <= 0.75
    if name == "triangle":
        return (v >= -0.5) & (np.sqrt(3.0) * np.abs(u) + v <= 1.0)
    if name == "cross":
        return ((np.abs(u) <= 0.3) & (np.abs(v) <= 0.95)) | ((np.abs(v) <= 0.3) & (np.abs(u) <= 0.95))
    if name == "ring":
        return (rho >= 0.55) & (rho <= 0.95)
    if name == "ellipse":
        return u**2 + (v / 0.5) ** 2 <= 0.9
    if name == "star":
        return rho <= 0.6 + 0.35 * np.cos(5.0 * phi)
    if name == "bar":
        return (np.abs(u) <= 1.0) & (np.abs(v) <= 0.25)
    if name == "hexagon":
        return np.maximum(np.abs(v), np.abs(u) * np.sqrt(3.0) / 2.0 + np.abs(v) / 2.0) <= 0.8
    if name == "l-shape":
        return ((u >= -0.8) & (u <= -0.3) & (np.abs(v) <= 0.9)) | ((np.abs(u) <= 0.8) & (v >= 0.4) & (v <= 0.9))
    if name == "blob":
        a2, p2, a3, p3 = (wobble[..., i] for i in range(4))
        radius = 0.75 * (1.0 + (0.1 + 0.15 * a2) * np.cos(2.0 * phi + 6.283 * p2) + (0.05 + 0.1 * a3) * np.cos(3.0 * phi + 6.283 * p3))
        return rho <= radius
    if name == "crescent":
        return (rho <= 0.95) & ((u - 0.45) ** 2 + v**2 > 0.7**2)
    if name == "half-disc":
        return (rho <= 0.95) & (v >= -0.15)
    if name == "t-shape":
        return ((np.abs(u) <= 0.9) & (v >= -0.9) & (v <= -0.45)) | ((np.abs(u) <= 0.25) & (v >= -0.9) & (v <= 0.9))
    raise ValueError(f"unknown shape {name!r}")


@dataclass(frozen=True)
class _Layout:
    """Scene geometry of n images with ``slots`` objects each; slot 0 is the labelled object.

    Slot 0 is on top: a distractor keeps only the pixels no earlier slot covers.
    ``present`` marks the slots in use (slot 0 always).
    """

    shapes: np.ndarray  # (n, slots) indices into the class names
    centre: np.ndarray  # (n, slots, 2) in [0, 1], (y, x)
    scale: np.ndarray  # (n, slots) half-size as a fraction of the image side
    angle: np.ndarray  # (n, slots)
    warp: np.ndarray  # (n, slots) amplitude of the boundary warp (irregular lesions)
    wobble: np.ndarray  # (n, slots, 4)
    present: np.ndarray  # (n, slots) bool


def _draw_layout(labels: np.ndarray, n_classes: int, style: str, shift: float, rng: np.random.Generator) -> _Layout:
    """Random geometry: the labelled object of class ``labels[i]`` plus distractors.

    ``chestx`` and ``isic`` scenes hold one large centred object (a lung field, a lesion);
    the others 0–2 smaller distractors of other classes around a mid-sized labelled object.
    """
    n = labels.shape[0]
    slots = 3
    single = style in ("chestx", "isic")
    shapes = np.empty((n, slots), dtype=int)
    shapes[:, 0] = labels
    if n_classes > 1:  # distractors of a different class than the labelled one
        offsets = rng.integers(1, n_classes, size=(n, slots - 1))
        shapes[:, 1:] = (labels[:, None] + offsets) % n_classes
    else:
        shapes[:, 1:] = labels[:, None]
    scale = np.empty((n, slots))
    if single:
        scale[:, 0] = rng.uniform(0.30, 0.40, n)
        centre0 = 0.5 + rng.uniform(-0.08, 0.08, (n, 2))
    else:
        scale[:, 0] = rng.uniform(0.20, 0.30, n)
        centre0 = rng.uniform(0.25, 0.75, (n, 2))
    scale[:, 1:] = rng.uniform(0.12, 0.20, (n, slots - 1))
    centre = rng.uniform(0.12, 0.88, (n, slots, 2))
    centre[:, 0] = centre0
    present = np.zeros((n, slots), dtype=bool)
    present[:, 0] = True
    if n_classes > 1 and not single:
        count = rng.integers(0, slots, n)  # 0, 1 or 2 distractors
        present[:, 1:] = np.arange(1, slots)[None, :] <= count[:, None]
    angle = rng.uniform(0.0, 2.0 * np.pi, (n, slots))
    warp = np.zeros((n, slots))
    if style == "isic":
        warp[:, 0] = 0.18 * shift  # ragged lesion borders
    wobble = rng.random((n, slots, 4))
    return _Layout(shapes, centre, scale, angle, warp, wobble, present)


def _rasterise(layout: _Layout, class_names: tuple[str, ...], size: int) -> np.ndarray:
    """(n, slots, size, size) bool: each object's own pixels, before occlusion."""
    n, slots = layout.shapes.shape
    grid = (np.arange(size) + 0.5) / size
    y, x = grid[:, None], grid[None, :]
    out = np.zeros((n, slots, size, size), dtype=bool)
    for slot in range(slots):
        dy = (y[None] - layout.centre[:, slot, 0, None, None]) / layout.scale[:, slot, None, None]
        dx = (x[None] - layout.centre[:, slot, 1, None, None]) / layout.scale[:, slot, None, None]
        cos, sin = np.cos(layout.angle[:, slot])[:, None, None], np.sin(layout.angle[:, slot])[:, None, None]
        u, v = cos * dx + sin * dy, -sin * dx + cos * dy
        phase = 6.283 * layout.wobble[:, slot, 0, None, None]
        amp = layout.warp[:, slot, None, None]
        u, v = u + amp * np.sin(3.0 * v + phase), v + amp * np.sin(3.0 * u - phase)
        wobble = np.broadcast_to(layout.wobble[:, slot, None, None, :], (n, size, size, 4))
        for index, name in enumerate(class_names):
            rows = np.flatnonzero((layout.shapes[:, slot] == index) & layout.present[:, slot])
            if rows.size:
                out[rows, slot] = _shape_inside(name, u[rows], v[rows], wobble[rows])
    return out


def _smooth_noise(shape: tuple[int, ...], sigma: np.ndarray | float, rng: np.random.Generator) -> np.ndarray:
    """White noise blurred over the last two axes, rescaled per image to [0, 1]."""
    from scipy.ndimage import gaussian_filter

    noise = rng.standard_normal(shape)
    sigmas = np.broadcast_to(np.asarray(sigma, dtype=float), shape[:1])
    out = np.stack([gaussian_filter(noise[i], sigma=(0,) * (noise.ndim - 3) + (s, s)) for i, s in enumerate(sigmas)])
    low = out.min(axis=(-2, -1), keepdims=True)
    high = out.max(axis=(-2, -1), keepdims=True)
    return (out - low) / np.maximum(high - low, 1e-8)


def _contrasting(colour: np.ndarray, against: np.ndarray, minimum: float = 0.3) -> np.ndarray:
    """``colour`` where it differs from ``against`` by ``minimum`` (mean absolute), else its complement."""
    close = np.abs(colour - against).mean(axis=-1, keepdims=True) < minimum
    return np.where(close, 1.0 - colour, colour)


def class_appearance(n_classes: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """What the objects of each class look like in each style, drawn once per domain.

    A class is a shape *and* an appearance, as in the real benchmarks (an FSS-1000 class
    or a Deepglobe land cover looks alike across its images), so that a support's
    appearance says something about its query: ``colour`` (source/fss), ``palette`` and
    ``grain`` of a noise texture (deepglobe), a signed grey ``contrast`` (chestx), a dark
    ``lesion`` colour (isic). Every image jitters its objects' appearance a little.
    """
    return {
        "colour": rng.uniform(0.1, 0.9, (n_classes, 3)),
        "palette": rng.uniform(0.1, 0.9, (n_classes, 2, 3)),
        "grain": rng.uniform(0.6, 2.0, n_classes),
        "contrast": rng.uniform(0.07, 0.14, n_classes) * rng.choice([-1.0, 1.0], n_classes),
        "lesion": np.array([0.36, 0.22, 0.16]) + rng.uniform(-0.1, 0.1, (n_classes, 3)),
    }


def _paint(style: str, objects: np.ndarray, shapes: np.ndarray, appearance: dict[str, np.ndarray],
           rng: np.random.Generator) -> np.ndarray:
    """Float images (n, 3, H, W) in [0, 1] for the objects' pixels, in one style.

    ``objects`` is (n, slots, H, W) after occlusion (each pixel belongs to at most one
    slot), ``shapes`` (n, slots) the class of each slot; slot 0 is the labelled object.
    """
    from scipy.ndimage import gaussian_filter

    n, slots, size, _ = objects.shape
    grid = (np.arange(size) + 0.5) / size
    if style in ("source", "fss"):
        # smooth two-colour gradient in a random direction, flat class-coloured objects, light noise
        colours = np.clip(appearance["colour"][shapes] + rng.uniform(-0.06, 0.06, (n, slots, 3)), 0.0, 1.0)
        direction = rng.uniform(0.0, 2.0 * np.pi, n)
        ramp = (np.cos(direction)[:, None, None] * grid[None, :, None] + np.sin(direction)[:, None, None] * grid[None, None, :])
        ramp = (ramp - ramp.min(axis=(1, 2), keepdims=True)) / np.maximum(np.ptp(ramp, axis=(1, 2), keepdims=True), 1e-8)
        c1 = _contrasting(rng.random((n, 3)), colours[:, 0])
        c2 = _contrasting(rng.random((n, 3)), colours[:, 0])
        image = c1[:, :, None, None] + (c2 - c1)[:, :, None, None] * ramp[:, None]
        for slot in range(slots):
            image = np.where(objects[:, slot, None], colours[:, slot, :, None, None], image)
        return image + 0.03 * rng.standard_normal(image.shape)
    if style == "deepglobe":
        # satellite-like: every region a coloured noise texture; a class has its own grain and palette
        palette = np.clip(appearance["palette"][shapes] + rng.uniform(-0.05, 0.05, (n, slots, 2, 3)), 0.0, 1.0)
        grain = appearance["grain"][shapes]
        ground = rng.uniform(0.1, 0.9, (n, 2, 3))
        close = np.abs(ground.mean(axis=1) - palette[:, 0].mean(axis=1)).mean(axis=-1) < 0.2
        ground[close] = 1.0 - ground[close]  # the background is another land cover than the labelled one
        image = np.zeros((n, 3, size, size))
        covered = objects.any(axis=1)
        for region in range(slots + 1):
            if region == slots:
                texture = _smooth_noise((n, size, size), rng.uniform(0.6, 2.0, n), rng)
                low, high, where = ground[:, 0], ground[:, 1], ~covered
            else:
                texture = _smooth_noise((n, size, size), grain[:, region], rng)
                low, high, where = palette[:, region, 0], palette[:, region, 1], objects[:, region]
            paint = low[:, :, None, None] + (high - low)[:, :, None, None] * texture[:, None]
            image = np.where(where[:, None], paint, image)
        return image + 0.03 * rng.standard_normal(image.shape)
    if style == "chestx":
        # grey, blurred, low contrast: a large soft field a little brighter or darker than its surround
        base = rng.uniform(0.35, 0.65, n)[:, None, None]
        vignette = 0.15 * (np.hypot(grid[:, None] - 0.5, grid[None, :] - 0.5) / 0.7)[None]
        shading = 0.15 * (_smooth_noise((n, size, size), size / 8.0, rng) - 0.5)
        contrast = (appearance["contrast"][shapes[:, 0]] + rng.uniform(-0.02, 0.02, n))[:, None, None]
        grey = base - vignette + shading + contrast * objects.any(axis=1)
        grey = np.stack([gaussian_filter(g, sigma=size / 24.0) for g in grey])
        grey = grey + 0.04 * rng.standard_normal(grey.shape)
        return np.repeat(grey[:, None], 3, axis=1)
    if style == "isic":
        # dermoscopy-like: skin-tone background, a dark mottled irregular lesion with a soft rim
        skin = np.array([0.86, 0.66, 0.56]) + rng.uniform(-0.08, 0.08, (n, 3))
        lesion = appearance["lesion"][shapes[:, 0]] + rng.uniform(-0.04, 0.04, (n, 3))
        shading = 0.08 * (_smooth_noise((n, size, size), size / 6.0, rng) - 0.5)
        mottle = 0.12 * (_smooth_noise((n, size, size), 1.2, rng) - 0.5)
        inside = np.stack([gaussian_filter(o.astype(float), sigma=0.8) for o in objects.any(axis=1)])
        image = skin[:, :, None, None] + (lesion - skin)[:, :, None, None] * inside[:, None]
        image = image + (shading + mottle * inside)[:, None]
        return image + 0.02 * rng.standard_normal(image.shape)
    raise ValueError(f"unknown style {style!r}")


def render_shapes(labels: np.ndarray, class_names: tuple[str, ...], style: str, size: int, shift: float,
                  appearance: dict[str, np.ndarray], rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Render one image per label: uint8 (n, 3, size, size) and bool masks (n, size, size).

    The image is ``(1 - shift) · source style + shift · style`` on the same geometry, so
    ``shift = 0`` gives the source style with the target's shapes. ``appearance`` comes
    from :func:`class_appearance`.
    """
    labels = np.asarray(labels, dtype=int)
    layout = _draw_layout(labels, len(class_names), style, shift, rng)
    raw = _rasterise(layout, class_names, size)
    visible = np.zeros_like(raw)
    taken = np.zeros(raw.shape[:1] + raw.shape[2:], dtype=bool)
    for slot in range(raw.shape[1]):  # slot 0 on top, then the distractors behind it
        visible[:, slot] = raw[:, slot] & ~taken
        taken |= raw[:, slot]
    image = _paint("source", visible, layout.shapes, appearance, rng)
    if style not in ("source", "fss") and shift > 0:
        image = (1.0 - shift) * image + shift * _paint(style, visible, layout.shapes, appearance, rng)
    image = np.clip(np.rint(image * 255.0), 0, 255).astype(np.uint8)
    return image, visible[:, 0]


def _balanced_labels(n_classes: int, per_class: int, rng: np.random.Generator) -> np.ndarray:
    return rng.permutation(np.repeat(np.arange(n_classes), per_class))


def synthetic_shapes(
    context: Context,
    *,
    target: str = "fss",
    image_size: int = 32,
    source_classes: int = 8,
    source_per_class: int = 250,
    target_classes: int = 6,
    target_per_class: int = 40,
    shift: float = 1.0,
    episodes: int = 100,
    val_episodes: int | None = None,
    queries: int = 1,
    cka_images: int = 128,
) -> CrossDomainSegmentationData:
    """Shapes on backgrounds: a source domain and one target domain (no download).

    Source: ``source_classes`` of disc, square, triangle, cross, ring, ellipse, star, bar on
    smooth two-colour gradients, flat-coloured, 0–2 distractor shapes per image; the mask
    is the labelled shape's visible pixels. Target: ``target_classes`` novel shapes
    (hexagon, L, blob, crescent, half-disc, T) in the style ``target``:

    * ``fss``: the source style (an FSS-1000-like near target: only the classes change);
    * ``deepglobe``: every region a coloured noise texture of its own grain and palette;
    * ``chestx``: grey, blurred, low contrast, one large centred shape;
    * ``isic``: skin-tone background, one dark mottled shape with a ragged border.

    ``shift`` ∈ [0, 1] blends the target style over the source style (1: the full style;
    nothing to blend for ``fss``). Sizes: ``source_per_class`` and ``target_per_class``
    images per class at ``image_size``²; ``episodes`` per shot setting (1 and 5), each
    with ``queries`` query images; ``cka_images`` source and target images for the CKA.
    A class is a shape and an appearance (:func:`class_appearance`), drawn per domain.
    The source domain depends only on the seed and its own parameters (never the split or
    target), so every target entry trains on the same source; the target images (and the
    target classes' appearance) come from the split's own stream, so validation and test
    never share an image. ``val_episodes`` (default: ``episodes``) sets the episodes per
    shot setting on the validation split, which only tuning reads.
    """
    if target not in TARGET_STYLES:
        raise ValueError(f"target={target!r}; expected one of {TARGET_STYLES}")
    if not 2 <= source_classes <= len(SOURCE_SHAPES) or not 1 <= target_classes <= len(NOVEL_SHAPES):
        raise ValueError(f"source_classes must lie in [2, {len(SOURCE_SHAPES)}] and target_classes in [1, {len(NOVEL_SHAPES)}]")
    if not 0.0 <= shift <= 1.0:
        raise ValueError(f"shift={shift} must lie in [0, 1]")
    if image_size < 16 or image_size % 8:
        raise ValueError(f"image_size={image_size}: need a multiple of 8, at least 16 (the backbone halves it three times)")
    if target_per_class < max(SHOTS) + queries:
        raise ValueError(f"target_per_class={target_per_class} is below the {max(SHOTS)} shots + {queries} queries of an episode")
    if episodes < 1 or queries < 1 or cka_images < 2 or source_per_class < 2:
        raise ValueError("episodes and queries must be ≥ 1, cka_images and source_per_class ≥ 2")
    source_names = SOURCE_SHAPES[:source_classes]
    target_names = NOVEL_SHAPES[:target_classes]

    source_rng = dataclasses.replace(context, split="train", dataset=SOURCE_STREAM).rng("data")
    source_labels = _balanced_labels(source_classes, source_per_class, source_rng)
    source_look = class_appearance(source_classes, source_rng)
    images, masks = render_shapes(source_labels, source_names, "source", image_size, 0.0, source_look, source_rng)
    source = SegmentationSet(images, masks, source_labels, source_names)

    rng = context.rng("data")
    target_labels = _balanced_labels(target_classes, target_per_class, rng)
    target_look = class_appearance(target_classes, rng)
    images, masks = render_shapes(target_labels, target_names, target, image_size, shift, target_look, rng)
    target_set = SegmentationSet(images, masks, target_labels, target_names)

    n_episodes = episodes if context.split != "val" or val_episodes is None else val_episodes
    source_key = f"synthetic-shapes/{image_size}/{source_classes}/{source_per_class}/seed{context.seed}"
    return CrossDomainSegmentationData(source, target_set, int(n_episodes), int(queries), int(cka_images), source_key)


# --------------------------------------------------------------------------- real data

MASK_SUFFIX = "_mask.png"


def _pairs_in(folder: Path) -> tuple[list[tuple[Path, Path]], list[Path]]:
    """(image, mask) pairs of one class folder, sorted by name, and the image files left without a partner.

    A mask is ``<stem>_mask.png``, or ``<stem>.png`` beside a ``<stem>.jpg``/``.jpeg``
    (FSS-1000's own layout). Every other image file with a mask is an image.
    """
    files = {p.name: p for p in folder.iterdir() if p.is_file() and p.suffix.lower() in IMAGE_SUFFIXES}
    pairs = []
    for name, path in sorted(files.items()):
        stem, suffix = path.stem, path.suffix.lower()
        if name.endswith(MASK_SUFFIX):
            continue
        mask = files.get(stem + MASK_SUFFIX)
        if mask is None and suffix in (".jpg", ".jpeg"):
            mask = files.get(f"{stem}.png")
        if mask is not None:
            pairs.append((path, mask))
    paired = {path for pair in pairs for path in pair}
    return pairs, [path for _, path in sorted(files.items()) if path not in paired]


def _domain_pairs(root: Path, domain: str) -> tuple[Path, list[tuple[str, list[tuple[Path, Path]]]]]:
    """``root/domain`` and its classes, each with its (image, mask) pairs; every image file must pair."""
    folder = root / domain
    if not folder.is_dir():
        raise DataUnavailable(f"cdfss-folder: no folder {folder} (expected {domain}/<class>/<name>.jpg "
                              f"with its mask <name>.png beside it)")
    classes, unpaired = [], []
    for class_dir in sorted(p for p in folder.iterdir() if p.is_dir()):
        pairs, alone = _pairs_in(class_dir)
        unpaired.extend(alone)
        if pairs:
            classes.append((class_dir.name, pairs))
    if unpaired:
        shown = ", ".join(str(p.relative_to(folder)) for p in unpaired[:5]) + (", ..." if len(unpaired) > 5 else "")
        raise DataError(f"cdfss-folder: {len(unpaired)} image file(s) under {folder} have no partner: {shown}; "
                        "each image <name>.jpg needs its mask <name>.png beside it, or an image <name>.png its "
                        "mask <name>_mask.png")
    if not classes:
        raise DataError(f"cdfss-folder: {folder} holds no class folder with (image, mask) pairs (expected "
                        f"{domain}/<class>/<name>.jpg with its mask <name>.png beside it)")
    return folder, classes


def read_mask(path: Path, image_size: int) -> np.ndarray:
    """The binary mask in ``path`` at image_size², resized nearest on its own values.

    16-bit masks keep their values (Pillow's conversion to 8 bits would clip them). 0/255
    masks (the benchmarks') are cut at 128 as PATNet does; 0/1 masks at 0.
    """
    from PIL import Image

    with Image.open(path) as im:
        im = im.convert("I") if im.mode in SIXTEEN_BIT_MODES else im.convert("L")
        values = np.asarray(im.resize((image_size, image_size), Image.NEAREST))
    return values >= 128 if values.max() > 1 else values > 0


def _read_pairs(classes: list[tuple[str, list[tuple[Path, Path]]]], image_size: int, max_per_class: int | None,
                rng: np.random.Generator) -> SegmentationSet:
    """The (image, mask) pairs of ``classes``, at most ``max_per_class`` of each (seeded), resized to image_size²."""
    from PIL import Image

    images, masks, labels = [], [], []
    for label, (_, pairs) in enumerate(classes):
        if max_per_class is not None and len(pairs) > max_per_class:
            pairs = [pairs[i] for i in sorted(rng.choice(len(pairs), max_per_class, replace=False))]
        for image_path, mask_path in pairs:
            with Image.open(image_path) as im:
                rgb = as_rgb(im).resize((image_size, image_size), Image.BILINEAR)
            images.append(np.asarray(rgb, dtype=np.uint8).transpose(2, 0, 1))
            masks.append(read_mask(mask_path, image_size))
            labels.append(label)
    return SegmentationSet(np.stack(images), np.stack(masks), np.asarray(labels), tuple(name for name, _ in classes))


def cdfss_folder(
    context: Context,
    *,
    source: str = "PASCAL",
    target: str = "FSS-1000",
    root: str | None = None,
    image_size: int = 64,
    max_source_per_class: int | None = 500,
    max_target_per_class: int | None = None,
    episodes: int = 1000,
    val_episodes: int | None = None,
    queries: int = 1,
    cka_images: int = 128,
) -> CrossDomainSegmentationData:
    """The CD-FSS benchmarks from ``--data-dir`` (or ``root``), one folder per domain.

    Layout: ``<data-dir>/<domain>/<class>/<name>.jpg`` with its binary mask
    ``<name>.png`` beside it (FSS-1000's own layout), or ``<name>_mask.png`` beside a PNG
    image; files that are not images are ignored. The domains as PATNet prepares
    them: ``PASCAL`` (VOC 2012 + SBD, a folder per class holding that class's masks),
    ``Deepglobe`` (the 6 land-cover classes), ``ISIC`` (the 3 lesion classes),
    ``Chest X-ray`` (one class, lungs) and ``FSS-1000`` (its 240 test classes). Images are
    resized to ``image_size``² (bilinear; masks nearest, cut at 128 for 0/255 masks), as
    PATNet resizes to 400².

    The benchmarks have no validation split: validation episodes come from their own
    stream over the same target images. ``max_*_per_class`` subsample a class (seeded;
    ``None`` keeps all).

    Before any training, a :class:`~harness.tasks.base.DataError` names what is wrong: an
    image file without its mask (or a mask without its image), a target class with fewer
    pairs than a 5-shot episode and its queries, a file that does not decode or a mask
    whose size differs from its image's (every pair of both domains is decoded once per
    worker process, whichever a seed draws).
    """
    base = Path(root) if root else context.data_dir
    if base is None:
        raise DataUnavailable("cdfss-folder needs real data: pass --data-dir DIR (or set HARNESS_DATA_DIR) "
                              f"holding {source}/ and {target}/ class folders of images with masks")
    base = Path(base)
    if queries < 1 or episodes < 1 or cka_images < 2:
        raise ValueError("episodes and queries must be ≥ 1 and cka_images ≥ 2")
    need = max(SHOTS) + queries
    if max_target_per_class is not None and max_target_per_class < need:
        raise ValueError(f"max_target_per_class={max_target_per_class} keeps too few pairs: {max(SHOTS)}-shot "
                         f"episodes with {queries} quer{'y' if queries == 1 else 'ies'} need {need} per class")
    source_folder, source_classes = _domain_pairs(base, source)
    target_folder, target_classes = _domain_pairs(base, target)
    check_class_sizes([(name, len(pairs)) for name, pairs in target_classes], target_folder, need, "cdfss-folder",
                      f"{max(SHOTS)}-shot episodes with {queries} quer{'y' if queries == 1 else 'ies'} (validation and "
                      "test draw theirs from the same images)", noun="image/mask pair")
    for folder, classes in ((source_folder, source_classes), (target_folder, target_classes)):
        check_images([pair for _, pairs in classes for pair in pairs], folder, "cdfss-folder", max(1, int(context.threads)))
    # the source selection must not depend on the split or the target: the source model is shared
    source_rng = dataclasses.replace(context, split="train", dataset=SOURCE_STREAM).rng("data", source)
    source_set = _read_pairs(source_classes, image_size, max_source_per_class, source_rng)
    target_set = _read_pairs(target_classes, image_size, max_target_per_class, context.rng("data", target))
    n_episodes = episodes if context.split != "val" or val_episodes is None else val_episodes
    source_key = f"cdfss-folder/{base.resolve()}/{source}/{image_size}/{max_source_per_class}/seed{context.seed}"
    return CrossDomainSegmentationData(source_set, target_set, int(n_episodes), int(queries), int(cka_images), source_key)


def write_segmentation_folder(root: Path, domain: str, data: SegmentationSet) -> Path:
    """Write ``root/domain/<class>/<i>.png`` and ``<i>_mask.png`` (0/255), the layout :func:`cdfss_folder` reads."""
    from PIL import Image

    for i, (image, mask, label) in enumerate(zip(data.images, data.masks, data.labels)):
        folder = Path(root) / domain / data.class_names[label]
        folder.mkdir(parents=True, exist_ok=True)
        Image.fromarray(np.ascontiguousarray(image.transpose(1, 2, 0))).save(folder / f"{i:04d}.png")
        Image.fromarray((mask * 255).astype(np.uint8)).save(folder / f"{i:04d}{MASK_SUFFIX}")
    return Path(root)


def write_tiny_segmentation_folders(root: Path) -> Path:
    """A miniature CD-FSS layout under ``root``: PASCAL and FSS-1000 of 16-px synthetic shapes."""
    rng = np.random.default_rng(0)
    for domain, names, per_class in (("PASCAL", SOURCE_SHAPES[:3], 4), ("FSS-1000", NOVEL_SHAPES[:2], 7)):
        labels = _balanced_labels(len(names), per_class, rng)
        images, masks = render_shapes(labels, names, "source", 16, 0.0, class_appearance(len(names), rng), rng)
        write_segmentation_folder(root, domain, SegmentationSet(images, masks, labels, names))
    return Path(root)


# --------------------------------------------------------------------------- scores


def class_miou(predicted: np.ndarray, truth: np.ndarray, classes: np.ndarray) -> float:
    """Foreground IoU accumulated per class, then averaged over classes (in [0, 1]).

    ``predicted`` and ``truth`` are bool (E, Q, H, W); ``classes`` (E,) the episodes'
    classes. For each class, intersections and unions are summed over all its queries
    before dividing (HSNet/PATNet); a class whose union is empty counts as IoU 1.
    """
    intersection = (predicted & truth).sum(axis=(1, 2, 3)).astype(float)
    union = (predicted | truth).sum(axis=(1, 2, 3)).astype(float)
    scores = []
    for c in np.unique(classes):
        inter, uni = intersection[classes == c].sum(), union[classes == c].sum()
        scores.append(1.0 if uni == 0 else inter / uni)
    return float(np.mean(scores))


def _to_numpy(array) -> np.ndarray:
    if hasattr(array, "detach"):  # a torch tensor, on any device
        array = array.detach()
        array = (array.float() if array.is_floating_point() else array).cpu().numpy()
    return np.asarray(array)


# --------------------------------------------------------------------------- the task

# every source-trained arm of one seed (the spec's arms are ≤ 8); states are small, and
# tuning runs dataset-major, so a smaller cache would retrain each arm once per target
_SOURCE_TRAINING = SourceTraining(8)


class CrossDomainSegmentationTask(Task):
    """Source training, then 1-shot and 5-shot target episodes scored by class-wise mIoU."""

    name = "fewshot.cdfss"
    version = "2"  # 2 (issue 9): cka renamed covariance_alignment
    metrics = ("miou", "miou_1shot", "miou_5shot", "covariance_alignment", "train_s", "runtime_s")
    protocol = FewShotSegmenter
    framework = "torch"

    def tiny(self, workdir: Path) -> dict[str, dict[str, Any]]:
        """Small configurations for the conformance test; the folder one reads a miniature in ``workdir``."""
        return {
            "synthetic-shapes": {"image_size": 16, "source_per_class": 6, "target_classes": 2, "target_per_class": 6,
                                 "episodes": 3, "cka_images": 8},
            "cdfss-folder": {"root": str(write_tiny_segmentation_folders(Path(workdir) / "cd-fss")), "image_size": 16, "episodes": 3, "cka_images": 4},
        }

    def evaluate(self, method: FewShotSegmenter, data: CrossDomainSegmentationData, context: Context) -> dict[str, float]:
        # the source side's context: keyed like the source data, the same stream on every split and target
        source_context = dataclasses.replace(context, split="train", dataset=SOURCE_STREAM)
        train_s = _SOURCE_TRAINING.fit(method, context, (data.source_key,),
                                       lambda: method.fit_source(data.source, source_context))
        target = data.target
        who = type(method).__name__
        scores: dict[str, float] = {}
        runtime_s = 0.0
        for shots in SHOTS:
            drawn = sample_episodes(target.labels, ways=1, shots=shots, queries=data.queries, episodes=data.episodes,
                                    rng=context.rng("episodes", f"{shots}-shot"))
            support, query, classes = drawn.support[:, 0], drawn.query[:, 0], drawn.classes[:, 0]
            started = time.perf_counter()
            output = method.segment(target.images[support], target.masks[support], target.images[query],
                                    context.rng("method", f"{shots}-shot"), context)
            output = _to_numpy(output)
            runtime_s += time.perf_counter() - started
            expected = query.shape + target.masks.shape[1:]
            if output.shape != expected:
                raise ValueError(f"{who}.segment returned shape {output.shape}; expected {expected} (episodes, queries, H, W)")
            predicted = output if output.dtype == bool else output > 0
            scores[f"miou_{shots}shot"] = 100.0 * class_miou(predicted, target.masks[query], classes)
        scores["miou"] = float(np.mean([scores[f"miou_{k}shot"] for k in SHOTS]))
        rng = context.rng("cka")
        n = min(data.cka_images, data.source.images.shape[0], target.images.shape[0])
        source_images = data.source.images[np.sort(rng.choice(data.source.images.shape[0], n, replace=False))]
        target_images = target.images[np.sort(rng.choice(target.images.shape[0], n, replace=False))]
        scores["covariance_alignment"] = covariance_alignment(_to_numpy(method.embed(source_images, context)),
                                                              _to_numpy(method.embed(target_images, context)))
        scores["train_s"] = train_s
        scores["runtime_s"] = runtime_s
        return scores


TASK = CrossDomainSegmentationTask()
