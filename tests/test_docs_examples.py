"""Every example in docs/ stays true: each fenced block is run, or checked as far as this machine can.

* a ``yaml`` block that is a spec is valid against the spec schema; one that is a spec's ``audit:`` section, against
  that section's schema;
* a ``bash`` or ``console`` line that calls ``harness`` parses with the command's own parser (a SLURM or asv command
  cannot run here; its flags and arguments must still exist), and ``$ harness audit ...`` prints what the page shows;
* a ``python`` block compiles; the worked plugin (docs/adding-a-paper.md) runs in tests/test_readme.py and the
  ``read_results`` example in tests/test_docs.py, the benchmark template here against the benchmarks' helpers.
"""
from __future__ import annotations

import re
import shlex
import subprocess
import sys

import pytest
import yaml

from conftest import ROOT
from test_docs import _lines

DOCS = sorted((ROOT / "docs").glob("*.md"))


def blocks(path) -> list[tuple[int, str, str]]:
    """(first line number, info string, text) of each fenced code block of a Markdown file."""
    out, current = [], None
    for number, (line, code) in enumerate(_lines(path.read_text()), 1):
        if code and current is None:
            current = (number, line.strip().lstrip("`~").strip(), [])
        elif code and re.match(r" {0,3}(```+|~~~+)\s*$", line):
            out.append((current[0], current[1], "\n".join(current[2])))
            current = None
        elif current is not None:
            current[2].append(line)
    return out


ALL = [(path, number, info, text) for path in DOCS for number, info, text in blocks(path)]


def _ids(items):
    return [f"{path.name}:{number}" for path, number, *_ in items]


YAML = [b for b in ALL if b[2] == "yaml"]
COMMANDS = [b for b in ALL if b[2] in ("bash", "console", "")]
PYTHON = [b for b in ALL if b[2] == "python"]


def test_the_docs_have_examples_of_each_kind():
    assert len(YAML) >= 2 and len(COMMANDS) >= 5 and len(PYTHON) >= 4


@pytest.mark.parametrize("path, number, info, text", YAML, ids=_ids(YAML))
def test_yaml_examples_are_valid(path, number, info, text):
    from harness.spec.schema import schema, validator

    data = yaml.safe_load(text)
    assert isinstance(data, dict), f"{path.name}:{number}: not a mapping"
    if "spec" in data:
        errors = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator().iter_errors(data)]
    elif set(data) == {"audit"}:
        from jsonschema import Draft202012Validator

        section = {**schema()["properties"]["audit"], "$defs": schema().get("$defs", {})}
        errors = [e.message for e in Draft202012Validator(section).iter_errors(data["audit"])]
    else:
        pytest.fail(f"{path.name}:{number}: a YAML example that is neither a spec nor its audit section")
    assert not errors, f"{path.name}:{number}: " + "; ".join(errors)


def _harness_lines(text: str) -> list[str]:
    """The harness command lines of a shell block (continuations joined, comments and prompts dropped)."""
    joined = re.sub(r"\\\n\s*", " ", text)
    found = []
    for line in joined.splitlines():
        line = line.strip()
        if line.startswith("$ "):
            line = line[2:]
        line = re.sub(r"\s+#.*$", "", line)
        if line.startswith("harness "):
            found.append(line)
    return found


COMMAND_LINES = [(path, number, line) for path, number, _, text in COMMANDS for line in _harness_lines(text)]


@pytest.mark.parametrize("path, number, line", COMMAND_LINES, ids=[f"{p.name}:{n}:{i}" for i, (p, n, _) in
                                                                   enumerate(COMMAND_LINES)])
def test_harness_commands_in_the_docs_parse(path, number, line):
    from harness.cli import build_parser

    known = {"AUDIT_PROFILE": "default"}  # a variable whose value the parser checks; any other: any value
    words = shlex.split(re.sub(r"\$\{?(\w+)\}?", lambda m: known.get(m.group(1), f"X_{m.group(1)}"), line))[1:]
    try:
        build_parser().parse_args(words)
    except SystemExit as exc:
        pytest.fail(f"{path.name}:{number}: `{line}` does not parse (exit {exc.code})")


def test_the_docs_show_commands_of_every_kind():
    named = {line.split()[1] for _, _, line in COMMAND_LINES}
    assert {"run", "regress", "audit", "merge", "bench", "new"} <= named


@pytest.mark.parametrize("path, number, info, text", PYTHON, ids=_ids(PYTHON))
def test_python_examples_compile(path, number, info, text):
    compile(text, f"{path.name}:{number}", "exec")


def test_the_benchmark_template_defines_a_benchmark(monkeypatch):
    """docs/tracking.md's template, with a kernel of its own, is a class asv would time."""
    (text,) = [t for path, _, _, t in PYTHON if path.name == "tracking.md" and "class MyKernel" in t]
    monkeypatch.syspath_prepend(str(ROOT))
    namespace = {"my_kernel": lambda instance: None}
    exec(compile(text, "tracking.md", "exec"), namespace)
    kernel = namespace["MyKernel"]()
    kernel.setup(400)
    kernel.time_my_kernel(400)
    assert kernel.param_names == ["n"] and callable(kernel.peakmem_my_kernel)


def test_the_audit_page_shows_what_the_command_prints():
    """docs/audit.md quotes `harness audit` on two committed folders: the command prints exactly that."""
    path = ROOT / "docs" / "audit.md"
    page = path.read_text()
    command = re.search(r"\(`(harness\s+audit\s[^`]+)`, exit (\d)", page)
    assert command, "docs/audit.md no longer names the audit command its example output comes from"
    (shown,) = [text for number, info, text in blocks(path) if info == "" and "finding(s)" in text]
    result = subprocess.run([sys.executable, "-m", "harness.cli", *shlex.split(command.group(1))[1:]], cwd=ROOT,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == int(command.group(2)), result.stderr
    assert result.stdout.strip() == shown.strip()
