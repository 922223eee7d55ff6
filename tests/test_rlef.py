"""codegen.execution_feedback (RLEF's comparison): the n@k estimator, the toy's environment and feedback, the
policy's encoding, shuffled feedback, PPO's bookkeeping, the Python environment and the served-model adapter
against a fake endpoint on loopback."""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import numpy as np
import pytest

from harness.tasks.base import Context, DataError, DataUnavailable
from harness.tasks.codegen import feedback as fb
from harness.tasks.codegen.problems import PROBLEMS

# --------------------------------------------------------------------------- n@k


def _pool(public, private, lengths):
    return np.asarray(public, dtype=bool), np.asarray(private, dtype=bool), np.asarray(lengths)


def test_n_at_k_of_independent_samples_is_one_minus_the_miss_probability_to_the_k():
    # one problem, a pool of two single-reply rollouts, one right: a reply is right with probability 1/2
    public, private, lengths = _pool([[[True], [False]]], [[[True], [False]]], [[1, 1]])
    rng = np.random.default_rng(0)
    assert fb.n_at_k(public, private, lengths, 1, 1, 20_000, rng) == pytest.approx(0.5, abs=0.01)
    assert fb.n_at_k(public, private, lengths, 1, 3, 20_000, rng) == pytest.approx(1 - 0.5**3, abs=0.01)


def test_public_passers_are_submitted_first_even_when_they_fail_the_private_tests():
    # rollout 0 passes the public tests and fails the private ones; rollout 1 the other way round
    public, private, lengths = _pool([[[True], [False]]], [[[False], [True]]], [[1, 1]])
    rng = np.random.default_rng(1)
    # with both drawn, one submission always goes to the public passer: solved only when rollout 1 alone is drawn
    assert fb.n_at_k(public, private, lengths, 1, 2, 20_000, rng) == pytest.approx(0.25, abs=0.01)
    # two submissions of two replies take both whenever both are drawn: solved unless rollout 0 is drawn twice
    assert fb.n_at_k(public, private, lengths, 2, 2, 20_000, rng) == pytest.approx(0.75, abs=0.01)


def test_every_reply_counts_and_the_last_rollout_is_cut_at_the_budget():
    # one rollout of three replies, right only at its third: 1@2 cuts it at its second reply, 1@3 reaches the third
    public, private, lengths = _pool([[[False, False, True]]], [[[False, False, True]]], [[3]])
    rng = np.random.default_rng(2)
    assert fb.n_at_k(public, private, lengths, 1, 2, 100, rng) == 0.0
    assert fb.n_at_k(public, private, lengths, 1, 3, 100, rng) == 1.0
    assert fb.n_at_k(public, private, lengths, 1, 4, 100, rng) == 1.0


# --------------------------------------------------------------------------- the toy


def _data(seed=0, **params):
    return fb.hidden_constants(Context(seed=seed, dataset="hidden-constants"), **params)


def test_problems_are_drawn_by_the_seed_within_their_window():
    a, b = _data(0, problems=200).problems, _data(1, problems=200).problems
    assert not np.array_equal(a.constants, b.constants)
    np.testing.assert_array_equal(a.constants, _data(0, problems=200).problems.constants)
    assert set(np.unique(a.width)) <= {1, 2, 4, 8, 16, 32} and len(np.unique(a.width)) == 6
    assert (np.abs(a.hints - a.constants) <= a.width[:, None]).all()
    assert ((a.constants >= 0) & (a.constants < 256)).all() and a.private_x.shape == (200, fb.PRIVATE_TESTS)


def test_the_true_constants_pass_and_the_feedback_is_the_error_signed_by_the_operation():
    from components.feedback_policy_torch import centred

    data = _data(problems=300)
    problems, environment = data.problems, data.environment
    first = environment.first(problems)
    # the statement shows the public input, not its output (which with x would give both constants away)
    assert (first.public_expected == -1).all() and (first.previous == -1).all() and first.turn == 0
    _, public, private = environment.step(problems, first, problems.constants)
    assert public.all() and private.all()
    off = problems.constants + np.array([3, -5])
    following, public, private = environment.step(problems, first, off)
    assert not public.any() and not private.any()
    error = centred(following.public_expected - following.previous_output)
    sign = np.where(problems.operations == 0, 1, -1)
    np.testing.assert_array_equal(error, sign * (problems.constants - off))
    assert following.turn == 1 and np.array_equal(following.previous, off)


