"""Code shared by a paper's method and its baselines: one neutral place both import.

Dependencies point one way: ``implementations/`` and ``baselines/`` may import from here;
nothing here imports either of them (``tests/test_layering.py`` checks). A module here holds
the building blocks both sides use (a network, its weights, a training loop with hooks),
never a method's own contribution. Modules import their heavy dependencies inside functions,
so that ``harness validate`` imports them without torch.
"""
