"""LocalModel as a method of ``reasoning.esolang``."""
from __future__ import annotations

import os

from components.chat_client import code_block, complete
from harness.tasks.base import DataUnavailable
from harness.tasks.reasoning.esolang import Answer

URL_VARIABLE, MODEL_VARIABLE, KEY_VARIABLE = "HARNESS_MODEL_URL", "HARNESS_MODEL", "HARNESS_MODEL_KEY"


class LocalModel:
    """Ask the model at ``base_url`` (else ``$HARNESS_MODEL_URL``, e.g. ``http://127.0.0.1:8000/v1``) named
    ``model`` (else ``$HARNESS_MODEL``) each problem's prompt and its Python twin's, once each at ``temperature``
    (0: greedy), and answer the first code block of each reply. Without an endpoint the cell is skipped, saying
    which variables to set."""

    def __init__(self, base_url: str | None = None, model: str | None = None, temperature: float = 0.0,
                 max_tokens: int = 1024):
        self.base_url, self.model = base_url, model
        self.temperature, self.max_tokens = temperature, max_tokens

    def solve(self, session):
        base_url = self.base_url or os.environ.get(URL_VARIABLE)
        model = self.model or os.environ.get(MODEL_VARIABLE)
        if not base_url or not model:
            raise DataUnavailable(f"no model endpoint: set {URL_VARIABLE} (an OpenAI-compatible base URL you run, "
                                  f"e.g. http://127.0.0.1:8000/v1) and {MODEL_VARIABLE}, or the method's base_url "
                                  "and model parameters")
        key = os.environ.get(KEY_VARIABLE)
        answers = [code_block(complete(base_url, model, prompt, temperature=self.temperature,
                                       max_tokens=self.max_tokens, api_key=key))
                   for prompt in (session.prompt, session.twin_prompt)]
        session.programs_tried += 2
        return Answer(answers[0], answers[1])
