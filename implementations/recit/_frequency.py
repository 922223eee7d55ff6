"""ReCIT's two token perturbations, batched: the patch-shuffle warm-up and the amplitude resampling.

Both act on patch tokens after the patch embedding and before the positional embedding;
the CLS token is never touched. torch is imported inside the functions, so importing this
module stays cheap.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

FLAT_VARIANCE = 1e-6  # the standardisation's epsilon: a patch below it has no pattern to compare


def patchify(images: "torch.Tensor", patch_size: int) -> "torch.Tensor":
    """(B, 3, H, W) → (B, L, p·p·3) pixel patches, in the patch embedding's row-major order."""
    batch, channels, height, width = images.shape
    rows, cols = height // patch_size, width // patch_size
    x = images[:, :, :rows * patch_size, :cols * patch_size]
    x = x.reshape(batch, channels, rows, patch_size, cols, patch_size)
    return x.permute(0, 2, 4, 3, 5, 1).reshape(batch, rows * cols, patch_size * patch_size * channels)


def patch_similarity(patches: "torch.Tensor") -> "torch.Tensor":
    """(B, L, L) cosine similarity of per-patch standardised pixel vectors.

    Standardising a flat patch (variance below :data:`FLAT_VARIANCE`, e.g. the black
    background of a digit) gives the zero vector, whose cosine is undefined (NaN in the
    authors' code, which leaves such patches in no group). Here two flat patches count as
    identical (similarity 1) and a flat patch is unlike any patterned one (similarity 0).
    """
    import torch

    mean = patches.mean(dim=-1, keepdim=True)
    var = patches.var(dim=-1, keepdim=True)
    z = (patches - mean) / torch.sqrt(var + FLAT_VARIANCE)
    z = z / z.norm(dim=-1, keepdim=True).clamp_min(1e-12)
    similarity = z @ z.transpose(1, 2)
    flat = var.squeeze(-1) < FLAT_VARIANCE
    return torch.where(flat[:, :, None] & flat[:, None, :], torch.ones_like(similarity), similarity)


def greedy_groups(similarity: "torch.Tensor", threshold: float) -> "torch.Tensor":
    """(B, L) group index of every patch: the authors' greedy grouping, vectorised.

    The authors build M = triu(S > threshold) and, for i = 0 … L−1, remove from every row
    k > i the columns that row i still holds. A column j is first held by the smallest i
    with M[i, j] (no earlier row held it, so nobody removed it), and that row then removes
    it from every later row: patch j ends in group i* = min{i ≤ j : S[i, j] > threshold},
    an O(L²) argmax instead of an O(L³) loop. The diagonal always counts as similar, so
    every patch has a group, and the groups partition the patches (group i may be empty,
    or may not contain patch i itself).
    """
    import torch

    length = similarity.shape[-1]
    upper = torch.ones(length, length, dtype=torch.bool, device=similarity.device).triu()
    eye = torch.eye(length, dtype=torch.bool, device=similarity.device)
    claims = ((similarity > threshold) | eye) & upper
    rows = torch.arange(length, device=similarity.device)[:, None].expand(length, length)
    return torch.where(claims, rows, length).amin(dim=1)  # the first row claiming each column


def amplitude_resample(tokens: "torch.Tensor", groups: "torch.Tensor", generator: "torch.Generator") -> "torch.Tensor":
    """Re-sample each token's channel-FFT amplitude from a mixture of group statistics; keep its phase.

    For token e_k ∈ R^D: F_k = rfft(e_k) along the channels, amplitude A_k = |F_k|. For every
    non-empty group g, μ_g and s_g are the mean and (population) standard deviation of its
    members' amplitudes, per frequency. Each (k, g) draws one scalar n ~ N(0, 1), giving
    Â_{k,g} = μ_g + s_g·n, and the new amplitude is A'_k = Σ_g w_{k,g} Â_{k,g}, clamped at 0;
    e'_k = irfft(A'_k · F_k/|F_k|). The statistics are detached; the gradient flows through
    the phase, as in the authors' code.

    Mixing weights (a documented deviation): the authors draw w ≈ U[−2, 2] and divide by
    the signed sum over the non-empty groups, clamped at 1e-7, so a sum near or below zero
    multiplies the amplitudes by up to 10^7. Here w = u / Σ u with u ~ U(0, 1] over the
    non-empty groups — the magnitudes of their draws — a convex combination that keeps
    A'_k within the range of the group statistics. The clamp at 0 keeps amplitudes
    amplitudes: a negative one would flip the phase, i.e. change the content.

    The full-spectrum FFT of the authors' code gives the same result: a real token's
    amplitudes are symmetric, the resampled ones too, so the inverse is real.
    """
    import torch

    batch, length, dim = tokens.shape
    dtype = tokens.dtype
    if dtype in (torch.float16, torch.bfloat16):
        tokens = tokens.float()  # FFTs in half precision need power-of-two sizes
    spectrum = torch.fft.rfft(tokens, dim=-1)  # (B, L, F)
    amplitude = spectrum.abs()
    phase = spectrum / amplitude.clamp_min(1e-12)
    stats = amplitude.detach()
    membership = torch.nn.functional.one_hot(groups, length).transpose(1, 2).to(stats.dtype)  # (B, g, k)
    count = membership.sum(dim=-1)  # (B, g)
    nonempty = count > 0
    mean = membership @ stats / count.clamp_min(1)[..., None]  # (B, g, F)
    var = membership @ stats.square() / count.clamp_min(1)[..., None] - mean.square()
    std = var.clamp_min(0).sqrt()
    device = tokens.device
    draws = dict(generator=generator, dtype=stats.dtype)
    noise = torch.randn((batch, length, length), **draws).to(device)  # (B, k, g)
    weights = (1.0 - torch.rand((batch, length, length), **draws)).to(device) * nonempty[:, None, :]
    weights = weights / weights.sum(dim=-1, keepdim=True)
    # Σ_g w (μ_g + s_g n) without materialising the (B, L, L, F) tensor of draws
    new_amplitude = (weights @ mean + (weights * noise) @ std).clamp_min(0)
    return torch.fft.irfft(new_amplitude * phase, n=dim, dim=-1).to(dtype)


def shuffle_tokens(tokens: "torch.Tensor", generator: "torch.Generator") -> "torch.Tensor":
    """One random permutation of the patch tokens, shared by the whole batch (the warm-up's)."""
    import torch

    perm = torch.randperm(tokens.shape[1], generator=generator).to(tokens.device)
    return tokens[:, perm]
