"""Every use the harness makes of Optuna beyond its public API, in one place.

Checked against Optuna 5.1.0 (``pyproject.toml`` allows ``>=4.0,<6``); ``tests/test_optuna_private.py``
calls each of these, so an Optuna that changes one fails there, by name, rather than somewhere in a
resumed tuning run.

- :func:`stale_trial_numbers`: the trials whose heartbeat went stale. Optuna keeps that list private
  (``BaseHeartbeat._get_stale_trial_ids``, which its public ``optuna.storages.fail_stale_trials`` uses
  to fail them); the harness runs such trials again instead of failing them (:mod:`harness.tuning`).
- :func:`sampler_state` and :func:`restored_sampler`: a sampler pickled after each trial's draw and
  unpickled by a resumed run, so that its draws continue exactly. A pickle holds the sampler's private
  attributes: an Optuna whose samplers changed cannot read an older one (``restored_sampler`` then
  answers None, and the caller says the resumed draws are not exact).
"""
from __future__ import annotations

import base64
import pickle
from typing import Any


def has_heartbeat(storage: Any) -> bool:
    """Whether ``storage`` records trial heartbeats (an RDB storage opened with a heartbeat interval).

    Optuna exports no public name for such a storage (its base class, ``optuna.storages._heartbeat.
    BaseHeartbeat``, is private): asked through the public ``get_heartbeat_interval`` of RDBStorage."""
    interval = getattr(storage, "get_heartbeat_interval", None)
    return callable(interval) and interval() is not None


def stale_trial_numbers(storage: Any, study_id: int) -> set[int]:
    """The numbers of the study's RUNNING trials whose last heartbeat is older than the storage's grace period;
    none on a storage without heartbeats."""
    if not has_heartbeat(storage):
        return set()
    return {storage.get_trial(trial_id).number for trial_id in storage._get_stale_trial_ids(study_id)}


def sampler_state(sampler: Any) -> str:
    """The sampler as it is now (its random state and whatever it learnt), as text for a trial's system attr."""
    return base64.b64encode(pickle.dumps(sampler)).decode("ascii")


def restored_sampler(text: str) -> Any | None:
    """The sampler :func:`sampler_state` saved, or None when this Optuna cannot read it."""
    try:
        # the storage is this user's own, and Optuna's CMA-ES keeps pickles in it the same way
        return pickle.loads(base64.b64decode(text))
    except Exception:
        return None
