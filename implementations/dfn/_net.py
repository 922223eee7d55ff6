"""Torch code of DFN: the small backbone, the prototype head, the adapters, SAM and SAM-SVN.

Imported only inside methods (this module imports torch at its top). Parameters live in
plain dicts of tensors and every forward function is functional, so that one call can run
E episodes at once with E different adapter weights (a batched 1×1 conv is an einsum).

Feature maps carry two leading dims (B, N): B episodes (or 1 during source training, where
the adapter is shared) and N images per episode.
"""
from __future__ import annotations

import math
from contextlib import nullcontext

import torch
import torch.nn.functional as F

Params = dict[str, torch.Tensor]
DEPTH = 4  # backbone blocks; the first three halve the resolution


# --------------------------------------------------------------------------- init


def init_backbone(widths: tuple[int, ...], n_classes: int, generator: torch.Generator) -> Params:
    """He-normal 3×3 convs of a ``len(widths)``-block CNN, plus a linear classifier for pre-training."""
    params: Params = {}
    c_in = 3
    for i, c_out in enumerate(widths):
        params[f"block{i}.weight"] = torch.randn(c_out, c_in, 3, 3, generator=generator) * math.sqrt(2.0 / (9 * c_in))
        params[f"block{i}.bias"] = torch.zeros(c_out)
        c_in = c_out
    params["classifier.weight"] = torch.randn(n_classes, c_in, generator=generator) / math.sqrt(c_in)
    params["classifier.bias"] = torch.zeros(n_classes)
    return params


def init_head(levels: int, hidden: int, generator: torch.Generator) -> Params:
    """The decoder: two cosine maps (fg, bg) per level → 3×3 conv → 3×3 conv → 1×1 conv to a logit."""
    def conv(c_out, c_in, k):
        return torch.randn(c_out, c_in, k, k, generator=generator) * math.sqrt(2.0 / (k * k * c_in))

    return {
        "conv1.weight": conv(hidden, 2 * levels, 3), "conv1.bias": torch.zeros(hidden),
        "conv2.weight": conv(hidden, hidden, 3), "conv2.bias": torch.zeros(hidden),
        "conv3.weight": conv(1, hidden, 1) / math.sqrt(2.0), "conv3.bias": torch.zeros(1),
    }


def init_adapter(kind: str, channels: int, generator: torch.Generator) -> torch.Tensor:
    """A 1×1 conv weight α (C, C), without bias.

    ``residual``: zero, so NF = F + αF starts as the backbone's own feature (the DFN).
    ``serial``: PyTorch's default conv init U(±1/√C), so NF = αF replaces the feature; an
    identity-initialised serial α would be the residual adapter reparametrised (same
    gradients, so the same Adam trajectory): the structure differs only with its own init.
    """
    if kind == "residual":
        return torch.zeros(channels, channels)
    if kind == "serial":
        bound = 1.0 / math.sqrt(channels)
        return (torch.rand(channels, channels, generator=generator) * 2.0 - 1.0) * bound
    raise ValueError(f"adapter kind {kind!r}; expected 'residual' or 'serial'")


# --------------------------------------------------------------------------- forward


def normalise(images: torch.Tensor) -> torch.Tensor:
    """uint8 (or float in [0, 255]) images → float centred on 0."""
    return images.float() / 255.0 - 0.5


def block(backbone: Params, index: int, x: torch.Tensor) -> torch.Tensor:
    """Block ``index`` (0-based) on (M, C, h, w): conv3×3 → ReLU, then 2×2 max-pool except the last."""
    y = F.relu(F.conv2d(x, backbone[f"block{index}.weight"], backbone[f"block{index}.bias"], padding=1))
    return F.max_pool2d(y, 2) if index < DEPTH - 1 else y


def adapt(feature: torch.Tensor, weight: torch.Tensor | None, kind: str) -> torch.Tensor:
    """Apply a 1×1 adapter to (B, N, C, h, w); ``weight`` is (C, C) shared or (B, C, C) per episode."""
    if weight is None:
        return feature
    if weight.dim() == 2:
        mixed = torch.einsum("dc,bnchw->bndhw", weight, feature)
    else:
        mixed = torch.einsum("bdc,bnchw->bndhw", weight, feature)
    return feature + mixed if kind == "residual" else mixed


def frozen_features(backbone: Params, images: torch.Tensor, upto: int) -> list[torch.Tensor]:
    """Outputs of blocks 1..``upto`` (1-based) for (M, 3, H, W) uint8 images, without adapters."""
    x = normalise(images)
    out = []
    for index in range(upto):
        x = block(backbone, index, x)
        out.append(x)
    return out


