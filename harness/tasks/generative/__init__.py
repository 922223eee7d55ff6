"""Generative models (``generative.finetune``): fine-tune a pretrained likelihood model's samples towards the data.

Nothing in this package imports torch at module level: ``harness validate`` imports the task modules to read
parameter names (``edm.py``, which does, is imported only inside functions).
"""
