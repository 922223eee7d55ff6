"""Code generation with execution feedback (the ``codegen`` family): :mod:`~harness.tasks.codegen.feedback` holds
the task ``codegen.execution_feedback`` (multi-turn episodes whose replies run on public tests and are graded on
private ones, n@k solve rates), :mod:`~harness.tasks.codegen.problems` the bundled Python problems."""
