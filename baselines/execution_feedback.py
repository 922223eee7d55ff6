"""Baselines of ``codegen.execution_feedback`` (RLEF's comparison, the paper note's (d)).

On the hidden-constants toy every arm starts from the seed's initial policy (:mod:`components.feedback_policy_torch`):

* :class:`InitialIndependent`: the initial policy, independent single-turn samples (the paper's base model, k
  samples);
* :class:`InitialMultiTurn`: the initial policy, multi-turn with feedback but never trained on it (a sanity row);
* :class:`ShuffledFeedbackRL`: RLEF's training and acting with each failed episode's feedback replaced by another
  failed episode's (the feedback carries nothing about the reply: the control that the gain comes from reading it);
* :class:`SingleTurnPPO`: PPO on one-reply episodes, independent samples;
* :class:`RLEFSingleTurn`: RLEF's trained policy sampled single-turn (the paper's ST-vs-MT control: separates a
  better first reply from the use of feedback);
* :class:`TrivialAnswer` (both datasets): the hints as the constants; on the Python problems an empty program.

On the bundled Python problems: :class:`ReferenceSolutions` (the scorer's check) and :class:`ServedModel`, a model
at an OpenAI-compatible endpoint the user runs, multi-turn or independent samples.
"""
from __future__ import annotations

import os

from components.feedback_policy import PolicyArm
from harness.tasks.base import DataUnavailable

URL_VARIABLE, MODEL_VARIABLE, KEY_VARIABLE = "HARNESS_MODEL_URL", "HARNESS_MODEL", "HARNESS_MODEL_KEY"


class InitialIndependent(PolicyArm):
    """The seed's initial policy, untrained, one reply per rollout."""

    train_turns = 0
    turns = 1


class InitialMultiTurn(PolicyArm):
    """The seed's initial policy, untrained, multi-turn with the real feedback."""

    train_turns = 0
    turns = None


class ShuffledFeedbackRL(PolicyArm):
    """RLEF with shuffled feedback in training and in evaluation."""

    train_turns = None
    turns = None
    shuffle_feedback = True


class SingleTurnPPO(PolicyArm):
    """PPO on one-reply episodes (no feedback ever), independent single-turn samples."""

    train_turns = 1
    turns = 1


class RLEFSingleTurn(PolicyArm):
    """RLEF's training (multi-turn, real feedback), then independent single-turn samples."""

    train_turns = None
    turns = 1


def _toy(environment) -> bool:
    from harness.tasks.codegen.feedback import HiddenConstantsEnvironment

    return isinstance(environment, HiddenConstantsEnvironment)


class TrivialAnswer:
    """The trivial answer: the hints as the constants (hidden-constants); an empty program (python-problems).
    One reply per rollout."""

    turns = 1

    def fit(self, environment, context) -> dict:
        self.toy_ = _toy(environment)
        return {}

    def act(self, observation):
        if self.toy_:
            return observation.hints
        return ["```python\n\n```" for _ in observation]


class ReferenceSolutions:
    """Each bundled problem's reference program (the scorer's check: every private test passes)."""

    turns = 1

    def fit(self, environment, context) -> dict:
        if _toy(environment):
            raise DataUnavailable("reference solutions exist for python-problems only (the toy has no program text)")
        return {}

    def act(self, dialogues):
        from harness.tasks.codegen.problems import PROBLEMS

        replies = []
        for dialogue in dialogues:
            prompt = dialogue[0]["content"]
            problem = next(p for p in PROBLEMS if prompt.startswith(p.statement))
            replies.append(f"```python\n{problem.reference}\n```")
        return replies


class ServedModel:
    """A language model at an OpenAI-compatible endpoint the user runs: ``base_url`` (else ``$HARNESS_MODEL_URL``,
    e.g. ``http://127.0.0.1:8000/v1``) and ``model`` (else ``$HARNESS_MODEL``), sampled at ``temperature``.
    ``multi_turn``: the dialogue goes on with the feedback of the public tests (up to the environment's turn limit);
    otherwise each rollout is one independent reply. Acts on python-problems; without an endpoint the cell is
    skipped, saying which variables to set."""

    def __init__(self, base_url: str | None = None, model: str | None = None, temperature: float = 1.0,
                 max_tokens: int = 1024, multi_turn: bool = True):
        self.base_url, self.model, self.temperature = base_url, model, temperature
        self.max_tokens, self.multi_turn = max_tokens, multi_turn
        self.turns = None if multi_turn else 1

    def fit(self, environment, context) -> dict:
        if _toy(environment):
            raise DataUnavailable("a served model acts on python-problems (the toy is not rendered as text)")
        self.endpoint_ = (self.base_url or os.environ.get(URL_VARIABLE), self.model or os.environ.get(MODEL_VARIABLE))
        if not all(self.endpoint_):
            raise DataUnavailable(f"no model endpoint: set {URL_VARIABLE} (an OpenAI-compatible base URL you run, "
                                  f"e.g. http://127.0.0.1:8000/v1) and {MODEL_VARIABLE}, or the method's base_url "
                                  "and model parameters")
        return {}

    def act(self, dialogues):
        from components.chat_client import chat

        base_url, model = self.endpoint_
        return [chat(base_url, model, dialogue, temperature=self.temperature, max_tokens=self.max_tokens,
                     api_key=os.environ.get(KEY_VARIABLE)) for dialogue in dialogues]
