"""reasoning.esolang: the problems and their cases, the scorer's check (the reference programs pass every case of
every task), blind search's bookkeeping, hostile answers contained, and the model adapter against a fake
OpenAI-compatible server on loopback."""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from baselines.esolang import (EmptyProgram, EnumerativeSearch, RandomSearch, ReferencePrograms, brainfuck_print,
                               befunge_print)
from components.chat_client import EndpointError, code_block, complete
from harness.tasks.base import Context, DataError, DataUnavailable
from harness.tasks.reasoning import esolang as es
from harness.tasks.reasoning.esolang import Answer
from harness.tasks.reasoning.interpreters import befunge93, brainfuck
from implementations.esolang_model import LocalModel

LOADERS = {"bf-copy": es.bf_copy, "bf-print": es.bf_print, "bf-sort": es.bf_sort, "befunge-print": es.befunge_print,
           "befunge-fibonacci": es.befunge_fibonacci, "befunge-factorial": es.befunge_factorial}


@pytest.mark.parametrize("name", sorted(LOADERS))
def test_the_reference_programs_pass_every_held_out_case(name):
    data = LOADERS[name](Context(seed=1), instances=3, cases=4)
    metrics = es.TASK.evaluate(ReferencePrograms(), data, Context(seed=1))
    assert metrics["pass_rate"] == 1.0 and metrics["twin_pass_rate"] == 1.0 and metrics["solved"] == 1.0


def test_problems_are_the_seeds_and_the_cases_are_held_out():
    first, again = es.bf_copy(Context(seed=0), instances=4), es.bf_copy(Context(seed=0), instances=4)
    assert first == again
    assert es.bf_copy(Context(seed=1), instances=4) != first
    problem = first.problems[0]
    assert problem.cases and all(c.stdin == c.expected for c in problem.cases)
    assert {c.stdin for c in problem.cases} != {c.stdin for c in problem.examples}
    assert "EOF" not in problem.prompt and "end of input it reads 0" in problem.prompt  # the convention is stated
    assert all(c.stdin.decode() in problem.prompt for c in problem.examples)
    assert all(c.stdin.decode() not in problem.prompt for c in problem.cases if len(c.stdin) > 3)
    fib = es.befunge_fibonacci(Context(seed=0), instances=1, cases=20).problems[0]
    for case in fib.cases:
        n = int(case.stdin)
        assert len(case.expected.split()) == n and case.expected.endswith(b" ") == (n > 0)
    assert es.TASK.evaluate(EmptyProgram(), es.bf_print(Context(seed=0), instances=2), Context(seed=0))[
        "pass_rate"] == 0.0


def test_the_constructive_printers():
    assert brainfuck(brainfuck_print("Hi~\x01")).output == b"Hi~\x01"
    assert befunge93(befunge_print("hello")).output == b"hello"
    with pytest.raises(ValueError, match="may not hold"):
        befunge_print('a"b')


def test_blind_search_tries_its_budget_on_the_examples_only():
    data = es.bf_print(Context(seed=0), instances=2)
    metrics = es.TASK.evaluate(EnumerativeSearch(budget=50), data, Context(seed=0))
    assert metrics["programs_tried"] == 100 and metrics["twin_pass_rate"] == 0.0
    session = es.EsolangSession(data.problems[0], 100, Context(seed=0))
    assert EnumerativeSearch(budget=10).solve(session).python is None
    assert session.programs_tried == 10
    random_first = RandomSearch(budget=20).solve(es.EsolangSession(data.problems[0], 100, Context(seed=0)))
    random_again = RandomSearch(budget=20).solve(es.EsolangSession(data.problems[0], 100, Context(seed=0)))
    assert random_first == random_again  # the seed's draw, not the process's hash seed
    with pytest.raises(ValueError, match="budget"):
        EnumerativeSearch(budget=0).solve(session)


