"""A client of an OpenAI-compatible chat endpoint that the user runs locally (llama.cpp's server, vLLM, Ollama's
/v1, ...): standard library only, no network beyond the URL given.

* :func:`complete`: one chat completion (``POST {base_url}/chat/completions``) of one prompt, the reply's text;
* :func:`chat`: the same for a whole dialogue (a multi-turn conversation);
* :func:`code_block`: the first fenced code block of a reply (else the reply itself).
"""
from __future__ import annotations

import json
import re
import urllib.error
import urllib.request

FENCE = re.compile(r"```[^\n`]*\n(.*?)```", re.DOTALL)


class EndpointError(RuntimeError):
    """The endpoint did not answer a completion (unreachable, an HTTP error, or a reply that is not one)."""


def complete(base_url: str, model: str, prompt: str, *, temperature: float = 0.0, max_tokens: int = 1024,
             timeout_s: float = 120.0, api_key: str | None = None) -> str:
    """The text of the first choice of a chat completion of ``prompt`` (one user message) by ``model``."""
    return chat(base_url, model, [{"role": "user", "content": prompt}], temperature=temperature,
                max_tokens=max_tokens, timeout_s=timeout_s, api_key=api_key)


def chat(base_url: str, model: str, messages: list[dict], *, temperature: float = 0.0, max_tokens: int = 1024,
         timeout_s: float = 120.0, api_key: str | None = None) -> str:
    """The text of the first choice of a chat completion of the dialogue ``messages`` (``{"role", "content"}``
    dicts, the user's and the assistant's turns) by ``model``."""
    body = json.dumps({"model": model, "messages": messages, "temperature": temperature,
                       "max_tokens": max_tokens}).encode()
    headers = {"Content-Type": "application/json"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    request = urllib.request.Request(base_url.rstrip("/") + "/chat/completions", data=body, headers=headers,
                                     method="POST")
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            reply = json.loads(response.read().decode("utf-8"))
    except urllib.error.HTTPError as error:
        raise EndpointError(f"{base_url}: HTTP {error.code} {error.reason}") from None
    except (urllib.error.URLError, OSError) as error:
        raise EndpointError(f"{base_url}: unreachable ({getattr(error, 'reason', error)})") from None
    except ValueError:
        raise EndpointError(f"{base_url}: the reply is not JSON") from None
    try:
        return str(reply["choices"][0]["message"]["content"])
    except (KeyError, IndexError, TypeError):
        raise EndpointError(f"{base_url}: the reply has no choices[0].message.content") from None


def code_block(reply: str) -> str:
    """The first fenced code block of ``reply`` without its fences, else the whole reply stripped."""
    match = FENCE.search(reply)
    return (match.group(1) if match else reply).strip("\n")
