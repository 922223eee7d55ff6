"""Every class of spec error names the file, the line, the JSON path and what was expected."""
from __future__ import annotations

import pytest

from conftest import TOY_SPEC
from harness.spec.load import SpecError, load_spec, validate_spec


def problems_of(path) -> list:
    with pytest.raises(SpecError, match=r":\d+:\d+: ") as info:  # file:line:col: every problem located
        validate_spec(path)
    return info.value.problems


def only_problem(path):
    problems = problems_of(path)
    assert len(problems) == 1, [str(p) for p in problems]
    problem = problems[0]
    assert problem.file == str(path)
    assert str(path) in str(problem) and f":{problem.line}:" in str(problem)
    return problem


def test_valid_spec_loads_with_profiles(toy_env, write_spec):
    path = write_spec(TOY_SPEC)
    default = load_spec(path)
    quick = load_spec(path, "quick")
    assert default.seeds == [0, 1, 2] and quick.seeds == [0]
    assert quick.tuning.trials == 2 and default.tuning.trials == 4
    # the profile patches one dataset by id and leaves the other untouched
    assert quick.dataset("hard").params == {"noise": 0.2}
    assert quick.dataset("easy").params == {"noise": 0.05}
    assert default.dataset("hard").params == {"noise": 0.3}
    assert quick.tuning.sampler_args == {"n_startup_trials": 2}
    assert quick.report_metrics == ["toy_score", "toy_loss"]
    assert default.spec_hash != quick.spec_hash


def test_bad_yaml(toy_env, write_spec):
    path = write_spec("spec: 1\nname: toy\ndatasets: [unclosed\n")
    problem = only_problem(path)
    assert "invalid YAML" in problem.message and problem.line >= 3


def test_duplicate_key(toy_env, write_spec):
    path = write_spec(TOY_SPEC.replace("seeds: [0, 1, 2]\n", "seeds: [0, 1, 2]\nseeds: [5]\n", 1))
    problem = only_problem(path)
    assert "duplicate key 'seeds'" in problem.message and "first given on line 16" in problem.message
    assert problem.line == 17


def test_unknown_key_with_suggestion(toy_env, write_spec):
    path = write_spec(TOY_SPEC.replace("tuning: {trials: 4", "tunning: {trials: 4"))
    problems = problems_of(path)
    unknown = [p for p in problems if "unknown key 'tunning'" in p.message]
    assert unknown and "did you mean 'tuning'" in unknown[0].message
    assert unknown[0].line == 17 and unknown[0].column == 1


def test_wrong_type_and_yaml_number_trap(toy_env, write_spec):
    path = write_spec(TOY_SPEC.replace("x: {float: [0.0, 1.0]}", "x: {float: [1e-3, 1.0]}"))
    problem = only_problem(path)
    assert problem.line == 13
    assert "expected" in problem.message and "write 1.0e-3" in problem.message
    assert problem.path[:3] == ("methods", 0, "search")


def test_wrong_type_integer(toy_env, write_spec):
    path = write_spec(TOY_SPEC.replace("timeout_s: 20", "timeout_s: soon"))
    problem = only_problem(path)
    assert problem.message.startswith("expected a number, found the string 'soon'")
    assert problem.path == ("hardware", "timeout_s") and problem.line == 18


@pytest.mark.parametrize("old, new, needle", [
    ("task: toy.guess", "task: toy.gues", "unknown task 'toy.gues' (did you mean 'toy.guess'?)"),
    ("name: toy-target, id: easy", "name: toy-targt, id: easy", "unknown dataset 'toy-targt' (did you mean 'toy-target'"),
    ("name: toy-constant", "name: toy-constnt", "unknown method 'toy-constnt' (did you mean 'toy-constant'"),
    ("primary: toy_score", "primary: toy_scor", "unknown metric 'toy_scor' (did you mean 'toy_score'"),
    ("x: {float", "y: {float", "cannot tune 'y': 'toy-tunable' has no such parameter"),
    ("params: {value: 0.0}", "params: {valu: 0.0}", "'toy-constant' has no parameter 'valu' (did you mean 'value'?)"),
    ("than: toy-constant", "than: toy-constan", "no method with id 'toy-constan'"),
])
def test_unknown_names(toy_env, write_spec, old, new, needle):
    path = write_spec(TOY_SPEC.replace(old, new, 1))
    problems = problems_of(path)
    matching = [p for p in problems if needle in p.message]
    assert matching, [str(p) for p in problems]
    line_of_change = next(i for i, line in enumerate(TOY_SPEC.replace(old, new, 1).splitlines(), 1) if new in line)
    assert matching[0].line == line_of_change


def test_python_tag_is_never_executed(toy_env, write_spec, tmp_path):
    marker = tmp_path / "pwned"
    path = write_spec(TOY_SPEC.replace("title: Toy comparison",
                                       f"title: !!python/object/apply:os.system ['touch {marker}']"))
    problem = only_problem(path)
    assert "tag 'tag:yaml.org,2002:python/object/apply:os.system' is not allowed" in problem.message
    assert problem.line == 4 and not marker.exists()


