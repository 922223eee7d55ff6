"""Code shared by a paper's method and its baselines, importing neither.

A method (``implementations/``) and the baselines it is compared with (``baselines/``) import
what they share from here, so that dependencies point one way: ``baselines/`` never imports
``implementations/``, and the shared code has one home.
"""
