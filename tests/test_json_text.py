"""harness.report.json_text.dumps is json.dumps(value, indent=k), byte for byte, on random values: nested lists,
tuples and dicts, empty ones, long lists of flat records (the claims' per-dataset evidence) and lists that only
nearly are, every kind of float, strings json escapes, keys of every kind json takes; and json's own error where
json refuses."""
from __future__ import annotations

import json
import math
import random
import struct

import pytest

from harness.report.json_text import RECORDS, dumps

STRINGS = ["", "a", 'q"uote', "back\\slash", "new\nline", "tab\t", "é ü 😀", "\x00\x1f", "%s %d %%", "≈", "</>"]
FLOATS = [0.0, -0.0, 1e-300, 5e-324, 1e16, 1e22, 0.1, -2.5, math.nan, math.inf, -math.inf, 1.7976931348623157e308]


def scalar(rng: random.Random):
    pick = rng.random()
    if pick < 0.25:
        return rng.choice(STRINGS) + str(rng.randint(0, 9))
    if pick < 0.35:
        return rng.choice([None, True, False])
    if pick < 0.5:
        return rng.choice([0, -1, 7, 2 ** 70, -(2 ** 63)])
    if pick < 0.6:
        return rng.choice(FLOATS)
    if pick < 0.8:
        return struct.unpack("<d", rng.getrandbits(64).to_bytes(8, "little"))[0]
    return rng.gauss(0, 1) * 10 ** rng.randint(-20, 20)


def key(rng: random.Random):
    return rng.choice([rng.choice(STRINGS) + str(rng.randint(0, 99)), rng.randint(-5, 5), rng.choice(FLOATS),
                       True, False, None])


def value(rng: random.Random, depth: int = 0):
    pick = rng.random()
    if depth > 3 or pick < 0.4:
        return scalar(rng)
    if pick < 0.55:
        return [value(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    if pick < 0.6:
        return tuple(value(rng, depth + 1) for _ in range(rng.randint(0, 3)))
    if pick < 0.8:
        return {key(rng): value(rng, depth + 1) for _ in range(rng.randint(0, 4))}
    keys = [rng.choice(STRINGS) + str(k) for k in range(rng.randint(1, 5))]
    records = [{k: scalar(rng) for k in keys} for _ in range(rng.randint(RECORDS - 2, 40))]
    if records and rng.random() < 0.3:  # one record that spoils the fast path
        spoil = rng.choice(["order", "nested", "missing", "extra"])
        last = records[-1]
        records[-1] = (dict(reversed(list(last.items()))) if spoil == "order" else
                       {**last, keys[0]: [1, 2]} if spoil == "nested" else
                       dict(list(last.items())[1:]) if spoil == "missing" else {**last, "extra": 1})
    return records


@pytest.mark.parametrize("seed", range(300))
def test_the_text_is_json_dumps(seed):
    rng = random.Random(seed)
    data = value(rng)
    indent = rng.choice([1, 1, 2, 4])
    assert dumps(data, indent) == json.dumps(data, indent=indent)


@pytest.mark.parametrize("seed", range(40))
def test_records_of_one_type_per_field_are_json_dumps(seed):
    """A claim's per_dataset: each field of one type (finite floats, strings, ints, bools), or one odd value."""
    rng = random.Random(seed)
    makers = {"dataset": lambda: rng.choice(STRINGS) + str(rng.randint(0, 9)), "seeds": lambda: rng.randint(0, 99),
              "mean_difference": lambda: rng.gauss(0, 1) * 10 ** rng.randint(-20, 20),
              "half_width": lambda: abs(rng.gauss(0, 1)), "no_spread": lambda: rng.random() < 0.5}
    records = [{k: make() for k, make in makers.items()} for _ in range(rng.randint(RECORDS, 60))]
    if rng.random() < 0.5:  # one value of another type or a float json spells differently
        records[rng.randrange(len(records))][rng.choice(list(makers))] = rng.choice([None, math.nan, math.inf, 1, "x"])
    data = {"claims": [{"claim": "c", "per_dataset": records}]}
    assert dumps(data, 1) == json.dumps(data, indent=1)


def test_what_json_refuses_is_json_s_error():
    for bad, said in (({(1, 2): 1}, "keys must be str"), ([object()], "not JSON serializable"),
                      ({"a": {1j: 2}}, "keys must be str")):
        with pytest.raises(TypeError, match=said) as ours:
            dumps(bad, 1)
        with pytest.raises(TypeError, match=said) as theirs:
            json.dumps(bad, indent=1)
        assert str(ours.value) == str(theirs.value)
    circular: list = []
    circular.append(circular)
    with pytest.raises(ValueError, match="Circular reference"):
        dumps(circular, 1)


def test_subclasses_are_written_as_json_writes_them():
    import numpy as np

    data = {"a": [np.float64(0.1)] * RECORDS, "b": [{"x": np.float64(2.5), "y": True}] * RECORDS}
    assert dumps(data, 1) == json.dumps(data, indent=1)