def test_a_reply_right_on_the_public_test_is_right_on_the_private_ones():
    data = _data(problems=500)
    rng = np.random.default_rng(3)
    replies = data.problems.hints + rng.integers(-2, 3, size=data.problems.hints.shape)
    _, public, private = data.environment.step(data.problems, data.environment.first(data.problems), replies)
    np.testing.assert_array_equal(public, private)


def test_the_loader_refuses_widths_it_cannot_draw():
    with pytest.raises(DataError, match="widths"):
        _data(widths=[40])
    with pytest.raises(DataError, match="widths"):
        _data(widths=[])


class FeedbackReader:
    """Reads the feedback exactly: the hints first, then the previous reply corrected by the signed error."""

    turns = None

    def fit(self, environment, context):
        return {}

    def act(self, observation):
        from components.feedback_policy_torch import centred

        if observation.turn == 0:
            return observation.hints
        sign = np.where(observation.operations == 0, 1, -1)
        return observation.previous + sign * centred(observation.public_expected - observation.previous_output)


def test_a_policy_that_reads_the_feedback_solves_everything_in_two_replies():
    data = _data(problems=40, rollouts=5, resamples=50)
    result = fb.TASK.evaluate(FeedbackReader(), data, Context(seed=0, dataset="hidden-constants"))
    assert result.metrics["solve_1at3"] == 1.0 and result.metrics["replies_per_rollout"] <= 2.0
    exact = np.mean((data.problems.hints == data.problems.constants).all(axis=1))
    assert result.metrics["solve_1at1"] == pytest.approx(exact)
    assert result.curves["solve_1at_k"].y[1:] == [1.0] * 9 and "train_return" not in result.metrics


# --------------------------------------------------------------------------- the policy


def test_tokens_encode_edits_from_the_hint_then_from_the_previous_reply():
    from components.feedback_policy_torch import EDITS, decode, encode

    data = _data(problems=50)
    first = data.environment.first(data.problems)
    replies = data.problems.hints + 7
    np.testing.assert_array_equal(decode(first, encode(first, replies)), replies)
    following, _, _ = data.environment.step(data.problems, first, replies)
    np.testing.assert_array_equal(encode(following, replies - 3), np.full((50, 2), EDITS - 3))
    far = decode(following, np.full((50, 2), 2 * EDITS))  # +64 from a reply already 7 above the hint: clipped
    np.testing.assert_array_equal(far, data.problems.hints + EDITS)


def test_shuffled_feedback_moves_only_failed_rollouts_feedback():
    from components.feedback_policy_torch import features

    data = _data(problems=60)
    problems, environment = data.problems, data.environment
    replies = problems.constants.copy()
    replies[:40] += np.arange(1, 41)[:, None]  # 40 fail, each off by its own amount; 20 pass
    following, _, _ = environment.step(problems, environment.first(problems), replies)
    plain = features(following).numpy()
    shuffled = features(following, shuffle_rng=np.random.default_rng(0)).numpy()
    errors, rights = [9, 16], [12, 19]  # per field: the error at the public input, whether the field was right
    moved = errors + rights + [10, 11, 17, 18]  # and the error split by the rollout's own operation
    statement_columns = [c for c in range(plain.shape[1]) if c not in moved]
    np.testing.assert_array_equal(plain[:, statement_columns], shuffled[:, statement_columns])
    np.testing.assert_array_equal(plain[40:], shuffled[40:])
    assert not np.array_equal(plain[:40], shuffled[:40])
    assert sorted(map(tuple, plain[:40, errors + rights])) == sorted(map(tuple, shuffled[:40, errors + rights]))
    # a derangement: every failed rollout's error has its own size here, and none reads its own
    for seed in range(20):
        moved = features(following, shuffle_rng=np.random.default_rng(seed)).numpy()
        assert (np.abs(moved[:40, 9]) != np.abs(plain[:40, 9])).all()
    for operation, error, added, subtracted in ((6, 9, 10, 11), (13, 16, 17, 18)):
        # another rollout's error, read under this problem's own operation
        np.testing.assert_array_equal(shuffled[:, added], shuffled[:, error] * plain[:, operation])
        np.testing.assert_array_equal(shuffled[:, subtracted], shuffled[:, error] * (1 - plain[:, operation]))


