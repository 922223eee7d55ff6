"""Baselines of ``contrastive.reference`` (torch imported where used).

* :class:`GlobalContrastive`: the global contrastive loss at a fixed temperature and eps with no reference (the
  control that isolates DRRho-CLIP's reference), optionally plus distillation from the reference;
* :class:`CLIP`: InfoNCE with a learnable temperature;
* :class:`JEST`: learnability-based selection of each batch from a super-batch, trained with the global contrastive
  loss;
* :class:`ReferenceModel` and :class:`LinearMap`: sanity rows; :class:`Untrained`: the trivial answer.
"""
from __future__ import annotations

import math

INITIAL_TAU = 0.07  # CLIP's initial temperature
MAX_LOGIT_SCALE = 100.0  # CLIP's cap on the learnable logit scale


class GlobalContrastive:
    """The global contrastive loss at ``tau`` and ``eps`` (DRRho-CLIP's with no shift), plus ``distill`` × τ × the
    distillation loss from the reference (0: none; FastCLIP with distillation)."""

    def __init__(self, tau: float = 0.05, eps: float = 1e-4, distill: float = 0.0):
        self.tau, self.eps, self.distill = tau, eps, distill

    def fit(self, session):
        from components.contrastive_torch import TEACHER_SCALE, distillation_loss, global_contrastive_loss

        if not self.tau > 0 or not self.eps > 0 or self.distill < 0:
            raise ValueError(f"GlobalContrastive: tau = {self.tau}, eps = {self.eps}, distill = {self.distill}; "
                             "expected tau > 0, eps > 0 and distill ≥ 0")

        def loss(batch):
            value = global_contrastive_loss(batch.s, self.tau, self.eps)
            if self.distill:
                teacher = session.similarities(session.reference, batch.images, batch.texts)
                value = value + self.distill * self.tau * distillation_loss(batch.s, self.tau, teacher, TEACHER_SCALE)
            return value

        return session.train(loss)


class CLIP:
    """CLIP's symmetric InfoNCE with a learnable logit scale, from 1/``initial_tau``, capped at 100 (OpenCLIP's)."""

    def __init__(self, initial_tau: float = INITIAL_TAU):
        self.initial_tau = initial_tau

    def fit(self, session):
        import torch

        from harness.tasks.contrastive.towers import clip_loss

        if not 0 < self.initial_tau:
            raise ValueError(f"CLIP: initial_tau = {self.initial_tau}; expected a positive temperature")
        log_scale = torch.nn.Parameter(torch.tensor(math.log(1.0 / self.initial_tau)))
        return session.train(lambda batch: clip_loss(batch.s, log_scale.exp().clamp(max=MAX_LOGIT_SCALE)),
                             parameters=[log_scale])


class JEST:
    """JEST-style selection (the authors' ``jointly_sample_batch_softmax`` as the paper note reads it): each step
    draws ``candidates`` × the batch, scores each pair's learnability (its InfoNCE loss under the learner minus under
    the reference, both at logit scale 100, within the super-batch), and keeps a batch in ``chunks`` chunks, each
    sampled without replacement with probability ∝ (score − min score) among the pairs left, the scores of the
    later chunks recomputed against the pairs kept so far; the kept batch trains with the global contrastive loss
    at ``tau`` and ``eps``. The super-batch's pairs are counted in ``scored_samples``."""

    def __init__(self, tau: float = 0.05, eps: float = 1e-4, candidates: int = 5, chunks: int = 2):
        self.tau, self.eps, self.candidates, self.chunks = tau, eps, candidates, chunks

    def fit(self, session):
        import torch

        from components.contrastive_torch import TEACHER_SCALE, global_contrastive_loss, learnability

        if self.candidates < 2 or self.chunks < 1 or not self.tau > 0 or not self.eps > 0:
            raise ValueError(f"JEST: candidates = {self.candidates}, chunks = {self.chunks}, tau = {self.tau}, eps = "
                             f"{self.eps}; expected candidates ≥ 2, chunks ≥ 1, tau > 0, eps > 0")
        generator = torch.Generator().manual_seed(int(session.context.rng("jest").integers(2**62)))

        def select(network, images, texts, keep):
            with torch.no_grad():
                learner = network(images, texts)
                reference = session.similarities(session.reference, images, texts)
            everyone = torch.arange(len(images))
            kept = torch.zeros(0, dtype=torch.long)
            for size in [keep // self.chunks + (1 if i < keep % self.chunks else 0) for i in range(self.chunks)]:
                pool = everyone[~torch.isin(everyone, kept)]
                among = None if len(kept) == 0 else kept  # the first chunk: within the whole super-batch
                scores = (learnability(learner, pool, among, TEACHER_SCALE)
                          - learnability(reference, pool, among, TEACHER_SCALE))
                chosen = torch.multinomial(scores - scores.min() + 1e-12, size, replacement=False, generator=generator)
                kept = torch.cat([kept, pool[chosen]])
            return kept

        return session.train(lambda batch: global_contrastive_loss(batch.s, self.tau, self.eps), select=select,
                             candidates=self.candidates)


class ReferenceModel:
    """The pretrained reference itself (a sanity row: a target that is not above it gained nothing from training)."""

    def fit(self, session):
        return session.reference


class _Projected:
    """Images through a linear map into the text space, texts as they are, both scaled to unit norm."""

    def __init__(self, weights, bias):
        self.weights, self.bias = weights, bias

    def embed_images(self, images):
        import torch

        return torch.nn.functional.normalize(images @ self.weights + self.bias, dim=-1)

    def embed_texts(self, texts):
        import torch

        return torch.nn.functional.normalize(texts, dim=-1)


class LinearMap:
    """Ridge regression (penalty ``alpha``) from the training pairs' raw image view to their raw text view; an image
    is embedded as its predicted text, a text as itself: a linear probe of the pairing on the raw views, with no
    network and no reference (a sanity row)."""

    def __init__(self, alpha: float = 1.0):
        self.alpha = alpha

    def fit(self, session):
        import torch
        from sklearn.linear_model import Ridge

        ridge = Ridge(alpha=self.alpha).fit(session.train_images, session.train_texts)
        return _Projected(torch.as_tensor(ridge.coef_.T, dtype=torch.float32),
                          torch.as_tensor(ridge.intercept_, dtype=torch.float32))


class Untrained:
    """The target network at its initial weights, the same as every arm starts from: the trivial answer."""

    def fit(self, session):
        return session.new_network().eval().requires_grad_(False)