def test_check_scores_candidates_on_the_examples():
    data = es.bf_copy(Context(seed=0), instances=1)
    session = es.EsolangSession(data.problems[0], 1000, Context(seed=0))
    assert session.check([",[.,]", "", "+[]"]) == [1.0, 0.0, 0.0]
    assert session.check(["import sys\nprint(sys.stdin.read(), end='')", "print('x')"], python=True) == [1.0, 0.0]
    assert session.programs_tried == 5


class Hostile:
    """Answers that try to escape: an endless Brainfuck loop and a Python twin that forks, then loops."""

    def solve(self, session):
        return Answer("+[]", "import os\ntry:\n    os.fork()\nexcept Exception:\n    pass\nwhile True:\n    pass\n")


def test_hostile_answers_are_contained_and_scored_as_failures():
    data = es.bf_copy(Context(seed=0), instances=1, cases=1)  # the twin's loop runs to its 5 CPU seconds
    metrics = es.TASK.evaluate(Hostile(), data, Context(seed=0))
    assert metrics["pass_rate"] == 0.0 and metrics["twin_pass_rate"] == 0.0


def test_loaders_refuse_what_cannot_run():
    with pytest.raises(DataError, match="min_length"):
        es.bf_print(Context(seed=0), min_length=5, max_length=2)
    with pytest.raises(DataError, match="instances"):
        es.bf_copy(Context(seed=0), instances=0)
    with pytest.raises(DataError, match="not a task"):
        es.problems(Context(seed=0), "brainfuck", "fibonacci", 1, 1, 1, (1, 1))


# --------------------------------------------------------------------------- the model adapter


class FakeModel(BaseHTTPRequestHandler):
    """An OpenAI-compatible /chat/completions that knows Python and not Brainfuck: it answers a Python twin's prompt
    with the right program and an esolang prompt with a wrong one, and records what it was asked."""

    requests: list = []

    def do_POST(self):  # noqa: N802 (http.server's name)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        FakeModel.requests.append((self.path, body))
        prompt = body["messages"][0]["content"]
        if "Python 3 program" in prompt:
            reply = "Here it is:\n```python\nimport sys\nsys.stdout.write(sys.stdin.read())\n```\nDone."
        else:
            reply = "```brainfuck\n+.\n```"
        payload = json.dumps({"choices": [{"message": {"role": "assistant", "content": reply}}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args):
        pass


@pytest.fixture
def fake_server():
    FakeModel.requests = []
    server = HTTPServer(("127.0.0.1", 0), FakeModel)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def test_the_adapter_asks_the_endpoint_and_scores_both_languages(fake_server, monkeypatch):
    monkeypatch.setenv("HARNESS_MODEL_URL", fake_server)
    monkeypatch.setenv("HARNESS_MODEL", "fake-7b")
    data = es.bf_copy(Context(seed=0), instances=2, cases=3)
    metrics = es.TASK.evaluate(LocalModel(), data, Context(seed=0))
    assert metrics["twin_pass_rate"] == 1.0 and metrics["pass_rate"] == 0.0 and metrics["twin_gap"] == 1.0
    assert metrics["programs_tried"] == 4
    path, body = FakeModel.requests[0]
    assert path == "/v1/chat/completions" and body["model"] == "fake-7b" and body["temperature"] == 0.0
    assert body["messages"][0]["role"] == "user" and "Brainfuck" in body["messages"][0]["content"]


def test_the_adapter_without_an_endpoint_is_skipped_and_a_dead_one_says_so(monkeypatch):
    monkeypatch.delenv("HARNESS_MODEL_URL", raising=False)
    monkeypatch.delenv("HARNESS_MODEL", raising=False)
    session = es.EsolangSession(es.bf_copy(Context(seed=0), instances=1).problems[0], 100, Context(seed=0))
    with pytest.raises(DataUnavailable, match="HARNESS_MODEL_URL"):
        LocalModel().solve(session)
    with pytest.raises(EndpointError, match="unreachable"):
        complete("http://127.0.0.1:9/v1", "m", "hi", timeout_s=5)


def test_code_block_takes_the_first_fenced_block():
    assert code_block("x\n```bf\n,[.,]\n```\n```\nother\n```") == ",[.,]"
    assert code_block(",[.,]") == ",[.,]"
