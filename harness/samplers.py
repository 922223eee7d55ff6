"""The Optuna sampler a spec names (``tuning.sampler``), as Optuna's public API builds it.

Below both :mod:`harness.spec.load` (which checks a spec's sampler arguments against the class) and
:mod:`harness.tuning` (which builds the sampler of each study); Optuna is imported only when a sampler
is asked for.
"""
from __future__ import annotations

from typing import Any

from harness.spec.model import Spec

def sampler_class(name: str):
    """The class of sampler ``name``: one of the names the spec schema's ``tuning.sampler.name`` allows."""
    import optuna

    return {
        "tpe": optuna.samplers.TPESampler,
        "random": optuna.samplers.RandomSampler,
        "cmaes": optuna.samplers.CmaEsSampler,
        "qmc": optuna.samplers.QMCSampler,
        "gp": optuna.samplers.GPSampler,
    }[name]


def sampler_arguments(spec: Spec) -> dict[str, Any]:
    """The spec's sampler arguments, with TPE's constant liar on for batches unless the spec says otherwise."""
    args = dict(spec.tuning.sampler_args)
    if spec.tuning.sampler == "tpe" and spec.tuning.batch > 1:
        args.setdefault("constant_liar", True)
    return args


def make_sampler(spec: Spec):
    import warnings

    import optuna

    with warnings.catch_warnings():
        # QMC and GP samplers are flagged experimental; the spec chose one on purpose
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        return sampler_class(spec.tuning.sampler)(seed=spec.tuning.sampler_seed, **sampler_arguments(spec))
