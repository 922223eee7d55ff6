"""Image utilities shared by the few-shot tasks: numpy only, no torch.

* synthetic images: :func:`resize_bilinear`, :func:`translate`, :func:`upsample_digits`
  (scikit-learn's bundled 8×8 digits at any size), :func:`gratings` (oriented sinusoids),
  :func:`smooth_noise` (a low-frequency random texture), :func:`to_rgb_uint8`;
* real images: :func:`class_folders` (one sub-folder per class), :func:`read_images` (with
  Pillow; 16-bit images scaled to 8 bits, not clipped: :func:`as_rgb`), :func:`check_images`
  (every file of a folder decoded once per process, before any training) and
  :func:`write_image_folder` (the same layout, for tests and tiny configurations);
* :func:`covariance_alignment`, the domain-similarity measure between two sets of features.

Images handed to methods are ``uint8`` arrays of shape (N, 3, H, W): four times smaller
than float32, which matters for real data at 224 px.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from harness.tasks.base import DataError, WorkerCache

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".gif", ".tif", ".tiff", ".webp", ".ppm")


# --------------------------------------------------------------------------- synthetic images


def interpolation_matrix(n_in: int, n_out: int) -> np.ndarray:
    """(n_out, n_in) bilinear weights with half-pixel centres (``align_corners=False``), edges clamped."""
    position = (np.arange(n_out) + 0.5) * (n_in / n_out) - 0.5
    position = np.clip(position, 0.0, n_in - 1.0)
    low = np.floor(position).astype(int)
    high = np.minimum(low + 1, n_in - 1)
    frac = position - low
    weights = np.zeros((n_out, n_in))
    np.add.at(weights, (np.arange(n_out), low), 1.0 - frac)
    np.add.at(weights, (np.arange(n_out), high), frac)
    return weights


def resize_bilinear(images: np.ndarray, size: int | tuple[int, int]) -> np.ndarray:
    """Resize the last two axes of ``images`` to ``size`` by separable bilinear interpolation."""
    height, width = (size, size) if isinstance(size, int) else size
    rows = interpolation_matrix(images.shape[-2], height)
    cols = interpolation_matrix(images.shape[-1], width)
    return np.einsum("yh,...hw,xw->...yx", rows, images, cols, optimize=True)


def translate(images: np.ndarray, dy: np.ndarray, dx: np.ndarray) -> np.ndarray:
    """Shift image i of (N, H, W) by (dy[i], dx[i]) whole pixels, filling with zeros."""
    n, height, width = images.shape
    pad = int(max(np.abs(dy).max(initial=0), np.abs(dx).max(initial=0)))
    padded = np.pad(images, ((0, 0), (pad, pad), (pad, pad)))
    rows = pad - np.asarray(dy)[:, None] + np.arange(height)[None, :]  # output row r reads input row r - dy
    cols = pad - np.asarray(dx)[:, None] + np.arange(width)[None, :]
    return padded[np.arange(n)[:, None, None], rows[:, :, None], cols[:, None, :]]


def upsample_digits(digits: np.ndarray, size: int, max_shift: int, rng: np.random.Generator) -> np.ndarray:
    """scikit-learn's 8×8 digits (values 0..16) as (N, size, size) strokes in [0, 1].

    Bilinear upsampling to ``size``, then a random whole-pixel shift in
    [-max_shift, max_shift] along each axis (the note's ±3 px at 32 px).
    """
    strokes = resize_bilinear(np.asarray(digits, dtype=float).reshape(-1, 8, 8) / 16.0, size)
    dy = rng.integers(-max_shift, max_shift + 1, size=strokes.shape[0])
    dx = rng.integers(-max_shift, max_shift + 1, size=strokes.shape[0])
    return np.clip(translate(strokes, dy, dx), 0.0, 1.0)


def gratings(size: int, theta: np.ndarray, cycles: np.ndarray, phase: np.ndarray) -> np.ndarray:
    """(N, size, size) sinusoids 0.5 + 0.5 sin(2π·cycles·(x cos θ + y sin θ)/size + phase).

    ``cycles`` counts periods across the image width, so a grating looks the same at any size.
    """
    coords = np.arange(size, dtype=float)
    theta, cycles, phase = (np.asarray(v, dtype=float)[:, None, None] for v in (theta, cycles, phase))
    along = coords[None, None, :] * np.cos(theta) + coords[None, :, None] * np.sin(theta)
    return 0.5 + 0.5 * np.sin(2.0 * np.pi * cycles * along / size + phase)


def smooth_noise(n: int, size: int, rng: np.random.Generator, cells: int = 4) -> np.ndarray:
    """(n, size, size) low-frequency texture in [0, 1]: uniform noise on a coarse grid, upsampled."""
    coarse = rng.random((n, cells + 1, cells + 1))
    return resize_bilinear(coarse, size)


def to_rgb_uint8(images: np.ndarray) -> np.ndarray:
    """Grey (N, H, W) or colour (N, 3, H, W) floats in [0, 1] as (N, 3, H, W) uint8."""
    images = np.asarray(images, dtype=float)
    if images.ndim == 3:
        images = np.repeat(images[:, None], 3, axis=1)
    return np.round(np.clip(images, 0.0, 1.0) * 255.0).astype(np.uint8)


# --------------------------------------------------------------------------- similarity


def covariance_alignment(source: np.ndarray, target: np.ndarray) -> float:
    """The alignment of two domains' feature covariances, ⟨Σ_s, Σ_t⟩_F / (‖Σ_s‖_F ‖Σ_t‖_F).

    Images of two domains are not paired, but their feature channels are. Each domain's
    features (n × d, m × d) are centred over its images; with the channels as the paired
    samples, linear CKA (Kornblith et al., 2019) reduces to this alignment of the two d × d
    covariance matrices. It lies in [0, 1], equals 1 when the two covariances are
    proportional (e.g. two samples of one distribution, as n grows), and is invariant to an
    isotropic scaling of either domain's features and to one orthogonal map applied to both.

    The d × d covariances are never formed when d exceeds the number of images (raw pixels:
    d = 3072): ⟨XᵀX, YᵀY⟩_F = ‖X Yᵀ‖²_F and ‖XᵀX‖_F = ‖X Xᵀ‖_F, so the cost is
    O((n + m)² d) instead of O((n + m) d²).
    """
    x = np.asarray(source, dtype=float)
    y = np.asarray(target, dtype=float)
    if x.ndim != 2 or y.ndim != 2 or x.shape[1] != y.shape[1]:
        raise ValueError(f"features of shapes {x.shape} and {y.shape}: need (n, d) and (m, d)")
    x = x - x.mean(axis=0)
    y = y - y.mean(axis=0)
    if x.shape[1] > x.shape[0] + y.shape[0]:
        cross = np.sum((x @ y.T) ** 2)
        norm_x = np.linalg.norm(x @ x.T)
        norm_y = np.linalg.norm(y @ y.T)
    else:
        cov_x, cov_y = x.T @ x, y.T @ y
        cross = np.sum(cov_x * cov_y)
        norm_x, norm_y = np.linalg.norm(cov_x), np.linalg.norm(cov_y)
    denominator = norm_x * norm_y
    if denominator == 0.0:
        return float("nan")  # a domain whose features are all equal has no covariance to compare
    return float(cross / denominator)  # the 1/n and 1/m of the covariances cancel


# --------------------------------------------------------------------------- image folders


def class_folders(folder: Path) -> list[tuple[str, list[Path]]]:
    """(class name, sorted image files) for every sub-folder of ``folder`` that holds images.

    Images may sit at any depth below their class folder. Sorted, so that the order never
    depends on the file system.
    """
    classes = []
    for sub in sorted(p for p in Path(folder).iterdir() if p.is_dir()):
        files = sorted(p for p in sub.rglob("*") if p.is_file() and p.suffix.lower() in IMAGE_SUFFIXES)
        if files:
            classes.append((sub.name, files))
    return classes


# Pillow's integer modes for 16-bit files (PNG, TIFF): their values span 0..65535
SIXTEEN_BIT_MODES = ("I;16", "I;16L", "I;16B", "I;16N", "I")


def as_rgb(image):
    """``image`` as an 8-bit RGB Pillow image, 16-bit greyscale scaled by 255/65535.

    Pillow's own ``convert("RGB")`` clips a 16-bit greyscale image at 255, which turns
    almost every pixel white; 16-bit colour PNGs Pillow already reads as 8-bit RGB. Mode
    ``I`` (how some Pillow versions and TIFFs give 16-bit greyscale) is taken to span
    0..65535 as well; values outside are clipped.
    """
    from PIL import Image

    if image.mode in SIXTEEN_BIT_MODES:
        values = np.asarray(image, dtype=np.float64)
        grey = np.round(np.clip(values, 0.0, 65535.0) * (255.0 / 65535.0)).astype(np.uint8)
        return Image.fromarray(grey).convert("RGB")
    return image.convert("RGB")


def load_image(path: Path, size: int) -> np.ndarray:
    """(3, size, size) uint8: the image's shorter side resized to ``size``, then a centre crop."""
    from PIL import Image

    with Image.open(path) as image:
        image = as_rgb(image)
        width, height = image.size
        scale = size / min(width, height)
        new_size = (max(size, round(width * scale)), max(size, round(height * scale)))
        image = image.resize(new_size, Image.BILINEAR)
        left = (new_size[0] - size) // 2
        top = (new_size[1] - size) // 2
        image = image.crop((left, top, left + size, top + size))
        return np.asarray(image, dtype=np.uint8).transpose(2, 0, 1).copy()


def read_images(files: list[Path], size: int, threads: int = 1) -> np.ndarray:
    """(N, 3, size, size) uint8 from image files; decoding runs on ``threads`` threads."""
    out = np.empty((len(files), 3, size, size), dtype=np.uint8)
    if threads <= 1 or len(files) < 64:
        for i, path in enumerate(files):
            out[i] = load_image(path, size)
        return out
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=threads) as pool:  # Pillow releases the GIL while decoding
        for i, image in enumerate(pool.map(lambda p: load_image(p, size), files)):
            out[i] = image
    return out


