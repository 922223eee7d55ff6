"""Baselines of ``generative.finetune``: continued maximum likelihood (the control DDO must beat at equal steps),
score sharpening (a lower sampling temperature, no training), the reference as it is, a fresh sample of the data
(the sanity row) and one Gaussian fitted to the data (the trivial answer). Torch-free at import."""
from __future__ import annotations


class ContinuedMLE:
    """The reference trained on with its own EDM denoising loss, through the task's loop (the same steps, batches,
    learning rate and checkpoint selection as DDO's ``rounds`` rounds; no reference samples)."""

    def __init__(self, rounds: int = 1):
        self.rounds = rounds

    def finetune(self, session):
        from harness.tasks.generative.edm import denoising_loss

        model = session.train_rounds(lambda model, reference, real, fake: denoising_loss(
            model, real.x, real.sigma, real.noise), self.rounds, reference_samples=False)
        return session.ode(model)


class ScoreSharpening:
    """The reference sampled with its score multiplied by ``scale`` (D_w = x + w(D − x)): approximately p_ref^w, a
    sampling temperature of 1/w."""

    def __init__(self, scale: float = 1.5):
        self.scale = scale

    def finetune(self, session):
        return session.ode(session.reference, score_scale=self.scale)


class Reference:
    """The pretrained reference, sampled as it is."""

    def finetune(self, session):
        return session.ode(session.reference)


class FreshData:
    """A fresh sample of the data, disjoint from the scoring set (the sanity row: the best a generator can do)."""

    def finetune(self, session):
        return session.fresh_data()


class GaussianFit:
    """One Gaussian with the training data's mean and covariance: the trivial answer."""

    def finetune(self, session):
        import numpy as np

        data = np.asarray(session.training_data, dtype=np.float64)
        return _Gaussian(data.mean(0), np.cov(data, rowvar=False))


class _Gaussian:
    def __init__(self, mean, covariance):
        import numpy as np
        import torch

        self.mean = torch.as_tensor(mean, dtype=torch.float32)
        jitter = 1e-6 * np.trace(covariance) / len(mean)
        self.factor = torch.as_tensor(np.linalg.cholesky(covariance + jitter * np.eye(len(mean))),
                                      dtype=torch.float32)

    def sample(self, count, generator):
        import torch

        return self.mean + torch.randn(count, len(self.mean), generator=generator) @ self.factor.T