def adapted_features(backbone: Params, frozen: list[torch.Tensor], adapters: dict[int, torch.Tensor],
                     kind: str) -> list[torch.Tensor]:
    """All ``DEPTH`` levels (B, N, C, h, w) from the frozen outputs of the first ``len(frozen)`` blocks.

    ``adapters`` maps a level (1-based) to its weight; each adapter acts on its block's
    output, and the next block reads the adapted feature.
    """
    levels = [adapt(f, adapters.get(i + 1), kind) if i == len(frozen) - 1 else f for i, f in enumerate(frozen)]
    x = levels[-1]
    for index in range(len(frozen), DEPTH):
        x = adapt(episode_block(backbone, index, x), adapters.get(index + 1), kind)
        levels.append(x)
    return levels


def episode_block(backbone: Params, index: int, x: torch.Tensor) -> torch.Tensor:
    """Block ``index`` on (B, N, C, h, w); its weights are shared, or per episode ((B, C_out, C_in, 3, 3)).

    Per-episode weights (the last-block fine-tuning baseline: each episode tunes its own
    copy) run as one grouped convolution over the B episodes.
    """
    weight, bias = backbone[f"block{index}.weight"], backbone[f"block{index}.bias"]
    b, n = x.shape[:2]
    if weight.dim() == 4:
        y = block(backbone, index, x.flatten(0, 1))
        return y.view(b, n, *y.shape[1:])
    grouped = x.transpose(0, 1).reshape(n, b * x.shape[2], *x.shape[3:])  # (N, B·C_in, h, w)
    y = F.relu(F.conv2d(grouped, weight.flatten(0, 1), bias.flatten(), padding=1, groups=b))
    if index < DEPTH - 1:
        y = F.max_pool2d(y, 2)
    return y.view(n, b, -1, *y.shape[2:]).transpose(0, 1)


