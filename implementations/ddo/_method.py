"""DDO as a method of ``generative.finetune``."""
from __future__ import annotations


def ddo_loss(model, reference, real, fake, alpha: float, beta: float, nll):
    """The DDO objective on one real and one fake :class:`~harness.tasks.generative.finetune.Batch`.

    ``nll(model, batch)`` is the per-row negative log-likelihood: exact for a causal model, for a denoiser the
    ELBO's estimate e(x) = λ(σ)·‖D(x + σn; σ) − x‖² summed over dimensions at the batch's (σ, n), the same draw for
    both models. The log-ratio is Δ = log p_θ − log p_ref = −(e_θ − e_ref), and
    −log σ(βΔ) = softplus(β(e_θ − e_ref)) on real data, −α·log(1 − σ(βΔ)) = α·softplus(−β(e_θ − e_ref)) on fakes.
    The reference's terms are computed without gradients; the loss is the batch mean."""
    import torch
    import torch.nn.functional as F

    with torch.no_grad():
        ref_real, ref_fake = nll(reference, real), nll(reference, fake)
    gap_real = nll(model, real) - ref_real
    gap_fake = nll(model, fake) - ref_fake
    return F.softplus(beta * gap_real).mean() + alpha * F.softplus(-beta * gap_fake).mean()


class DDO:
    """``rounds`` rounds of DDO (each on fresh samples of its reference, the best checkpoint kept), weight ``alpha``
    on the fake term and ``beta`` on the log-ratio; the log-likelihoods are the session's (exact for a causal model,
    the ELBO's estimate for a denoiser)."""

    def __init__(self, alpha: float = 1.0, beta: float = 0.1, rounds: int = 1):
        self.alpha, self.beta, self.rounds = alpha, beta, rounds

    def finetune(self, session):
        if self.rounds < 1:
            raise ValueError(f"DDO: rounds = {self.rounds}; expected at least 1")
        model = session.train_rounds(
            lambda model, reference, real, fake: ddo_loss(model, reference, real, fake, self.alpha, self.beta,
                                                          session.nll),
            self.rounds, reference_samples=True)
        return session.sampler(model)
