"""DRRho-CLIP: Wei, Lin, Ye, Song, Cao, Thai & Yang, "Model Steering: Learning with a Reference Model Improves
Generalization Bounds and Scaling Laws" (ICML 2025).

The DRRho risk is a KL-regularised DRO over the excess loss ℓ(θ, z) − ℓ(θ_ref, z); for contrastive learning, viewed
as DRO over each anchor's negatives, it is the global contrastive loss with each pair's logit shifted by the frozen
reference's similarity (:func:`components.contrastive_torch.global_contrastive_loss` with ``shift``): negatives the
reference also finds similar (likely same-class pairs) are weighted down.

* :class:`DRRhoCLIP`: the method of ``contrastive.reference``, optionally with distillation from the reference.

Written from the paper's equations as its public notes give them. Torch-free at import.
"""
from implementations.drrho_clip._method import DRRhoCLIP

__all__ = ["DRRhoCLIP"]
