"""DDO as a method of ``generative.finetune``."""
from __future__ import annotations


def ddo_loss(model, reference, real, fake, alpha: float, beta: float):
    """The DDO objective on one real and one fake :class:`~harness.tasks.generative.finetune.Batch`.

    With e(x) = λ(σ)·‖D(x + σn; σ) − x‖² summed over dimensions (:func:`harness.tasks.generative.edm.weighted_error`), the
    log-ratio proxy is Δ = −(e_θ − e_ref) at the same (σ, n) for both models, and
    −log σ(βΔ) = softplus(β(e_θ − e_ref)) on real data, −α·log(1 − σ(βΔ)) = α·softplus(−β(e_θ − e_ref)) on fakes.
    The reference's errors are computed without gradients; the loss is the batch mean."""
    import torch
    import torch.nn.functional as F

    from harness.tasks.generative.edm import weighted_error

    with torch.no_grad():
        ref_real = weighted_error(reference, real.x, real.sigma, real.noise)
        ref_fake = weighted_error(reference, fake.x, fake.sigma, fake.noise)
    gap_real = weighted_error(model, real.x, real.sigma, real.noise) - ref_real
    gap_fake = weighted_error(model, fake.x, fake.sigma, fake.noise) - ref_fake
    return F.softplus(beta * gap_real).mean() + alpha * F.softplus(-beta * gap_fake).mean()


class DDO:
    """``rounds`` rounds of DDO (each on fresh samples of its reference, the best checkpoint kept), weight ``alpha``
    on the fake term and ``beta`` on the log-ratio."""

    def __init__(self, alpha: float = 1.0, beta: float = 0.1, rounds: int = 1):
        self.alpha, self.beta, self.rounds = alpha, beta, rounds

    def finetune(self, session):
        if self.rounds < 1:
            raise ValueError(f"DDO: rounds = {self.rounds}; expected at least 1")
        model = session.train_rounds(
            lambda model, reference, real, fake: ddo_loss(model, reference, real, fake, self.alpha, self.beta),
            self.rounds, reference_samples=True)
        return session.ode(model)
