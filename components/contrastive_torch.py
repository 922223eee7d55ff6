"""The losses of ``contrastive.reference``'s methods (torch at import: import this module only where torch is needed).

* :func:`global_contrastive_loss`: the global contrastive loss (GCL, SogCLR/FastCLIP's form at γ = 1) with each
  pair's logit optionally shifted by a reference's: DRRho-CLIP's loss, and without a shift its no-reference control;
* :func:`distillation_loss`: cross-entropy from a teacher's softmax to the student's log-softmax, both anchors;
* :func:`learnability`: each candidate pair's InfoNCE loss against a set of pairs (JEST's scores).

Every similarity matrix ``s`` is (B, B) with ``s[i, j] = <image_i, text_j>`` of unit-norm embeddings; the
diagonal holds the positive pairs. Every log-sum-exp is the task's floored one
(:func:`harness.tasks.contrastive.towers.logsumexp`).
"""
from __future__ import annotations

import math

import torch

from harness.tasks.contrastive.towers import log_softmax, logsumexp

TEACHER_SCALE = 100.0  # the reference's logit scale as a teacher and in JEST's scores (upstream's)


def _off_diagonal(n: int, device) -> torch.Tensor:
    return ~torch.eye(n, dtype=torch.bool, device=device)


def global_contrastive_loss(s: torch.Tensor, tau: float, eps: float, shift: torch.Tensor | None = None) -> torch.Tensor:
    """The mean over anchors of F_i^img + F_i^txt with

        F_i^img = τ log(ε + 1/(B−1) Σ_{j≠i} exp([(s_ij − s_ii) − (r_ij − r_ii)] / τ)),

    F_i^txt the same over the column (text anchor i against every image j), and r = ``shift`` (a frozen reference's
    similarities of the same batch, scaled by the target's τ, as DRRho-CLIP's code does) or 0 (the global
    contrastive loss with no reference). ε is not only a guard: an anchor's gradient is scaled by g/(ε + g), so at
    ε = 1e-4 an anchor stops contributing once its margin passes about τ ln(1/ε). The mini-batch estimate of the
    inner mean (FastCLIP's γ = 1, the paper's setting) is used: no per-sample buffer."""
    diff = s if shift is None else s - shift.detach()
    n = len(s)
    keep = _off_diagonal(n, s.device)
    positive = torch.diagonal(diff)

    def anchor_terms(margins: torch.Tensor) -> torch.Tensor:  # margins[i, j] = diff_ij − diff_ii over row i
        scaled = margins / tau
        # log of the mean over j ≠ i of exp(scaled), stably, then log(ε + that mean)
        log_mean = logsumexp(scaled.masked_fill(~keep, float("-inf")), 1) - math.log(n - 1)
        return tau * torch.logaddexp(log_mean, torch.full_like(log_mean, math.log(eps)))

    image_anchor = anchor_terms(diff - positive[:, None])
    text_anchor = anchor_terms(diff.T - positive[:, None])
    return (image_anchor + text_anchor).mean()


def distillation_loss(s: torch.Tensor, tau: float, teacher: torch.Tensor, teacher_scale: float = 100.0) -> torch.Tensor:
    """The mean over both anchors of the cross-entropy from softmax(``teacher_scale`` · teacher similarities) to
    log-softmax(s / τ): the KL from the teacher up to a constant (the teacher detached)."""
    target = teacher.detach() * teacher_scale
    student = s / tau
    image_anchor = -(log_softmax(target, 1).exp() * log_softmax(student, 1)).sum(1)
    text_anchor = -(log_softmax(target, 0).exp() * log_softmax(student, 0)).sum(0)
    return 0.5 * (image_anchor + text_anchor).mean()


def learnability(s: torch.Tensor, candidates: torch.Tensor, among: torch.Tensor | None, logit_scale: float) -> torch.Tensor:
    """(C,) each candidate pair's InfoNCE loss against the pairs ``among`` (indices into the super-batch whose (n, n)
    similarities are ``s``; None: all n) and itself: the mean of its image→text and text→image cross-entropies at
    ``logit_scale``, a candidate that is also among them counted once."""
    if among is None:  # within the whole super-batch: each row's and column's log-sum-exp, no gather
        logits = s * logit_scale
        every = 0.5 * (logsumexp(logits, 1) + logsumexp(logits, 0)) - torch.diagonal(logits)
        return every[candidates]
    positive = s[candidates, candidates] * logit_scale
    others = among[None, :] != candidates[:, None]  # (C, A): a candidate among the others is its own positive
    rows = (s[candidates[:, None], among[None, :]] * logit_scale).masked_fill(~others, float("-inf"))
    columns = (s[among[None, :], candidates[:, None]] * logit_scale).masked_fill(~others, float("-inf"))
    image_anchor = torch.logaddexp(logsumexp(rows, 1), positive) - positive
    text_anchor = torch.logaddexp(logsumexp(columns, 1), positive) - positive
    return 0.5 * (image_anchor + text_anchor)
