"""Baselines of ``generative.finetune``: continued maximum likelihood (the control DDO must beat at equal steps),
score sharpening (a lower sampling temperature, no training), the reference as it is, a fresh sample of the data
(the sanity row), and the trivial answer: one Gaussian fitted to continuous data, independent pixels fitted to binary
data. Each runs on both of the task's model families through the session. Torch-free at import."""
from __future__ import annotations


class ContinuedMLE:
    """The reference trained on with its own maximum-likelihood loss (the denoising loss; the exact negative
    log-likelihood of a causal model), through the task's loop (the same steps, batches, learning rate and
    checkpoint selection as DDO's ``rounds`` rounds; no reference samples)."""

    def __init__(self, rounds: int = 1):
        self.rounds = rounds

    def finetune(self, session):
        model = session.train_rounds(lambda model, reference, real, fake: session.mle_loss(model, real),
                                     self.rounds, reference_samples=False)
        return session.sampler(model)


class ScoreSharpening:
    """The reference sampled at a temperature 1/w, w = ``scale``: a denoiser's score times w (D_w = x + w(D − x),
    approximately p_ref^w), a causal model's logits times w."""

    def __init__(self, scale: float = 1.5):
        self.scale = scale

    def finetune(self, session):
        return session.sampler(session.reference, scale=self.scale)


class Reference:
    """The pretrained reference, sampled as it is."""

    def finetune(self, session):
        return session.sampler(session.reference)


class FreshData:
    """A fresh sample of the data, disjoint from the scoring set (the sanity row: the best a generator can do)."""

    def finetune(self, session):
        return session.fresh_data()


def _binary(rows) -> bool:
    import numpy as np

    return bool(np.isin(np.asarray(rows), (0.0, 1.0)).all())


class GaussianFit:
    """One Gaussian with the training data's mean and covariance: the trivial answer on continuous data."""

    def finetune(self, session):
        import numpy as np

        from harness.tasks.base import DataUnavailable

        if _binary(session.training_data):
            raise DataUnavailable("gaussian-fit models continuous data; on binary pixels the trivial answer is "
                                  "independent-pixels")
        data = np.asarray(session.training_data, dtype=np.float64)
        return _Gaussian(data.mean(0), np.cov(data, rowvar=False))


class IndependentPixels:
    """Each pixel an independent Bernoulli with its training frequency (add-one smoothed): the trivial answer on
    binary data (no pixel reads another), with an exact likelihood."""

    def finetune(self, session):
        import numpy as np

        from harness.tasks.base import DataUnavailable

        if not _binary(session.training_data):
            raise DataUnavailable("independent-pixels models binary pixels (0 or 1); on continuous data the "
                                  "trivial answer is gaussian-fit")
        data = np.asarray(session.training_data, dtype=np.float64)
        return _Bernoulli((data.sum(0) + 1) / (len(data) + 2))


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


class _Bernoulli:
    def __init__(self, means):
        import torch

        self.means = torch.as_tensor(means, dtype=torch.float32)

    def sample(self, count, generator):
        import torch

        return (torch.rand(count, len(self.means), generator=generator) < self.means).float()

    def log_prob(self, x):
        import torch

        x = x.float()
        return (x * torch.log(self.means) + (1 - x) * torch.log1p(-self.means)).sum(-1)
