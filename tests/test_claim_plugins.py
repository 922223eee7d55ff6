"""Claim kinds are plug-ins: a kind is one module (found by scanning harness.claims, or an entry point), and the
spec schema, the spec checks, the verdicts, the page and the run's legend all come from it. Shown with a kind that
no engine file knows (a sign test, written here into a temporary folder) and with the equivalence kind."""
from __future__ import annotations

import json
import textwrap

import pytest

from harness.results_table import table_of_rows
import yaml

from conftest import ROOT, TOY_SPEC
from harness.claims import INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED, check_claim, claim_schema, kinds, legends
from harness.report.folder import write_leaderboard
from harness.spec.load import SpecError, load_spec, validate_spec

SIGN_KIND = '''
"""A kind no engine file names: ``better`` wins on at least ``share`` of the seeds (a sign count, no interval)."""
from dataclasses import dataclass
from typing import ClassVar

from harness.claims.base import INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED, ClaimKind, VerdictMixin
from harness.claims.paired import PAIR_PROPERTIES, paired_cells


@dataclass
class SignVerdict(VerdictMixin):
    claim: str
    says: str
    verdict: str
    metric: str
    wins: int
    seeds: int
    reason: str
    source: str | None = None
    quote: str | None = None
    precondition: str | None = None

    kind: ClassVar[str] = "sign"

    def evidence(self):
        return f"wins on {self.wins} of {self.seeds} seeds; {self.reason}"

    def spread_text(self):
        return ""

    def line(self):
        return f"{self.claim}: {self.verdict} — {self.evidence()}"

    def details(self):
        return [self.provenance()]


class SignKind(ClaimKind):
    name = "sign"
    order = 50
    summary = "`sign`: better wins on at least `share` of the seeds."
    properties = {**PAIR_PROPERTIES, "share": {"type": "number", "exclusiveMinimum": 0, "maximum": 1}}
    rules = [{"required": ["better", "than", "share"]}]
    method_keys = ("better", "than")
    heading = "Sign claims"
    about = "A claim holds when its method wins on at least the stated share of the seeds."
    legend = "(a sign claim: the share of seeds won)"

    def check(self, claim, rows, goal, order=()):
        cells = paired_cells(claim, rows, goal)
        by_seed = {}
        for (_, seed), d in cells.items():
            by_seed.setdefault(seed, []).append(d)
        wins = sum(sum(v) / len(v) > 0 for v in by_seed.values())
        if len(by_seed) < claim.get("min_pairs", 3):
            verdict, reason = INCONCLUSIVE, "too few seeds"
        elif wins >= claim["share"] * len(by_seed):
            verdict, reason = REPRODUCED, "enough wins"
        else:
            verdict, reason = NOT_REPRODUCED, "too few wins"
        return SignVerdict(claim["id"], claim["says"], verdict, claim["metric"], wins, len(by_seed), reason,
                           claim.get("source"), claim.get("quote"))


KIND = SignKind()
'''


@pytest.fixture
def fresh_kinds():
    """Forget the kinds found and the schema built from them, before and after the test."""
    from harness.spec.schema import schema, validator

    def forget():
        kinds.cache_clear()
        schema.cache_clear()
        validator.cache_clear()

    forget()
    yield
    forget()


@pytest.fixture
def sign_kind(tmp_path, monkeypatch, fresh_kinds):
    """The sign kind as one module in a folder the harness.claims package scans; nothing installed."""
    import harness.claims

    folder = tmp_path / "more_kinds"
    folder.mkdir()
    (folder / "sign.py").write_text(textwrap.dedent(SIGN_KIND))
    monkeypatch.setattr(harness.claims, "__path__", [*harness.claims.__path__, str(folder)])
    kinds.cache_clear()
    yield


