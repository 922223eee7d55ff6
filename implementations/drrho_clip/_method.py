"""DRRho-CLIP as a method of ``contrastive.reference``."""
from __future__ import annotations

REFERENCES = ("trained", "random")


class DRRhoCLIP:
    """The global contrastive loss at a fixed temperature ``tau`` and ``eps`` with each logit shifted by the
    reference's similarity (scaled by the target's τ), plus ``distill`` × τ × the distillation loss from the
    reference (0: none); ``reference`` ``random`` uses a network at its random initialisation instead (the ablation
    that should match the no-reference control)."""

    def __init__(self, tau: float = 0.05, eps: float = 1e-4, distill: float = 0.0, reference: str = "trained"):
        self.tau, self.eps, self.distill, self.reference = tau, eps, distill, reference

    def fit(self, session):
        from components.contrastive_torch import TEACHER_SCALE, distillation_loss, global_contrastive_loss

        if self.reference not in REFERENCES:
            raise ValueError(f"DRRhoCLIP: reference = {self.reference!r}; expected one of {REFERENCES}")
        if not self.tau > 0 or not self.eps > 0 or self.distill < 0:
            raise ValueError(f"DRRhoCLIP: tau = {self.tau}, eps = {self.eps}, distill = {self.distill}; expected "
                             "tau > 0, eps > 0 and distill ≥ 0")
        reference = session.reference if self.reference == "trained" else session.random_reference()

        def loss(batch):
            shift = session.similarities(reference, batch.images, batch.texts)
            value = global_contrastive_loss(batch.s, self.tau, self.eps, shift=shift)
            if self.distill:
                value = value + self.distill * self.tau * distillation_loss(batch.s, self.tau, shift, TEACHER_SCALE)
            return value

        return session.train(loss)
