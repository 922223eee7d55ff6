"""Reasoning in unfamiliar syntax (the ``reasoning`` family, in progress): :mod:`~harness.tasks.reasoning.interpreters`
holds the Brainfuck and Befunge-93 interpreters that score programs in esoteric languages (standard library only:
their source runs inside :mod:`harness.sandbox`)."""
