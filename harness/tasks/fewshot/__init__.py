"""Few-shot tasks across domains: classification (``fewshot.cdfsl``) and segmentation (``fewshot.cdfss``).

``images`` holds the image utilities both share (digit upsampling, procedural gratings and
textures, an image-folder reader, linear CKA) and ``episodes`` the seeded episode sampler.
Nothing in this package imports torch at module level: ``harness validate`` imports the
task modules to read parameter names.
"""
