"""Torch building blocks that BRO and the other Lipschitz layers share (imports torch at its top).

Loaded only inside functions of the method modules, so ``harness validate`` stays torch-free.

* :class:`CachedWeight`: a layer whose weight is recomputed at every training step and
  cached (detached) at evaluation, the way BRONet caches its weights at ``model.eval()``;
* :func:`fft_conv_apply`: zero-pad → one unitary matrix per frequency → crop, the
  FFT convolution both BRO and the Cayley convolution use; the per-frequency operands are
  kept contiguous as an (F, c, ·) batch so that one batched matmul or solve serves every
  frequency;
* :class:`MinMax`, :class:`LLNHead`, :class:`ChannelLift`: the activation, the last-layer
  normalised head and the channel zero-padding isometry;
* :class:`LipschitzNet`: the dense or convolutional network every family plugs its layers into;
* the losses (cross-entropy, cross-entropy with the margin offset, logit annealing) and
  the training loop.
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn


# --------------------------------------------------------------------------- layers


class CachedWeight(nn.Module):
    """A layer whose weight is a function of its parameters (:meth:`compute_weight`).

    In training mode the weight is recomputed at every call (gradients flow through it); in
    evaluation mode it is computed once, detached, and kept until the next ``train()`` or
    a change of dtype or device. ``lipschitz_bound`` is the bound the layer guarantees by
    construction (1 for an orthogonal layer), or None when it guarantees none.
    """

    lipschitz_bound: float | None = 1.0

    def __init__(self):
        super().__init__()
        self._cache: tuple | None = None

    def compute_weight(self):  # pragma: no cover - every subclass implements it
        raise NotImplementedError

    def weight(self):
        if self.training:
            self._cache = None
            return self.compute_weight()
        first = next(self.parameters())
        key = (first.dtype, first.device)
        if self._cache is None or self._cache[0] != key:
            with torch.no_grad():
                self._cache = (key, self.compute_weight())
        return self._cache[1]

    def train(self, mode: bool = True):
        self._cache = None
        return super().train(mode)


def rank_from_ratio(channels: int, ratio: float) -> int:
    """BRO's ``mask_level``: the rank n of V for a ratio, 1 ≤ n ≤ channels − 1 (n = channels gives W = −I)."""
    if not 0.0 < ratio <= 1.0:
        raise ValueError(f"rank_ratio must be in (0, 1]; got {ratio}")
    if channels < 2:
        raise ValueError("BRO needs at least 2 channels (rank n < channels)")
    return int(min(channels - 1, max(1, round(channels * ratio))))


_DFT_CACHE: dict[tuple, torch.Tensor] = {}