@pytest.mark.parametrize("name", ["../evil", "/tmp/x", "a/b"])
def test_path_like_name_rejected(toy_env, write_spec, name):
    path = write_spec(TOY_SPEC.replace("name: toy\n", f"name: '{name}'\n"))
    problems = problems_of(path)
    assert any(p.path == ("name",) and "never a path" in p.message for p in problems)


def test_name_must_match_file_stem(toy_env, write_spec):
    path = write_spec(TOY_SPEC, stem="other")
    problem = only_problem(path)
    assert "expected the file's stem 'other', found 'toy'" in problem.message and problem.line == 3


def test_profile_errors_point_into_the_profile(toy_env, write_spec):
    text = TOY_SPEC.replace("datasets: {hard: {params: {noise: 0.2}}}", "datasets: {hard: {params: {nois: 0.2}}}")
    problem = only_problem(write_spec(text))
    assert "'toy-target' has no parameter 'nois'" in problem.message
    assert problem.line == 25 and problem.path[:3] == ("profiles", "quick", "datasets")


def test_profile_unknown_entry_id(toy_env, write_spec):
    text = TOY_SPEC.replace("datasets: {hard: {params", "datasets: {hrd: {params")
    problem = only_problem(write_spec(text))
    assert "no dataset with id 'hrd'" in problem.message and "did you mean 'hard'" in problem.message


def test_duplicate_ids_need_an_id(toy_env, write_spec):
    text = TOY_SPEC.replace("{name: toy-target, id: hard,", "{name: toy-target, id: easy,")
    problems = problems_of(write_spec(text))
    assert any("dataset id 'easy' is used twice" in p.message for p in problems)


def test_tuning_needs_an_explicit_sampler(toy_env, write_spec):
    text = TOY_SPEC.replace(", sampler: {name: tpe, args: {n_startup_trials: 2}}", "")
    problem = only_problem(write_spec(text))
    assert "name the Optuna sampler" in problem.message


def test_missing_file(tmp_path):
    problem = only_problem(tmp_path / "nope.yaml")
    assert problem.message == "no such spec file"


def test_sampler_arguments_are_checked(toy_env, write_spec):
    text = TOY_SPEC.replace("args: {n_startup_trials: 2}", "args: {n_startup_trial: 2, seed: 1}")
    problems = problems_of(write_spec(text))
    messages = " | ".join(p.message for p in problems)
    assert "no argument 'n_startup_trial' (did you mean 'n_startup_trials'" in messages
    assert "tuning.sampler_seed" in messages and all(p.line == 17 for p in problems)


def test_yaml_merge_keys_share_params(toy_env, write_spec):
    text = TOY_SPEC.replace(
        "  - {name: toy-target, id: easy, params: {noise: 0.05}}\n  - {name: toy-target, id: hard, params: {noise: 0.3}}\n",
        "  - {name: toy-target, id: easy, params: &shared {noise: 0.05, target: 0.4}}\n"
        "  - {name: toy-target, id: hard, params: {<<: *shared, noise: 0.3}}\n")
    spec = load_spec(write_spec(text))
    assert spec.dataset("hard").params == {"noise": 0.3, "target": 0.4}
    assert spec.dataset("easy").params == {"noise": 0.05, "target": 0.4}
    doubled = text.replace("{<<: *shared, noise: 0.3}", "{<<: *shared, noise: 0.3, noise: 0.2}")
    problem = only_problem(write_spec(doubled))
    assert "duplicate key 'noise'" in problem.message


def test_nested_merge_keys_keep_the_inner_override(toy_env, write_spec):
    """A mapping merged from one that itself merges and overrides a key brings the override, not the key it
    overrode (PyYAML 6.0.x keeps the first: `hard` would get target 0.4 from `base`, not 0.7 from `mid`)."""
    text = TOY_SPEC.replace(
        "  - {name: toy-target, id: easy, params: {noise: 0.05}}\n  - {name: toy-target, id: hard, params: {noise: 0.3}}\n",
        "  - {name: toy-target, id: easy, params: &mid {<<: &base {noise: 0.05, target: 0.4}, target: 0.7}}\n"
        "  - {name: toy-target, id: hard, params: {<<: *mid, noise: 0.3}}\n")
    spec = load_spec(write_spec(text))
    assert spec.dataset("easy").params == {"noise": 0.05, "target": 0.7}
    assert spec.dataset("hard").params == {"noise": 0.3, "target": 0.7}
    # of a list of merged mappings the earlier wins (the merge-key spec)
    listed = text.replace("{<<: *mid, noise: 0.3}", "{<<: [{target: 0.9}, *mid], noise: 0.3}")
    assert load_spec(write_spec(listed)).dataset("hard").params == {"noise": 0.3, "target": 0.9}
    scalar = text.replace("{<<: *mid, noise: 0.3}", "{<<: 3, noise: 0.3}")
    assert "`<<` merges a mapping (or a list of mappings); found scalar" in only_problem(write_spec(scalar)).message


CLAIM = "  - {id: tunable-wins, says: tuned beats constant, better: toy-tunable, than: toy-constant, metric: toy_score}\n"