def masked_prototypes(feature: torch.Tensor, masks: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Foreground and background masked averages (B, C) of (B, K, C, h, w) over all K shots.

    ``masks`` (B, K, H, W) in [0, 1] are area-averaged down to (h, w) first.
    """
    b, k, c, h, w = feature.shape
    weight = F.adaptive_avg_pool2d(masks.flatten(0, 1)[:, None].float(), (h, w)).view(b, k, 1, h, w)
    foreground = (feature * weight).sum(dim=(1, 3, 4)) / (weight.sum(dim=(1, 3, 4)) + 1e-5)
    background = (feature * (1 - weight)).sum(dim=(1, 3, 4)) / ((1 - weight).sum(dim=(1, 3, 4)) + 1e-5)
    return foreground, background


COSINE_SCALE = 10.0  # PANet's trick: scaled cosines give the decoder differences of order 1


def cosine_maps(query: torch.Tensor, foreground: torch.Tensor, background: torch.Tensor) -> torch.Tensor:
    """(B, Q, 2, h, w): ``COSINE_SCALE`` × the cosine of each query location with the fg and bg prototypes."""
    q = F.normalize(query, dim=2)
    protos = F.normalize(torch.stack([foreground, background], dim=1), dim=2)  # (B, 2, C)
    return COSINE_SCALE * torch.einsum("bqchw,bpc->bqphw", q, protos)


def decode(head: Params, maps: list[torch.Tensor], size: tuple[int, int], stride: int = 2) -> torch.Tensor:
    """Mask logits (B, Q, H, W) from per-level cosine maps, decoded at 1/``stride`` of the image size.

    HSNet too decodes at a quarter of the input size, then upsamples bilinearly.
    """
    b, q = maps[0].shape[:2]
    inner = (max(1, size[0] // stride), max(1, size[1] // stride))
    x = torch.cat([F.interpolate(m.flatten(0, 1), size=inner, mode="bilinear", align_corners=False) for m in maps], dim=1)
    x = F.relu(F.conv2d(x, head["conv1.weight"], head["conv1.bias"], padding=1))
    x = F.relu(F.conv2d(x, head["conv2.weight"], head["conv2.bias"], padding=1))
    x = F.conv2d(x, head["conv3.weight"], head["conv3.bias"])
    x = F.interpolate(x, size=size, mode="bilinear", align_corners=False)
    return x.view(b, q, *size)


def level_maps(support: list[torch.Tensor], support_masks: torch.Tensor, query: list[torch.Tensor]) -> list[torch.Tensor]:
    """Cosine maps of every given level: query features against the support's fg/bg prototypes."""
    return [cosine_maps(q, *masked_prototypes(s, support_masks)) for s, q in zip(support, query)]


def episode_logits(backbone: Params, head: Params, adapters: dict[int, torch.Tensor], kind: str,
                   support_frozen: list[torch.Tensor], support_masks: torch.Tensor,
                   query_frozen: list[torch.Tensor], size: tuple[int, int], stride: int = 2,
                   fixed_maps: list[torch.Tensor] | None = None) -> torch.Tensor:
    """Query logits (B, Q, H, W) of B episodes from their frozen support and query features.

    ``fixed_maps``: the maps of the levels below the first adapted one, which no adapter
    changes, computed once by :func:`level_maps` when the same episodes run many steps.
    """
    support = adapted_features(backbone, support_frozen, adapters, kind)
    query = adapted_features(backbone, query_frozen, adapters, kind)
    fixed = list(fixed_maps or [])
    maps = fixed + level_maps(support[len(fixed):], support_masks, query[len(fixed):])
    return decode(head, maps, size, stride)


def episode_loss(logits: torch.Tensor, masks: torch.Tensor) -> torch.Tensor:
    """Binary cross-entropy averaged within each episode, summed over episodes.

    Summing keeps every episode's gradient independent of how many run together.
    """
    per_pixel = F.binary_cross_entropy_with_logits(logits, masks.float(), reduction="none")
    return per_pixel.flatten(1).mean(dim=1).sum()


def autocast(device: str, precision: str):
    """bf16/fp16 autocast on CUDA; fp32 everywhere else."""
    if device == "cuda" and precision in ("bf16", "fp16"):
        return torch.autocast("cuda", dtype=torch.bfloat16 if precision == "bf16" else torch.float16)
    return nullcontext()


# --------------------------------------------------------------------------- SAM


def svn_perturbation(weight: torch.Tensor, grad: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(U, Vᵀ, g_S) of α = U S Vᵀ, with g_S = diag(Uᵀ G V) = ∂L/∂S (no backprop through the SVD)."""
    u, _, vh = torch.linalg.svd(weight.float(), full_matrices=False)
    g_s = ((u.T @ grad.float()) * vh).sum(dim=1)  # (UᵀG)_{i,:} · V_{:,i}
    return u, vh, g_s


def sam_directions(weights: list[torch.Tensor], grads: list[torch.Tensor], mode: str, rho: float) -> list[torch.Tensor]:
    """The SAM ascent step for each adapter weight, of total norm ρ.

    ``all``: ε = ρ G/‖G‖ over every adapter entry (SAM restricted to the adapters).
    ``svn``: ε_S = ρ g_S/‖g_S‖ on the singular values only; the weight moves by U diag(ε_S) Vᵀ,
    i.e. α̂ = U (S + ε_S) Vᵀ. The norm is taken over all adapters together, as SAM does.
    """
    if mode == "all":
        norm = torch.sqrt(sum((g.float() ** 2).sum() for g in grads)) + 1e-12
        return [rho * g.float() / norm for g in grads]
    if mode == "svn":
        parts = [svn_perturbation(w, g) for w, g in zip(weights, grads)]
        norm = torch.sqrt(sum((g_s**2).sum() for _, _, g_s in parts)) + 1e-12
        return [u @ torch.diag(rho * g_s / norm) @ vh for u, vh, g_s in parts]
    raise ValueError(f"sam mode {mode!r}; expected 'all' or 'svn'")


def sam_step(loss_fn, trainable: list[torch.Tensor], adapters: list[torch.Tensor], mode: str, rho: float,
             optimizer: torch.optim.Optimizer) -> float:
    """One optimiser step; with SAM, the gradient of every trainable tensor is taken at the perturbed adapters.

    ``mode`` none: plain step. ``all``/``svn``: perturb the adapters by :func:`sam_directions`,
    take the loss and gradients there, restore the adapters, then step. Returns the clean loss.
    """
    optimizer.zero_grad(set_to_none=True)
    loss = loss_fn()
    if mode == "none" or not adapters:
        loss.backward()
        optimizer.step()
        return float(loss.detach())
    grads = torch.autograd.grad(loss, adapters)
    with torch.no_grad():
        steps = sam_directions([a.detach() for a in adapters], list(grads), mode, rho)
        for a, e in zip(adapters, steps):
            a.add_(e.to(a.dtype))
    perturbed = loss_fn()
    optimizer.zero_grad(set_to_none=True)
    perturbed.backward()
    with torch.no_grad():
        for a, e in zip(adapters, steps):
            a.sub_(e.to(a.dtype))
    optimizer.step()
    return float(loss.detach())