def _dft_matrix(kernel_size: int, size: int, dtype: torch.dtype, device) -> torch.Tensor:
    """(F, k²) complex: the ortho-normalised rfft2 on the size×size grid of a k×k kernel in the top-left corner."""
    key = (kernel_size, size, dtype, str(device))
    if key not in _DFT_CACHE:
        real = torch.float64
        f1 = torch.arange(size, dtype=real)[:, None, None, None]
        f2 = torch.arange(size // 2 + 1, dtype=real)[None, :, None, None]
        u = torch.arange(kernel_size, dtype=real)[None, None, :, None]
        v = torch.arange(kernel_size, dtype=real)[None, None, None, :]
        phase = -2.0 * math.pi * (f1 * u + f2 * v) / size
        dft = torch.polar(torch.full_like(phase, 1.0 / size), phase).reshape(-1, kernel_size * kernel_size)
        complex_dtype = torch.complex128 if dtype == torch.float64 else torch.complex64
        _DFT_CACHE[key] = dft.to(device=device, dtype=complex_dtype).contiguous()
    return _DFT_CACHE[key]


def frequency_batch(kernel: torch.Tensor, size: int) -> torch.Tensor:
    """rfft2(kernel, s=(size, size), norm="ortho") of a (c_out, c_in, k, k) kernel, as (F, c_out, c_in) contiguous.

    Computed as one (F, k²) × (k², c_out·c_in) product with the DFT matrix of the k×k taps:
    the kernel has k² non-zero taps, so this costs far less than an FFT of every zero-padded
    kernel, and it lands in the per-frequency layout without a transpose.
    """
    c_out, c_in, k, _ = kernel.shape
    dft = _dft_matrix(k, size, kernel.dtype, kernel.device)
    taps = kernel.reshape(c_out * c_in, k * k).mT.to(dft.dtype)  # (k², c_out·c_in)
    return (dft @ taps).reshape(-1, c_out, c_in)


class _BatchedComplexProduct(torch.autograd.Function):
    """A @ B over a batch of complex matrices whose backward takes physical conjugates.

    Autograd's own backward of a complex ``bmm`` multiplies by lazily conjugated views
    (``B.mH``), for which bmm falls back to one matrix product per batch entry: on the CPU,
    per frequency. Conjugating physically keeps every product one batched BLAS call.
    """

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return torch.bmm(a, b)  # transposed operands are fine: BLAS reads them in place

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        grad = grad.contiguous()  # it arrives as a permuted view from the FFT side (batch stride 1)
        grad_a = torch.bmm(grad, torch.conj_physical(b).mT) if ctx.needs_input_grad[0] else None
        grad_b = torch.bmm(torch.conj_physical(a).mT, grad) if ctx.needs_input_grad[1] else None
        return grad_a, grad_b


def batched_product(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """(F, m, k) @ (F, k, n) for complex batches, forward and backward as batched BLAS calls."""
    return _BatchedComplexProduct.apply(a, b)


def _solve_one_thread(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """torch.linalg.solve with one CPU thread.

    torch solves a batch of small matrices one LU at a time; from 32×32 complex (64×64
    real) up, MKL threads each of those small LUs, and on a busy 2-core machine every one
    of the 180 per-frequency solves then waited on its second thread: 2.9 s for a (180,
    32, 32) batch at 2 threads, 5 ms at one. The batch is the parallelism worth having,
    and torch does not split it, so the solve runs on one thread.
    """
    threads = torch.get_num_threads()
    if a.device.type != "cpu" or threads == 1:
        return torch.linalg.solve(a, b)
    torch.set_num_threads(1)
    try:
        return torch.linalg.solve(a, b)
    finally:
        torch.set_num_threads(threads)


class _BatchedSolve(torch.autograd.Function):
    """A⁻¹B over a batch of matrices, on one CPU thread; its backward a second batched solve with Aᴴ."""

    @staticmethod
    def forward(ctx, a, b):
        x = _solve_one_thread(a, b)
        ctx.save_for_backward(a, x)
        return x

    @staticmethod
    def backward(ctx, grad):
        a, x = ctx.saved_tensors
        grad_b = _solve_one_thread(torch.conj_physical(a).mT.contiguous(), grad.contiguous())
        grad_a = -torch.bmm(grad_b, torch.conj_physical(x).mT) if ctx.needs_input_grad[0] else None
        return grad_a, grad_b


def batched_solve(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """torch.linalg.solve(a, b) for (F, n, n) and (F, n, k) batches, with a backward that stays batched at any thread count."""
    return _BatchedSolve.apply(a, b)


def fft_conv_apply(x: torch.Tensor, unitary: Callable[[torch.Tensor], torch.Tensor], padding: int) -> torch.Tensor:
    """Zero-pad x by 2·``padding``, multiply each frequency by a c×c matrix, crop back to H×W.

    ``unitary(xf)`` receives the input spectrum as a contiguous (F, c, B) batch and returns
    the output spectrum of the same shape (a matrix product, or a low-rank update). With a
    unitary matrix per frequency (conjugate-symmetric, as it is for a real kernel) the map
    on the padded N×N torus is orthogonal, so pad → map → crop is 1-Lipschitz.

    The padding goes after the image (rfft2's own ``s``) and the crop keeps the first H×W:
    the same operator as padding ``padding`` on each side and cropping the middle (the two
    differ by a circular shift of the torus, which commutes with the per-frequency map),
    without a padded copy of x.
    """
    batch, channels, height, width = x.shape
    if height != width:
        raise ValueError(f"the FFT convolution expects square inputs; got {height}×{width}")
    size = height + 2 * padding
    xf = torch.fft.rfft2(x, s=(size, size), norm="ortho")  # (B, c, N, N//2+1)
    cols = xf.shape[-1]
    # contiguous per frequency: reshape alone returns a strided view here, and bmm then loops over the frequencies
    xf = xf.permute(2, 3, 1, 0).reshape(size * cols, channels, batch).contiguous()
    zf = unitary(xf)
    zf = zf.reshape(size, cols, -1, batch).permute(3, 2, 0, 1)
    z = torch.fft.irfft2(zf, s=(size, size), norm="ortho")
    return z[..., :height, :width] if padding else z


class MinMax(nn.Module):
    """Split the channels into halves a, b; return [max(a, b), min(a, b)] (1-Lipschitz, gradient-norm preserving)."""

    def forward(self, x):
        a, b = x.chunk(2, dim=1)
        return torch.cat([torch.maximum(a, b), torch.minimum(a, b)], dim=1)


class ChannelLift(nn.Module):
    """(B, c, H, W) → (B, C, H, W), the c channels followed by zeros: an isometry."""

    lipschitz_bound = 1.0

    def __init__(self, channels_in: int, channels_out: int):
        super().__init__()
        self.extra = channels_out - channels_in

    def forward(self, x):
        return F.pad(x, (0, 0, 0, 0, 0, self.extra))


class NormPool(nn.Module):
    """2×2 sum pooling divided by 2: each output is (x₁ + x₂ + x₃ + x₄)/2, so ‖out‖ ≤ ‖x‖ (Cauchy–Schwarz),
    with equality on block-constant images; a 1-Lipschitz linear map that quarters the size."""

    lipschitz_bound = 1.0

    def forward(self, x):
        return 2.0 * F.avg_pool2d(x, 2)


class Downsample(nn.Module):
    """LipConvNet's stride-2 step: pixel-unshuffle (B, C, 2h, 2w) → (B, 4C, h, w), an orthogonal
    permutation; the family's convolution on the 4C channels; then the first ``keep`` channels,
    a projection. Its Lipschitz bound is the convolution's (both other maps have norm 1)."""

    def __init__(self, conv: nn.Module, keep: int):
        super().__init__()
        self.conv, self.keep = conv, int(keep)

    @property
    def lipschitz_bound(self):
        return getattr(self.conv, "lipschitz_bound", None)

    def forward(self, x):
        return self.conv(F.pixel_unshuffle(x, 2))[:, : self.keep]


class LLNHead(nn.Module):
    """Last-layer normalisation: a linear head whose rows are divided by their norms (bias kept)."""

    def __init__(self, features: int, classes: int, generator: torch.Generator | None = None):
        super().__init__()
        self.raw = nn.Parameter(torch.randn(classes, features, generator=generator) / math.sqrt(features))
        self.bias = nn.Parameter(torch.zeros(classes))

    def effective_weight(self):
        return self.raw / self.raw.norm(dim=1, keepdim=True).clamp_min(1e-12)

    def forward(self, x):
        return F.linear(x, self.effective_weight(), self.bias)


class LipschitzNet(nn.Module):
    """A classifier built from one family's layers: the same depth and width for every family.

    ``arch="dense"``: flatten → ``depth`` dense layers of ``width`` (the first maps the
    input dimension to ``width``) each followed by MinMax → head. ``arch="conv"``: the
    channels zero-padded to ``channels`` (an isometry) → ``depth`` convolutions (k×k, same
    size) each followed by MinMax → :class:`NormPool` (2×2, 1-Lipschitz) → flatten → one
    dense layer to ``width`` + MinMax → head. ``arch="lipconvnet"`` (LipConvNet's layout, the
    paper's CIFAR backbone): the channels zero-padded to ``channels`` → ``stages`` stages, each
    ``depth`` convolutions + MinMax and then a :class:`Downsample` (half the size, twice the
    channels) + MinMax → flatten → one dense layer to ``width`` + MinMax → head; the image
    side must be divisible by 2^``stages``.
    Inputs are shifted by −0.5 first (BRONet's only normalisation: a translation, which
    changes no Lipschitz constant).

    ``head="lln"``: a last-layer-normalised linear head; the certified part (:meth:`embed`)
    is everything before it. ``head="plain"``: the family's own dense layer to the classes
    (1-Lipschitz); :meth:`embed` is then the whole network.

    ``dense(in, out)`` and ``conv(channels)`` build the family's layers; each exposes
    ``lipschitz_bound`` (a float it guarantees, or None). ``certified=False`` (the
    unconstrained network) claims no certificate: :meth:`lipschitz_factors` returns None.
    """

    def __init__(self, *, dense: Callable[[int, int], nn.Module], conv: Callable[[int], nn.Module] | None,
                 input_shape: tuple[int, int, int], classes: int, arch: str = "dense", width: int = 64,
                 depth: int = 4, channels: int = 16, stages: int = 5, head: str = "lln", certified: bool = True,
                 generator: torch.Generator | None = None):
        super().__init__()
        if arch not in ("dense", "conv", "lipconvnet"):
            raise ValueError(f"arch must be 'dense', 'conv' or 'lipconvnet'; got {arch!r}")
        if head not in ("lln", "plain"):
            raise ValueError(f"head must be 'lln' or 'plain'; got {head!r}")
        if width % 2 or (arch != "dense" and channels % 2):
            raise ValueError("MinMax needs an even width and an even number of channels")
        self.arch, self.head_kind, self.certified = arch, head, certified
        self.input_shape = tuple(input_shape)
        c, h, w = self.input_shape
        # (module, its input shape without the batch) for every affine map of embed(), in order
        self._affine: list[tuple[nn.Module, tuple[int, ...]]] = []
        layers: list[nn.Module] = []
        if arch == "conv":
            if conv is None:
                raise ValueError("this family has no convolution")
            lift = ChannelLift(c, channels)
            layers.append(lift)
            self._affine.append((lift, (c, h, w)))
            for _ in range(depth):
                layer = conv(channels)
                layers += [layer, MinMax()]
                self._affine.append((layer, (channels, h, w)))
            pool = NormPool()
            layers += [pool, nn.Flatten()]
            self._affine.append((pool, (channels, h, w)))
            h, w = h // 2, w // 2
            layer = dense(channels * h * w, width)
            layers += [layer, MinMax()]
            self._affine.append((layer, (channels * h * w,)))
        elif arch == "lipconvnet":
            if conv is None:
                raise ValueError("this family has no convolution")
            if stages < 1 or h % 2**stages or w % 2**stages:
                raise ValueError(f"lipconvnet: {stages} stages halve the size {stages} times; the input is {h}×{w}")
            lift = ChannelLift(c, channels)
            layers.append(lift)
            self._affine.append((lift, (c, h, w)))
            for _ in range(stages):
                for _ in range(depth):
                    layer = conv(channels)
                    layers += [layer, MinMax()]
                    self._affine.append((layer, (channels, h, w)))
                step = Downsample(conv(4 * channels), keep=2 * channels)
                layers += [step, MinMax()]
                self._affine.append((step, (channels, h, w)))
                channels, h, w = 2 * channels, h // 2, w // 2
            layers.append(nn.Flatten())
            layer = dense(channels * h * w, width)
            layers += [layer, MinMax()]
            self._affine.append((layer, (channels * h * w,)))
        else:
            layers.append(nn.Flatten())
            features = c * h * w
            for _ in range(depth):
                layer = dense(features, width)
                layers += [layer, MinMax()]
                self._affine.append((layer, (features,)))
                features = width
        if head == "plain":
            last = dense(width, classes)
            layers.append(last)
            self._affine.append((last, (width,)))
            self.head = None
        else:
            self.head = LLNHead(width, classes, generator)
        self.body = nn.Sequential(*layers)

    def embed(self, x):
        """The certified part: features before an LLN head, or the logits with a plain head."""
        return self.body(x - 0.5)

    def forward(self, x):
        z = self.embed(x)
        return z if self.head is None else self.head(z)

    def head_weight(self):
        """The LLN head's effective (row-normalised) weight, (classes, width); None with a plain head."""
        return None if self.head is None else self.head.effective_weight()

    def lipschitz_factors(self):
        """[(module, input shape, bound or None)] for every affine map of :meth:`embed`; None: no certificate."""
        if not self.certified:
            return None
        return [(module, shape, getattr(module, "lipschitz_bound", None)) for module, shape in self._affine]


# --------------------------------------------------------------------------- losses

LOSSES = ("ce", "ce-offset", "la")


def margin_loss(logits: torch.Tensor, labels: torch.Tensor, loss: str, *, temperature: float = 0.75,
                offset: float = 2.0 * math.sqrt(2.0), exponent: float = 5.0, alpha: float = 0.25) -> torch.Tensor:
    """Cross-entropy (``ce``), cross-entropy with the margin offset (``ce-offset``, LipConvNet's xent) or logit annealing (``la``).

    With q = softmax((z − ξ·e_y)/T) and p_t = q_y: ``ce-offset`` is T·(−log p_t) and ``la``
    is T·α·(1 − p_t)^β·(−log p_t), averaged over the batch (LipConvNet's LA, applied to the
    logits directly; defaults T = 0.75, ξ = 2√2, β = 5, α = 0.25).
    """
    if loss == "ce":
        return F.cross_entropy(logits, labels)
    if loss not in LOSSES:
        raise ValueError(f"loss must be one of {', '.join(LOSSES)}; got {loss!r}")
    shifted = (logits - offset * F.one_hot(labels, logits.shape[1]).to(logits.dtype)) / temperature
    log_p = F.log_softmax(shifted, dim=1).gather(1, labels[:, None])[:, 0]
    if loss == "ce-offset":
        return (temperature * -log_p).mean()
    p = log_p.exp()
    return (temperature * alpha * (1.0 - p).pow(exponent) * -log_p).mean()


def train_classifier(model: nn.Module, images: np.ndarray, labels: np.ndarray, *, epochs: int, batch_size: int,
                     lr: float, loss: str, rng: np.random.Generator, device: str = "cpu", **loss_params) -> nn.Module:
    """Adam at ``lr`` for ``epochs`` passes of shuffled mini-batches; returns the model in evaluation mode."""
    model.to(device).train()
    x = torch.as_tensor(images, dtype=torch.float32, device=device)
    y = torch.as_tensor(labels, dtype=torch.long, device=device)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    n = x.shape[0]
    for _ in range(int(epochs)):
        order = torch.as_tensor(rng.permutation(n), device=device)
        for start in range(0, n, batch_size):
            index = order[start:start + batch_size]
            optimizer.zero_grad(set_to_none=True)
            margin_loss(model(x[index]), y[index], loss, **loss_params).backward()
            optimizer.step()
    return model.eval()
