"""harness.tasks.base.SourceTraining: one source training per worker, reused by the cells that follow."""
from __future__ import annotations

import pytest

from harness.tasks.base import Context, SourceTraining


class _Counting:
    """A method that counts its source trainings; ``probe`` acts only after source training."""

    after_source_params = ("probe",)
    fits = 0

    def __init__(self, *, width: int = 4, probe: bool = False):
        self.width = width
        self.probe = probe

    def fit_source(self) -> float | None:
        type(self).fits += 1
        self.weights_ = [float(self.width)] * self.width
        self.fitted_at_ = type(self).fits
        self._scratch_ = "private: never copied"
        self.note = "no underscore: never copied"
        return None


class _Forgetful:
    """Learns nothing it keeps in a public ``_`` attribute: its training cannot be reused."""

    def __init__(self, *, width: int = 4):
        self.width = width

    def fit_source(self) -> None:
        self._hidden = self.width
        self.model = "kept without the trailing underscore"


def test_trains_once_and_hands_the_fitted_attributes_to_a_later_instance():
    _Counting.fits = 0
    cache = SourceTraining(2)
    context = Context(seed=3, device="cpu", precision="fp32")
    first = _Counting(width=4, probe=False)
    train_s = cache.fit(first, context, ("source-a", 10), first.fit_source)
    assert _Counting.fits == 1 and train_s >= 0.0
    # the same source parameters, another after-source parameter: no training, the fitted attributes set
    later = _Counting(width=4, probe=True)
    assert cache.fit(later, context, ("source-a", 10), later.fit_source) == train_s  # the original seconds
    assert _Counting.fits == 1
    assert later.weights_ is first.weights_ and later.fitted_at_ == 1
    assert later.probe is True  # its own parameters stay its own
    assert not hasattr(later, "_scratch_") and not hasattr(later, "note")  # only public `_` attributes travel
    # anything the training depends on retrains: a source parameter, the source key, the seed, the device
    for method, ctx, key in ((_Counting(width=5), context, ("source-a", 10)),
                             (_Counting(width=4), context, ("source-a", 20)),
                             (_Counting(width=4), Context(seed=4), ("source-a", 10)),
                             (_Counting(width=4), Context(seed=3, device="cuda"), ("source-a", 10))):
        cache.fit(method, ctx, key, method.fit_source)
    assert _Counting.fits == 5


def test_seconds_reused_by_the_method_are_added():
    cache = SourceTraining(1)
    method = _Counting()

    def train() -> float:
        method.fit_source()
        return 100.0  # the seconds of a part it took from a cache of its own

    train_s = cache.fit(method, Context(seed=0), ("s",), train)
    assert 100.0 <= train_s < 100.0 + 60.0


def test_the_cache_is_bounded_and_clearable():
    _Counting.fits = 0
    cache = SourceTraining(1)
    context = Context(seed=0)
    for width in (1, 2, 1):  # width 2 evicts width 1
        method = _Counting(width=width)
        cache.fit(method, context, (), method.fit_source)
    assert _Counting.fits == 3
    cache.clear()
    method = _Counting(width=1)
    cache.fit(method, context, (), method.fit_source)
    assert _Counting.fits == 4


def test_a_method_that_keeps_nothing_public_is_refused():
    cache = SourceTraining(2)
    method = _Forgetful()
    with pytest.raises(TypeError, match=r"_Forgetful kept nothing from its source training .* ending in '_'"):
        cache.fit(method, Context(seed=0), ("s",), method.fit_source)
    # nothing was cached: the next attempt trains (and fails) again
    with pytest.raises(TypeError, match="cannot be reused"):
        cache.fit(method, Context(seed=0), ("s",), method.fit_source)
