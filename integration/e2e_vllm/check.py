"""What a response should hold, from the library's own reading of the raw output, and where a
server's response differs from it.

The reference is `parse_output(raw, tools=..., tool_choice=...)` of the raw output (the token ids
decoded with the special tokens kept), starting inside a thought when the prompt ends in the
template's thought prefill, made into a message by `to_openai_message`. A streamed response is
read by the plugin by token id (docs/streaming.md#token-ids: only a marker's special token is a
marker), so its reference is `StreamParser.for_tokenizer` over the same steps vLLM hands the
plugin (`model.deltas`): where the model spelled a marker with ordinary tokens, the two differ
by design, and the non-streamed plugin, which gets text only, follows the text. Compared, field by field:
the calls (name, in order), their argument JSON text (byte for byte), the content and the
reasoning. A field that is empty (None or "") on both sides agrees.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gemma4_incremental import StreamParser, collect, parse_output
from gemma4_incremental.openai import to_openai_message
from gemma4_lark import tokens

from .cases import Case
from .client import Observed

FIELDS = ("calls", "arguments", "content", "reasoning")


@dataclass(frozen=True)
class Expected:
    content: str | None
    reasoning: str | None
    calls: list[dict[str, Any]]     # name, arguments, and recovered/diagnostics where the library has them
    internal: list[str]             # the library's own failures (`code: internal`): bugs, never the output's


def expected(case: Case, raw: str, prompt: str, steps=None, tokenizer=None) -> Expected:
    """The reference for a response: of the raw text, or (`steps` and `tokenizer` given: a
    streamed response) of vLLM's (text, ids) steps read by token id."""
    options = dict(start_in_thinking=prompt.endswith(tokens.THOUGHT_OPEN), **case.parser_options())
    if steps is None:
        parsed = parse_output(raw, **options)
    else:
        parser = StreamParser.for_tokenizer(tokenizer, **options)
        events = [e for text, ids in steps for e in parser.feed(text, token_ids=ids)] + parser.flush()
        parsed = collect(events)
    message = to_openai_message(parsed)
    calls = []
    for entry in message.get("tool_calls", ()):
        extras = {k: entry[k] for k in ("recovered", "diagnostics") if k in entry}
        calls.append({"name": entry["function"]["name"], "arguments": entry["function"]["arguments"], **extras})
    if case.tools is None:  # vLLM's tool_choice without tools is "none": it strips the calls
        calls = []
    internal = [e.error for e in parsed.errors if e.code == "internal"]
    return Expected(message["content"], message.get("reasoning_content"), calls, internal)


def _same_text(a: str | None, b: str | None) -> bool:
    return (a or "") == (b or "")


def differences(want: Expected, got: Observed) -> dict[str, str]:
    """Field -> what differs, for each field of FIELDS that differs (empty: they agree)."""
    out: dict[str, str] = {}
    if want.internal:
        out["internal"] = f"parse_output failed inside the library: {want.internal}"
    names = [c["name"] for c in want.calls]
    got_names = [c["name"] for c in got.calls]
    if names != got_names:
        out["calls"] = f"want {names}, got {got_names}"
    want_args = [c["arguments"] for c in want.calls]
    got_args = [c["arguments"] for c in got.calls]
    if want_args != got_args:
        out["arguments"] = f"want {want_args!r}, got {got_args!r}"
    if not _same_text(want.content, got.content):
        out["content"] = f"want {want.content!r}, got {got.content!r}"
    if not _same_text(want.reasoning, got.reasoning):
        out["reasoning"] = f"want {want.reasoning!r}, got {got.reasoning!r}"
    return out


def marks_carried(want: Expected, got: Observed) -> tuple[int, int]:
    """(carried, owed): of the calls the library marks `recovered` (with `diagnostics`), how many
    reach the client with both keys as the library gives them."""
    owed = carried = 0
    for want_call, got_call in zip(want.calls, got.calls):
        if "recovered" in want_call:
            owed += 1
            if (got_call.get("recovered"), got_call.get("diagnostics")) == (want_call["recovered"],
                                                                           want_call.get("diagnostics")):
                carried += 1
    return carried, owed
