"""One request through the `openai` client, and what a client gets from it.

Streamed responses are accumulated the way the OpenAI SDK does it
(`openai.lib.streaming.chat.ChatCompletionStreamState`). The raw output is what the model wrote:
the response's token ids (`return_token_ids`, a vLLM field) decoded with the special tokens kept.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import openai
from openai.lib.streaming.chat import ChatCompletionStreamState

from .cases import Case


@dataclass
class Observed:
    """What the client got: message fields as the client reads them, the raw output's ids."""

    content: str | None = None
    reasoning: str | None = None
    calls: list[dict[str, Any]] = field(default_factory=list)    # runnable entries: name, arguments, extras
    void: list[dict[str, Any]] = field(default_factory=list)     # streamed entries marked `error`
    finish_reason: str | None = None
    token_ids: list[int] = field(default_factory=list)
    prompt_token_ids: list[int] = field(default_factory=list)
    error: str | None = None                                     # an HTTP or client error
    tool_call_deltas: list[list[int]] = field(default_factory=list)  # streamed: each chunk's tool-call indices


def _reasoning(message: dict[str, Any]) -> str | None:
    for key in ("reasoning", "reasoning_content"):
        if message.get(key) is not None:
            return message[key]
    return None


def _calls(entries: list[dict[str, Any]] | None, observed: Observed) -> None:
    for entry in entries or ():
        function = entry.get("function") or {}
        extras = {k: entry[k] for k in ("recovered", "diagnostics") if k in entry}
        call = {"name": function.get("name"), "arguments": function.get("arguments"), **extras}
        (observed.void if "error" in entry else observed.calls).append(call)


def send(client: openai.OpenAI, case: Case, stream: bool) -> Observed:
    observed = Observed()
    try:
        if stream:
            _stream(client, case, observed)
        else:
            _whole(client, case, observed)
    except openai.APIStatusError as error:
        observed.error = f"HTTP {error.status_code}: {error.message}"
    except openai.APIError as error:
        observed.error = f"{type(error).__name__}: {error}"
    except Exception as error:  # the SDK could not accumulate the stream: the chunks broke its rules
        observed.error = f"client: {type(error).__name__}: {error} (tool-call indices per chunk: {observed.tool_call_deltas})"
    return observed


def _whole(client: openai.OpenAI, case: Case, observed: Observed) -> None:
    response = client.chat.completions.create(**case.body(stream=False)).model_dump()
    choice = response["choices"][0]
    message = choice["message"]
    observed.content = message.get("content")
    observed.reasoning = _reasoning(message)
    _calls(message.get("tool_calls"), observed)
    observed.finish_reason = choice.get("finish_reason")
    observed.token_ids = list(choice.get("token_ids") or ())
    observed.prompt_token_ids = list(response.get("prompt_token_ids") or ())


def _stream(client: openai.OpenAI, case: Case, observed: Observed) -> None:
    state = ChatCompletionStreamState()
    for chunk in client.chat.completions.create(**case.body(stream=True)):
        extra = chunk.model_dump()
        indices = [c["index"] for choice in extra.get("choices") or () for c in (choice.get("delta") or {}).get("tool_calls") or ()]
        if indices:
            observed.tool_call_deltas.append(indices)
        state.handle_chunk(chunk)
        if extra.get("prompt_token_ids"):
            observed.prompt_token_ids = list(extra["prompt_token_ids"])
        for choice in extra.get("choices") or ():
            observed.token_ids.extend(choice.get("token_ids") or ())
    snapshot = state.current_completion_snapshot
    choice = snapshot.choices[0]
    message = choice.message.to_dict()
    observed.content = message.get("content")
    observed.reasoning = _reasoning(message)
    _calls(message.get("tool_calls"), observed)
    observed.finish_reason = choice.finish_reason