def check_class_sizes(counts: list[tuple[str, int]], folder: Path, minimum: int, who: str, why: str,
                      noun: str = "image") -> None:
    """Raise :class:`DataError` naming the classes of ``folder`` holding fewer than ``minimum`` items.

    ``counts`` (class name, count) are what the folder holds, before any cap or split, so
    the message matches what the user sees on disk; ``why`` says what needs the minimum.
    """
    short = sorted((count, name) for name, count in counts if count < minimum)
    if short:
        named = ", ".join(f"class {name!r} has {count} {noun}{'s' * (count != 1)}" for count, name in short[:3])
        more = f" (and {len(short) - 3} more classes)" if len(short) > 3 else ""
        raise DataError(f"{who}: {folder}: {named}{more}; {why} need at least {minimum} {noun}s per class")


_CHECKED = WorkerCache(64)  # (folder, its files' names, sizes and times) → the problems found


def _problem(group: tuple[Path, ...]) -> str | None:
    """Why the files of ``group`` (an image, or an image and its mask) cannot be used, or None."""
    from PIL import Image

    sizes = []
    for path in group:
        try:
            with Image.open(path) as image:
                sizes.append(image.size)
                image.draft(image.mode, (1, 1))  # a JPEG decodes at 1/8 scale: every byte still read
                image.load()
        except Exception as exc:  # Pillow raises OSError, SyntaxError, ValueError, ... for broken files
            return f"{path} ({type(exc).__name__}: {exc})"
    if len(set(sizes)) > 1:
        (w0, h0), (w1, h1) = sizes[0], sizes[1]
        return f"{group[1]} is {w1}×{h1} but its image {group[0].name} is {w0}×{h0}"
    return None