def test_claim_unit_of_replication(toy_env, write_spec):
    pooled = CLAIM.replace("metric: toy_score}", "metric: toy_score, replicate: dataset-seed}")
    (claim,) = load_spec(write_spec(TOY_SPEC.replace(CLAIM, pooled))).claims
    assert claim.replicate == "dataset-seed"
    assert load_spec(write_spec(TOY_SPEC)).claims[0].replicate == "seed"
    wrong = CLAIM.replace("metric: toy_score}", "metric: toy_score, replicate: cells}")
    with pytest.raises(SpecError, match=r"claims\[0\].replicate: expected one of seed, dataset-seed; found the string 'cells'"):
        validate_spec(write_spec(TOY_SPEC.replace(CLAIM, wrong)))


def test_claim_states_its_source(toy_env, write_spec):
    sourced = CLAIM.replace("metric: toy_score}", "metric: toy_score,\n     source: paper, quote: 'Table 2: 0.91 vs 0.85'}")
    (claim,) = load_spec(write_spec(TOY_SPEC.replace(CLAIM, sourced))).claims
    assert (claim.source, claim.quote) == ("paper", "Table 2: 0.91 vs 0.85")
    (unsourced,) = load_spec(write_spec(TOY_SPEC)).claims
    assert (unsourced.source, unsourced.quote) == (None, None)
    hypothesis = CLAIM.replace("metric: toy_score}", "metric: toy_score, source: harness}")
    assert load_spec(write_spec(TOY_SPEC.replace(CLAIM, hypothesis))).claims[0].source == "harness"


def test_claim_from_the_paper_must_quote_it(toy_env, write_spec):
    unquoted = CLAIM.replace("metric: toy_score}", "metric: toy_score, source: paper}")
    with pytest.raises(SpecError, match=r"toy.yaml:20:5: \$.claims\[0\]: missing required key 'quote': "
                                        r"a claim with `source: paper` quotes the paper's sentence"):
        validate_spec(write_spec(TOY_SPEC.replace(CLAIM, unquoted)))
    misspelt = CLAIM.replace("metric: toy_score}", "metric: toy_score, source: papr}")
    with pytest.raises(SpecError, match=r"claims\[0\].source: expected one of paper, harness; found the string 'papr' "
                                        r"\(did you mean 'paper'\?\)"):
        validate_spec(write_spec(TOY_SPEC.replace(CLAIM, misspelt)))


def test_a_spec_without_anchors_is_measured_as_the_tree_it_is(toy_env, write_spec, monkeypatch):
    """Without an ``&`` there is no anchor, so no alias: the size and depth bounds are checked by a plain walk, not
    the memoised alias-aware one (a fifth of its cost on a 10,000-dataset spec); with one, by the latter."""
    from harness.spec import yamlread

    walked = []
    monkeypatch.setattr(yamlread, "_check_expanded_size", lambda root, file: walked.append(file))
    validate_spec(write_spec(TOY_SPEC))
    assert walked == []
    validate_spec(write_spec("# R&D\n" + TOY_SPEC))
    assert len(walked) == 1


BOMB = "".join(f"{name}: &{name} [{', '.join([f'*{prev}'] * 9) if prev else ', '.join(['x'] * 9)}]\n"
               for prev, name in zip([None, *"abcdefgh"], "abcdefghi"))


@pytest.mark.parametrize("make, says", [
    (lambda p: p.write_text(BOMB), "expands to more than 100,000 values"),
    (lambda p: p.write_text("seeds:\n" + "  - 1\n" * 400_000), "a spec is at most 1,000,000 bytes"),
    # 100,001 seeds as written: no alias involved, so the message does not blame aliases
    (lambda p: p.write_text(f"seeds: [{','.join(map(str, range(100_001)))}]\n"),
     "has 100,004 values; a spec has at most 100,000$"),
    (lambda p: p.write_text("a: " + "[" * 60 + "]" * 60 + "\n"), "nested 61 levels deep"),
    # the same two with an ampersand in a comment: measured by the alias-aware walk, with the same messages
    (lambda p: p.write_text(f"# R&D\nseeds: [{','.join(map(str, range(100_001)))}]\n"),
     "has 100,004 values; a spec has at most 100,000$"),
    (lambda p: p.write_text("# R&D\na: " + "[" * 60 + "]" * 60 + "\n"), "nested 61 levels deep"),
    (lambda p: p.write_text("a: " + "[" * 5000 + "]" * 5000 + "\n"), "nested too deeply"),
    (lambda p: p.write_text("a: &a [1, *a]\n"), "refers to the node that contains it"),
    (lambda p: p.mkdir(), "is a folder; expected a spec file"),
])
def test_a_spec_cannot_take_the_machine_down(tmp_path, make, says):
    """An alias bomb (nine levels of nine aliases, ~400 bytes), a huge file, deep nesting: refused, one line."""
    path = tmp_path / "evil.yaml"
    make(path)
    with pytest.raises(SpecError, match=says) as info:
        validate_spec(path)
    assert len(info.value.problems) == 1 and info.value.problems[0].file == str(path)
