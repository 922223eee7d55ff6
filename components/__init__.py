"""Code shared by a paper's method and its baselines: one neutral place both import.

Dependencies point one way: ``implementations/`` and ``baselines/`` may import from here;
nothing here imports either of them (``tests/test_layering.py`` checks), so ``baselines/``
never needs ``implementations/``. A module here holds the building blocks both sides use (a
network and its weights, a training loop with hooks, Laplacian solvers, cluster
enumeration), never a method's own contribution. Modules import their heavy dependencies
inside functions, so that ``harness validate`` imports them without torch.
"""
