"""SynEVO's parts, each a function of arrays (numpy; the extractor's training imports torch inside).

* :func:`curriculum`: the easy-to-hard order and each group's normalised gradient distance;
* :func:`elastic`: the dropout and weight decay of a group at a distance;
* :func:`contrastive_loss`: the paper's extractor loss R = ŷ·D + (1 − ŷ)·max(0, m − D) (its form, not Hadsell's);
* :func:`train_extractor`: the linear map E = X W_g trained with it on the groups' daily segments;
* :func:`relative_distance`: the distance between two groups' extracted features on the same days;
* :func:`co_movement_distance`: the gate's distance, that on the same days over that on days shifted by one.
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np


def curriculum(gradients: dict[str, Sequence[np.ndarray]], names: Sequence[str]) -> tuple[list[str], dict[str, float]]:
    """The order of ``names`` easy to hard and every named group's distance, normalised.

    Per group c (the paper): sum_c = Σ_i ‖∇_i‖² over its per-layer gradients, the bench = argmin sum_c, and
    l(d_c) = ‖cat_c − cat_bench‖₂ with cat_c the flattened, concatenated gradients; the order is by ascending l
    (the bench first, l = 0; ties by name). The distances are divided by d_max = max over ``names`` (the paper is
    silent; unnormalised l in the tens makes exp(l − d_max) vanish for every group but the hardest, see the note),
    so the bench is at 0 and the hardest at 1. Groups in ``gradients`` but not in ``names`` (the target) get their
    distance to the same bench on the same scale, clipped to 1."""
    if not names:
        raise ValueError("curriculum: no groups to order")
    flat = {name: np.concatenate([np.ravel(g) for g in grads]) for name, grads in gradients.items()}
    sums = {name: sum(float(np.sum(np.square(g))) for g in gradients[name]) for name in names}
    bench = min(names, key=lambda n: (sums[n], n))
    raw = {name: float(np.linalg.norm(flat[name] - flat[bench])) for name in flat}
    d_max = max(raw[n] for n in names)
    scale = d_max if d_max > 0 else 1.0
    distance = {name: min(value / scale, 1.0) for name, value in raw.items()}
    order = sorted(names, key=lambda n: (distance[n], n != bench, n))
    return order, distance


def elastic(distance: float, p0: float, lambda0: float) -> tuple[float, float]:
    """The paper's p_c = p₀(1 − exp(l(d_c) − d_max)) and λ_c = λ₀(1 − exp(l(d_c) − d_max)) with l normalised
    (d_max = 1): the bench gets (1 − 1/e) · (p₀, λ₀), the hardest group 0."""
    if not 0 <= distance <= 1:
        raise ValueError(f"elastic: distance {distance}; expected a normalised distance in [0, 1]")
    factor = 1.0 - math.exp(distance - 1.0)
    return p0 * factor, lambda0 * factor


def contrastive_loss(d, same):
    """R = ŷ·D + (1 − ŷ)·max(0, m − D) with the margin m = 1 folded in by the caller (works on numpy arrays and
    torch tensors): ``d`` the pairs' distances D (already squared), ``same`` ŷ (1 for pairs of one domain)."""
    hinge = (1.0 - d).clip(min=0.0) if hasattr(d, "clip") else max(0.0, 1.0 - d)
    return same * d + (1 - same) * hinge


def train_extractor(segments: Sequence[np.ndarray], dim: int, steps: int, pairs: int, seed: int, lr: float = 0.01,
                    margin: float = 1.0) -> np.ndarray:
    """W_g (L × ``dim``) of the linear extractor E = X W_g applied to each sensor's daily segment X (N × L), trained
    with Adam on :func:`contrastive_loss` (D the mean squared difference of two segments' features, divided by
    ``margin`` so that the hinge sits at D = margin): each step draws ``pairs`` pairs of one group on two random
    days (ŷ = 1) and as many of two different groups on two random days (ŷ = 0). ``segments``: per group an array
    (days, N, L)."""
    import torch

    if len(segments) < 2:
        raise ValueError("train_extractor: the contrastive loss needs at least two groups")
    generator = torch.Generator().manual_seed(seed)
    data = torch.as_tensor(np.stack(segments), dtype=torch.float32)  # (groups, days, N, L): shared days
    groups, days, _, length = data.shape
    weight = torch.nn.Parameter(torch.randn(length, dim, generator=generator) / math.sqrt(length))
    optimizer = torch.optim.Adam([weight], lr=lr)
    same = torch.cat([torch.ones(pairs), torch.zeros(pairs)])
    for _ in range(steps):
        first = torch.randint(groups, (2 * pairs,), generator=generator)
        offset = torch.randint(1, groups, (pairs,), generator=generator)
        second = torch.cat([first[:pairs], (first[pairs:] + offset) % groups])
        a = data[first, torch.randint(days, (2 * pairs,), generator=generator)]
        b = data[second, torch.randint(days, (2 * pairs,), generator=generator)]
        d = ((a @ weight - b @ weight) ** 2).mean(dim=(1, 2)) / margin
        loss = contrastive_loss(d, same).mean()
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
    return weight.detach().numpy().astype(np.float64)


def relative_distance(weight: np.ndarray, a: np.ndarray, b: np.ndarray) -> float:
    """The gate's D between two groups on the same days: the mean squared difference of their extracted features
    over the days, divided by the sum of their mean squared norms, so that 0 is identical features, 1 is
    uncorrelated ones of any scale and 2 opposite ones. ``a`` and ``b``: (days, N, L), day-aligned."""
    if a.shape != b.shape or len(a) == 0:
        raise ValueError(f"relative_distance: segments of shapes {a.shape} and {b.shape}; expected the same days")
    fa, fb = a @ weight, b @ weight
    denominator = float(np.mean(fa ** 2) + np.mean(fb ** 2))
    return float(np.mean((fa - fb) ** 2) / denominator) if denominator > 0 else 0.0


def co_movement_distance(weight: np.ndarray, a: np.ndarray, b: np.ndarray) -> float:
    """The gate's D: :func:`relative_distance` of two groups' day-to-day deviations (each group's segments less
    their mean over the compared days, so that a daily profile both share, or a difference of profiles that never
    changes, cancels) on the same days, divided by that with ``b``'s days shifted by one (day d against day d + 1,
    cyclically). Two groups that co-move (read the same process) are closer on the same days than on shifted ones,
    below 1; an unrelated group with the same daily profile and statistics is as far on either, about 1; so the
    ratio measures co-movement, not the marginal statistics that a plain distance would also pick up (the note's
    warning). Needs two days or more."""
    if len(a) < 2:
        raise ValueError("co_movement_distance: one day only; the shifted comparison needs two or more")
    a, b = a - a.mean(axis=0), b - b.mean(axis=0)
    shifted = relative_distance(weight, a, np.roll(b, 1, axis=0))
    return relative_distance(weight, a, b) / shifted if shifted > 0 else 1.0
