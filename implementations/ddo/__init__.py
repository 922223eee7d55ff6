"""DDO: Zheng, Chen, Chen, He, Liu, Zhu & Zhang, "Direct Discriminative Optimization: Your Likelihood-Based Visual
Generative Model is Secretly a GAN Discriminator" (ICML 2025).

The fine-tuned model p_θ and the frozen reference p_ref define an implicit discriminator d_θ = σ(β·log p_θ/p_ref);
θ is trained with the GAN discriminator loss, real = data and fake = samples of the reference, in rounds, each
round's best model becoming the next round's reference. For a diffusion model the log-ratio is estimated by the
difference of the two models' weighted denoising errors at one shared noise draw; for a causal (autoregressive)
model it is exact, the difference of the two log-likelihoods:

* :func:`ddo_loss`: softplus(β(e_θ − e_ref)) on real data + α·softplus(−β(e_θ − e_ref)) on reference samples;
* :class:`DDO`: the method of ``generative.finetune``.

Written from the paper's equations as its public notes give them (no official diffusion training code is public).
Torch-free at import.
"""
from implementations.ddo._method import DDO, ddo_loss

__all__ = ["DDO", "ddo_loss"]