def test_the_initial_policy_has_learnt_the_window_and_the_arms_share_it():
    import torch

    from components.feedback_policy_torch import _INITIAL, EDITS, TOKENS, features, seed_initial_policy

    data = _data(problems=600, initial_max_steps=500)
    context = Context(seed=0, dataset="hidden-constants")
    policy, log = seed_initial_policy(data.environment, context)
    _INITIAL.clear()  # a cold worker, whose torch generator ran something else first, fits the same policy
    torch.manual_seed(777)
    torch.rand(1000)
    again, _ = seed_initial_policy(data.environment, context)
    assert all(torch.equal(a, b) for a, b in zip(policy.parameters(), again.parameters()))
    # fitted to its curve's end: every recorded value a log-likelihood per token, rising from uniform's -ln 129
    assert -np.log(TOKENS) < min(log.kept.values()) < log.final < 0 and max(log.kept) == 1.0
    probabilities = torch.softmax(policy(features(data.environment.first(data.problems))), dim=2).detach().numpy()
    offsets = np.abs(np.arange(TOKENS) - EDITS)
    # the first reply of a w = 1 problem falls mostly inside its window of three; a w = 32 one spreads far wider
    narrow, wide = data.problems.width == 1, data.problems.width == 32
    assert probabilities[narrow][:, :, offsets <= 1].sum(axis=2).mean() > 0.8
    assert probabilities[wide][:, :, offsets <= 1].sum(axis=2).mean() < 0.2
    assert probabilities[wide][:, :, offsets <= 32].sum(axis=2).mean() > 0.8


def test_ppo_counts_its_budget_and_keeps_its_reference_frozen():
    import copy

    import torch

    from components.feedback_policy_torch import PPOSettings, seed_initial_policy, train_ppo

    data = _data(problems=10, initial_max_steps=30)
    policy, _ = seed_initial_policy(data.environment, Context(seed=0, dataset="hidden-constants"))
    before = copy.deepcopy(policy)
    episodes, replies, log = train_ppo(policy, data.environment, 3, np.random.default_rng(0),
                                       PPOSettings(episodes=2048, batch=512))
    assert episodes == 2048 and 2048 <= replies <= 3 * 2048
    assert len(log.kept) == 4 and all(-1.0 <= v <= 1.0 for v in log.kept.values())
    assert any(not torch.equal(a, b) for a, b in zip(policy.parameters(), before.parameters()))
    _, single, _ = train_ppo(copy.deepcopy(before), data.environment, 1, np.random.default_rng(0),
                             PPOSettings(episodes=1024, batch=512))
    assert single == 1024  # one reply per single-turn episode
    # the same streams train the same policy whatever ran before in the process (RLEF and RLEF sampled
    # single-turn are two cells that must hold one training)
    again = copy.deepcopy(before)
    torch.manual_seed(12345)
    torch.rand(100)
    train_ppo(again, data.environment, 3, np.random.default_rng(0), PPOSettings(episodes=2048, batch=512))
    assert all(torch.equal(a, b) for a, b in zip(policy.parameters(), again.parameters()))


def test_returns_are_the_terminal_reward_less_the_kl_of_every_reply_from_this_one_on():
    import torch

    from components.feedback_policy_torch import reply_returns

    terminal = torch.tensor([1.0, -1.0])  # episode 0 solved in three replies; episode 1 failed its only reply
    replies = [(np.array([0, 1]), torch.tensor([-1.0, -2.0]), torch.tensor([-3.0, -2.5])),  # log-ratios 2, 0.5
               (np.array([0]), torch.tensor([-4.0]), torch.tensor([-2.0])),  # -2
               (np.array([0]), torch.tensor([-1.0]), torch.tensor([-1.6]))]  # 0.6
    returns = reply_returns(terminal, replies, beta=0.1)
    kl = [2 / 2, -2 / 2, 0.6 / 2]  # per token: a reply's two tokens share its log-ratio
    np.testing.assert_allclose(returns[0].numpy(), [1 - 0.1 * sum(kl), -1 - 0.1 * 0.5 / 2], rtol=1e-6)
    np.testing.assert_allclose(returns[1].numpy(), [1 - 0.1 * (kl[1] + kl[2])], rtol=1e-6)
    np.testing.assert_allclose(returns[2].numpy(), [1 - 0.1 * kl[2]], rtol=1e-6)


# --------------------------------------------------------------------------- Python problems and the adapter


def test_program_of_takes_the_python_block_and_nothing_else():
    assert fb.program_of("Sure:\n```python\nprint(1)\n```\n```python\nprint(2)\n```") == "print(1)\n"
    assert fb.program_of("```\nprint(3)\n```") == "print(3)\n"
    assert fb.program_of("print(4)") is None


