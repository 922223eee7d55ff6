"""The bundled code-generation problems (harness/tasks/codegen/problems.py): their shape, their reference programs
against every test (run confined, as generated programs are), the private tests stronger than the public ones (a
plausible wrong program passes the public tests and fails a private one) and the output checker."""
from __future__ import annotations

import dataclasses
import re
import textwrap

import pytest

from harness.sandbox import Limits, run_python
from harness.tasks.codegen.problems import PROBLEMS, CodeProblem, Test, outputs_match

LIMITS = Limits(cpu_s=5, wall_s=30)
BY_NAME = {problem.name: problem for problem in PROBLEMS}


def passes(source: str, test: Test) -> bool:
    outcome = run_python(source, test.stdin, LIMITS)
    return outcome.ok and outputs_match(outcome.stdout, test.expected)


def test_the_set_has_twelve_uniquely_named_problems():
    assert len(PROBLEMS) == 12
    assert len(BY_NAME) == len(PROBLEMS), [p.name for p in PROBLEMS]
    assert all(isinstance(p, CodeProblem) for p in PROBLEMS)


@pytest.mark.parametrize("problem", PROBLEMS, ids=lambda p: p.name)
def test_a_problem_has_the_shape_the_benchmark_expects(problem):
    assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", problem.name)
    assert len(problem.public) == 2
    assert 6 <= len(problem.private) <= 8
    assert all(isinstance(t, Test) for t in (*problem.public, *problem.private))
    public_inputs = {t.stdin for t in problem.public}
    assert not [t for t in problem.private if t.stdin in public_inputs or t in problem.public]
    assert len({t.stdin for t in problem.private}) == len(problem.private)  # no private test twice
    assert all(t.stdin.endswith("\n") for t in (*problem.public, *problem.private))
    for word in ("Input", "Output", "Example"):
        assert word in problem.statement, (problem.name, word)
    assert problem.public[0].stdin.strip() in problem.statement  # the example is in the text


@pytest.mark.parametrize("problem", PROBLEMS, ids=lambda p: p.name)
def test_the_reference_passes_every_public_and_private_test(problem):
    for kind, tests in (("public", problem.public), ("private", problem.private)):
        for index, test in enumerate(tests):
            outcome = run_python(problem.reference, test.stdin, LIMITS)
            assert outcome.ok, (problem.name, kind, index, outcome.status, outcome.stderr)
            assert outputs_match(outcome.stdout, test.expected), (problem.name, kind, index, outcome.stdout,
                                                                  test.expected)


# Plausible wrong programs: each passes both public tests of its problem, and a private test catches it.
WRONG = {
    "count-vowels": """
        import sys
        print(sum(1 for ch in sys.stdin.read() if ch in "aeiou"))  # forgets upper case
    """,
    "balanced-brackets": """
        import sys
        words = sys.stdin.read().split()
        for s in words[1:1 + int(words[0])]:
            depth = {"(": 0, "[": 0, "{": 0}  # one counter per type: ignores how the types interleave
            ok = True
            for ch in s:
                opener = {")": "(", "]": "[", "}": "{"}.get(ch, ch)
                depth[opener] += 1 if ch == opener else -1
                ok = ok and depth[opener] >= 0
            print("YES" if ok and not any(depth.values()) else "NO")
    """,
    "kth-smallest": """
        import sys
        data = sys.stdin.read().split()
        n, k = int(data[0]), int(data[1])
        print(sorted(set(int(x) for x in data[2:2 + n]))[k - 1])  # drops repeated values
    """,
    "run-length-encoding": """
        from collections import Counter
        s = input().strip()
        print("".join(ch + str(count) for ch, count in Counter(s).items()))  # counts letters, not runs
    """,
    "longest-increasing-run": """
        import sys
        data = sys.stdin.read().split()
        a = [int(x) for x in data[1:1 + int(data[0])]]
        best = current = 1
        for i in range(1, len(a)):
            current = current + 1 if a[i] >= a[i - 1] else 1  # non-strict
            best = max(best, current)
        print(best)
    """,
    "palindromic-substrings": """
        s = input().strip()
        count = 0
        for center in range(len(s)):  # odd lengths only
            left = right = center
            while left >= 0 and right < len(s) and s[left] == s[right]:
                count += 1
                left -= 1
                right += 1
        print(count)
    """,
    "interval-merging": """
        import sys
        data = sys.stdin.read().split()
        n = int(data[0])
        merged = []
        for i in range(n):  # assumes the intervals come sorted, and touching ones stay apart
            left, right = int(data[1 + 2 * i]), int(data[2 + 2 * i])
            if merged and left < merged[-1][1]:
                merged[-1][1] = right
            else:
                merged.append([left, right])
        print(len(merged))
        for left, right in merged:
            print(left, right)
    """,
    "base-conversion": """
        DIGITS = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
        a, b = map(int, input().split())
        value = int(input().strip(), a)
        out = ""
        while value > 0:  # prints nothing for 0
            value, digit = divmod(value, b)
            out = DIGITS[digit] + out
        print(out)
    """,
}


def test_wrong_programs_cover_at_least_three_problems():
    assert len(WRONG) >= 3 and set(WRONG) <= set(BY_NAME)


@pytest.mark.parametrize("name", sorted(WRONG))
def test_the_private_tests_catch_a_wrong_program_that_passes_the_public_ones(name):
    problem, source = BY_NAME[name], textwrap.dedent(WRONG[name])
    assert all(passes(source, test) for test in problem.public), name
    caught = [index for index, test in enumerate(problem.private) if not passes(source, test)]
    assert caught, f"{name}: the private tests do not catch the wrong program"


def test_outputs_match_ignores_whitespace_only():
    assert outputs_match("1 2 3\n", "1 2 3")
    assert outputs_match("  1\t2\n\n3  \n", "1 2 3\n")
    assert outputs_match("YES\nNO\n", "YES NO")


def test_outputs_match_tells_different_tokens_apart():
    assert not outputs_match("12\n", "1 2\n")
    assert not outputs_match("yes\n", "YES\n")
    assert not outputs_match("1 2\n", "1 2 3\n")
    assert not outputs_match("0\n", "")
    assert not outputs_match("", "0\n")


def test_outputs_match_empty_against_empty():
    assert outputs_match("", "")
    assert outputs_match("\n", "")
    assert outputs_match("", "  \n\t")


def test_problems_and_tests_are_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError, match="cannot assign to field"):
        PROBLEMS[0].name = "renamed"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError, match="cannot assign to field"):
        PROBLEMS[0].public[0].expected = "0"  # type: ignore[misc]