def rows_with(differences: dict[int, float], dataset: str = "easy") -> list[dict]:
    """toy_score per seed for methods a (base + difference) and b (base)."""
    rows = []
    for seed, difference in differences.items():
        for method, value in (("a", 0.5 + difference), ("b", 0.5)):
            rows.append({"dataset": dataset, "method": method, "seed": seed, "status": "ok",
                         "metrics": {"toy_score": value}})
    return rows


def write_folder(folder, spec: dict, rows: list[dict]) -> None:
    folder.mkdir()
    (folder / "spec.yaml").write_text(yaml.safe_dump({"profile": "quick", "spec_hash": "h1", "spec": spec}))
    lines = [{"kind": "baseline", **r, "key": f"{r['dataset']}{r['method']}{r['seed']}", "split": "test", "error": None,
              "spec_hash": "h1", "git_commit": "abc", "device": "cpu: test", "task_version": "1",
              "versions": {"python": "3"}, "dataset_params": {}} for r in rows]
    (folder / "runs.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))


def toy_spec(claims: list[dict]) -> dict:
    return {"name": "toy", "title": "Toy", "task": "toy.guess",
            "datasets": [{"name": "toy-target", "id": "easy", "params": {}}],
            "methods": [{"name": "toy-constant", "id": m, "kind": "baseline"} for m in ("a", "b")],
            "metrics": {"primary": "toy_score", "report": ["toy_score"]}, "seeds": [0, 1, 2, 3], "claims": claims}


def test_a_kind_in_one_module_is_found_validated_checked_and_shown(toy_env, sign_kind, tmp_path, write_spec):
    assert list(kinds())[-2:] == ["sign", "check"]  # by its order: after the repository's claim kinds, before checks
    schema = claim_schema()
    assert "sign" in schema["properties"]["kind"]["enum"] and "share" in schema["properties"]
    # the spec language takes it, with its own keys and rules, and the checks of every claim
    text = TOY_SPEC.replace("metric: toy_score}", "metric: toy_score, kind: sign, share: 0.75}")
    assert load_spec(write_spec(text)).claims[0].kind == "sign"
    with pytest.raises(SpecError, match="missing required key 'share'"):
        validate_spec(write_spec(text.replace(", share: 0.75", "")))
    with pytest.raises(SpecError, match="`size` has no meaning in a claim of kind 'sign'"):
        validate_spec(write_spec(text.replace("share: 0.75", "share: 0.75, size: noise")))
    with pytest.raises(SpecError, match="no method with id 'toy-constnt'"):
        validate_spec(write_spec(text.replace("than: toy-constant", "than: toy-constnt")))
    # its verdicts, its section of the page and its legend
    claim = {"id": "wins", "kind": "sign", "says": "a wins", "better": "a", "than": "b", "metric": "toy_score",
             "share": 0.75, "source": "harness"}
    assert check_claim(claim, table_of_rows(rows_with({0: 1, 1: 1, 2: 1, 3: -1})), "max").verdict == REPRODUCED
    assert check_claim(claim, table_of_rows(rows_with({0: 1, 1: -1, 2: 1, 3: -1})), "max").verdict == NOT_REPRODUCED
    folder = tmp_path / "toy"
    write_folder(folder, toy_spec([claim]), rows_with({0: 1, 1: 1, 2: 1, 3: 1}))
    (verdict,) = write_leaderboard(folder)
    page = (folder / "leaderboard.md").read_text()
    assert "## Sign claims" in page and "wins on 4 of 4 seeds" in page and "## Claims\n" not in page
    assert json.loads((folder / "claims.json").read_text())["claims"][0]["kind"] == "sign"
    assert legends([verdict]) == ["(a sign claim: the share of seeds won)"]


def test_without_the_module_the_kind_is_unknown(toy_env, fresh_kinds, write_spec):
    text = TOY_SPEC.replace("metric: toy_score}", "metric: toy_score, kind: sign, share: 0.75}")
    with pytest.raises(SpecError, match="kind: expected one of paired, gap, equivalence, scaling, bound, check; found the string 'sign'"):
        validate_spec(write_spec(text))


def test_the_published_schema_says_what_the_kinds_say(fresh_kinds):
    """harness/spec/schema.json (for editors) holds the claim schema the loader builds from this repository's kinds;
    after changing a kind, `python -m harness.spec.publish` rewrites it."""
    from harness.spec.publish import published_claim

    assert published_claim() == claim_schema()


def equivalence(**extra) -> dict:
    return {"id": "on-par", "kind": "equivalence", "says": "a and b are on par", "methods": ["a", "b"],
            "metric": "toy_score", "margin": 0.05, "source": "harness", **extra}


def test_equivalence_inside_the_margin_is_reproduced():
    verdict = check_claim(equivalence(), table_of_rows(rows_with({0: 0.01, 1: -0.01, 2: 0.005, 3: 0.0})), "max")
    lo, hi = verdict.interval
    assert verdict.verdict == REPRODUCED and -0.05 < lo < hi < 0.05 and verdict.pairs == 4
    assert "inside ±0.05" in verdict.reason and verdict.to_dict()["kind"] == "equivalence"


def test_equivalence_beyond_the_margin_is_not_reproduced_either_way():
    ahead = check_claim(equivalence(), table_of_rows(rows_with({0: 0.2, 1: 0.21, 2: 0.19, 3: 0.2})), "max")
    behind = check_claim(equivalence(), table_of_rows(rows_with({0: -0.2, 1: -0.21, 2: -0.19, 3: -0.2})), "max")
    assert ahead.verdict == behind.verdict == NOT_REPRODUCED
    assert ahead.interval[0] >= 0.05 and behind.interval[1] <= -0.05


def test_equivalence_crossing_an_end_or_with_too_few_seeds_is_inconclusive():
    crossing = check_claim(equivalence(), table_of_rows(rows_with({0: 0.0, 1: 0.1, 2: -0.02, 3: 0.06})), "max")
    assert crossing.verdict == INCONCLUSIVE and crossing.interval[0] < 0.05 < crossing.interval[1]
    few = check_claim(equivalence(), table_of_rows(rows_with({0: 0.0, 1: 0.0})), "max")
    assert few.verdict == INCONCLUSIVE and few.mean_difference is None


def test_equivalence_is_checked_when_the_spec_loads(toy_env, write_spec):
    text = TOY_SPEC.replace("better: toy-tunable, than: toy-constant, metric: toy_score}",
                            "kind: equivalence, methods: [toy-tunable, toy-constant], metric: toy_score, margin: 0.1}")
    assert load_spec(write_spec(text)).claims[0].kind == "equivalence"
    with pytest.raises(SpecError, match="an equivalence claim names two methods; found 1"):
        validate_spec(write_spec(text.replace("methods: [toy-tunable, toy-constant]", "methods: [toy-tunable]")))
    with pytest.raises(SpecError, match="missing required key 'margin'"):
        validate_spec(write_spec(text.replace(", margin: 0.1", "")))
    with pytest.raises(SpecError, match="needs a margin above 0"):
        validate_spec(write_spec(text.replace("margin: 0.1", "margin: 0")))
    with pytest.raises(SpecError, match="`better` has no meaning in a claim of kind 'equivalence'"):
        validate_spec(write_spec(text.replace("kind: equivalence,", "kind: equivalence, better: toy-tunable,")))


def test_no_engine_module_outside_the_claims_package_names_a_kind():
    """The kinds are named in their own modules only: the engine asks the registry."""
    named = []
    for path in sorted((ROOT / "harness").rglob("*.py")):
        if "claims" in path.relative_to(ROOT).parts or "tasks" in path.relative_to(ROOT).parts:
            continue
        text = path.read_text()
        for kind in ("scaling", "bound", "equivalence"):
            if f'"{kind}"' in text or f"'{kind}'" in text:
                named.append(f"{path.relative_to(ROOT)}: {kind}")
    assert not named, named