def check_images(groups: list[tuple[Path, ...]], folder: Path, who: str, threads: int = 1) -> None:
    """Decode every file of ``groups`` once per process; raise :class:`DataError` naming each that fails.

    A group is one image, or an image and its mask (which must then share its size). Every
    file is checked, not only those a seed draws, so a corrupt file is one error before any
    training, whatever the seed. The result is kept per ``folder`` and the files' names,
    sizes and modification times, so the cells that follow in this worker do not decode
    again, and a file replaced since is checked anew.
    """
    import hashlib
    import os

    stats = []
    for group in groups:
        for path in group:
            status = os.stat(path)
            stats.append((str(path), status.st_size, status.st_mtime_ns))
    key = (str(Path(folder).resolve()), hashlib.sha256(repr(stats).encode()).hexdigest())

    def build() -> tuple[str, ...]:
        if threads <= 1 or len(groups) < 64:
            found = [_problem(group) for group in groups]
        else:
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(max_workers=threads) as pool:  # Pillow releases the GIL while decoding
                found = list(pool.map(_problem, groups))
        return tuple(p for p in found if p is not None)

    problems = _CHECKED.get_or_build(key, build)
    if problems:
        shown = "; ".join(problems[:5]) + (f"; and {len(problems) - 5} more" if len(problems) > 5 else "")
        raise DataError(f"{who}: {len(problems)} of the {len(stats)} image files under {folder} cannot be used "
                        f"(every file is decoded once before any training): {shown}. Replace or remove them")


def write_image_folder(root: Path, images_by_class: dict[str, np.ndarray]) -> Path:
    """Write ``root/<class>/<i>.png`` for uint8 images of shape (n, 3, H, W) or (n, H, W, 3)."""
    from PIL import Image

    root = Path(root)
    for name, images in images_by_class.items():
        folder = root / name
        folder.mkdir(parents=True, exist_ok=True)
        for i, image in enumerate(np.asarray(images, dtype=np.uint8)):
            if image.ndim == 3 and image.shape[0] == 3 and image.shape[-1] != 3:
                image = image.transpose(1, 2, 0)
            Image.fromarray(np.ascontiguousarray(image)).save(folder / f"{i:04d}.png")
    return root
