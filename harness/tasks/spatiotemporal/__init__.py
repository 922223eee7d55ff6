"""Cross-domain spatiotemporal forecasting (``spatiotemporal.crossdomain``): train one forecaster over several
related sample groups on a sensor graph and forecast a held-out group, few-shot or zero-shot.

Only :mod:`~harness.tasks.spatiotemporal.network` imports torch at module level, and the task imports it inside its
functions: ``harness validate`` imports the task modules to read parameter names.
"""
