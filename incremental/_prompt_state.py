"""Where a model's output starts, read from the rendered prompt it follows (`StreamParser.for_prompt`).

The grammar reads the prompt (`parse_transcript`): an output starts inside a thought when the
prompt's last turn is an open model turn ending in a thought prefill (`<|channel>thought\\n`, which
the official template writes after tool results when thinking is on), or in an assistant prefill
(`continue_final_message`) that ends inside a thought.
"""

from __future__ import annotations

from typing import Callable

from gemma4_lark import tokens
from gemma4_lark.errors import GemmaSyntaxError, PromptError
from gemma4_lark.model import ThoughtPrefill, ToolResponse
from gemma4_lark.parser import parse_transcript

__all__ = ["starts_in_thinking"]


def starts_in_thinking(prompt: str, reader: Callable[[], object]) -> bool:
    """Whether the output that follows `prompt` starts inside a thought. `reader()` makes a parser
    of the caller's options, to read an assistant prefill as output is read.

    Raises `PromptError` (a `ValueError`) when the prompt does not end in an open model turn (no
    generation prompt; a model turn the template closed after tool results, with the message's
    text after them, counts as open) or ends inside a call block, and `GemmaSyntaxError` (with its position) when
    the grammar rejects the prompt before its last model turn."""
    try:
        turns = parse_transcript(prompt).turns
    except GemmaSyntaxError as err:
        return _prefill_state(prompt, err, reader)
    last = turns[-1] if turns else None
    # The official template closes a model turn whose message had both calls and text (the text
    # goes after the results) and writes no new turn: the model goes on from there, after a thought
    # prefill when thinking is on. Any other closed turn lacks the generation prompt.
    continued = last is not None and last.closed and last.role == "model" and any(
        isinstance(part, (ToolResponse, ThoughtPrefill)) for part in last.parts)
    if last is None or last.role != "model" or (last.closed and not continued):
        raise PromptError("the prompt does not end in an open model turn: render it with the generation"
                          " prompt (add_generation_prompt=True)")
    return bool(last.parts) and isinstance(last.parts[-1], ThoughtPrefill)


def _prefill_state(prompt: str, err: GemmaSyntaxError, reader: Callable[[], object]) -> bool:
    """A prompt the grammar rejects inside its last, open model turn: the assistant prefill is model
    output, cut anywhere, so it is read as the output is, and the output starts where that reader
    stands at its end: True inside a thought, False in text. Inside a call block it cannot start
    (the block's beginning is in the prompt, and a call is decoded whole): a PromptError. Any other
    rejection is `err`, raised again."""
    opener = tokens.TURN_OPEN + "model\n"
    body = prompt.rfind(opener)
    if body < 0 or err.pos < body + len(opener):
        raise err
    body += len(opener)
    head = parse_transcript(prompt[:body]).turns  # (raises for a head that is wrong too)
    if not head or head[-1].role != "model" or head[-1].closed:
        raise err
    parser = reader()
    parser.feed(prompt[body:])
    where = parser.where
    if where == "thought":
        return True
    if where == "call":
        raise PromptError(
            f"the prompt's assistant prefill ends inside a tool call (its {tokens.TOOL_CALL_OPEN} at offset"
            f" {body + parser.open_block_start}): a call is parsed whole, so the output cannot start in the middle"
            f" of one; end the prefill before {tokens.TOOL_CALL_OPEN} or after {tokens.TOOL_CALL_CLOSE}")
    return False