def test_the_python_feedback_names_each_failure_and_never_a_private_test():
    data = fb.python_problems(Context(seed=0), limit=1)
    problem, environment = data.problems[0], data.environment
    wrong = environment.run("print('nope')", problem.public)
    crash = environment.run("raise ValueError('boom')", problem.public)
    slow = fb.PythonEnvironment(3, 1.0).run("while True:\n    pass", problem.public[:1])
    assert all(f.startswith("wrong answer: expected") for f in wrong)
    assert all("ValueError: boom" in f for f in crash), crash
    assert slow == ["execution took too long"]
    message = environment.feedback(problem, wrong)
    assert all(t.stdin.strip() in message for t in problem.public)
    shown = "".join(t.stdin + t.expected for t in problem.public) + problem.statement
    assert not any(t.stdin.strip() in message for t in problem.private if t.stdin.strip() not in shown)
    assert environment.run(None, problem.public) == ["no code block was found in the reply"] * 2
    assert problem.statement in environment.prompt(problem)


class FakeModel(BaseHTTPRequestHandler):
    """An OpenAI-compatible /chat/completions that gets the first problem wrong at first and right once it has seen
    feedback; it records every request."""

    requests: list = []
    reference = ""

    def do_POST(self):  # noqa: N802 (http.server's name)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        FakeModel.requests.append(body)
        fed_back = any("failed the following tests" in m["content"] for m in body["messages"] if m["role"] == "user")
        program = FakeModel.reference if fed_back else "print(0)"
        reply = f"Here:\n```python\n{program}\n```"
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
    FakeModel.reference = PROBLEMS[0].reference
    server = HTTPServer(("127.0.0.1", 0), FakeModel)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def test_a_served_model_repairs_from_feedback_multi_turn_and_not_single_turn(fake_server, monkeypatch):
    from baselines.execution_feedback import ServedModel

    monkeypatch.setenv("HARNESS_MODEL_URL", fake_server)
    monkeypatch.setenv("HARNESS_MODEL", "fake-8b")
    context = Context(seed=0, dataset="python-problems")
    data = fb.python_problems(context, limit=1, rollouts=2, resamples=50)
    multi = fb.TASK.evaluate(ServedModel(), data, context).metrics
    assert multi["solve_1at1"] == 0.0 and multi["solve_1at3"] == 1.0 and multi["replies_per_rollout"] == 2.0
    asked = len(FakeModel.requests)
    assert asked == 4  # two rollouts of two replies
    second = FakeModel.requests[2]["messages"]  # the first rollout's second turn (both rollouts ask in turn)
    assert [m["role"] for m in second] == ["user", "assistant", "user"] and second[0]["content"].startswith(
        PROBLEMS[0].statement)
    everything = json.dumps(FakeModel.requests)
    assert not any(json.dumps(t.expected.strip())[1:-1] in everything for t in PROBLEMS[0].private
                   if t.expected.strip() not in {p.expected.strip() for p in PROBLEMS[0].public}
                   and len(t.expected.strip()) > 3)
    single = fb.TASK.evaluate(ServedModel(multi_turn=False), data, context).metrics
    assert single["solve_1at3"] == 0.0 and single["replies_per_rollout"] == 1.0
    assert FakeModel.requests[-1]["temperature"] == 1.0


def test_a_served_model_without_an_endpoint_is_skipped(monkeypatch):
    from baselines.execution_feedback import ServedModel

    monkeypatch.delenv("HARNESS_MODEL_URL", raising=False)
    monkeypatch.delenv("HARNESS_MODEL", raising=False)
    data = fb.python_problems(Context(seed=0), limit=1)
    with pytest.raises(DataUnavailable, match="HARNESS_MODEL_URL"):
        ServedModel().fit(data.environment, Context(seed=0))


def test_the_reference_solutions_solve_every_problem_and_the_trivial_answer_none():
    from baselines.execution_feedback import ReferenceSolutions, TrivialAnswer

    context = Context(seed=0, dataset="python-problems")
    data = fb.python_problems(context, limit=3, rollouts=1, resamples=20)
    assert fb.TASK.evaluate(ReferenceSolutions(), data, context).metrics["solve_1at1"] == 1.0
    assert fb.TASK.evaluate(TrivialAnswer(), data, context).metrics["solve_10at100"] == 0.0
