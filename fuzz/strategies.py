"""Hostile inputs for the campaigns.

Text starts from something close to the language (canonical streams and calls, blocks generated
from the grammar itself, transcripts made of turns) and is then attacked: markers spliced in
anywhere, halves of markers, truncation, a piece of the text copied elsewhere, digit runs past
Python's int limit, deep nesting, CRLF line ends, a BOM, non-ASCII. Markers come from
`gemma4_lark.tokens`, not spelled out again.
"""

from __future__ import annotations

import functools
import json

from hypothesis import strategies as st

from gemma4_lark import strategies as base
from gemma4_lark import tokens

MARKERS = tuple(tokens.CONTROL_TOKENS) + (tokens.THOUGHT_OPEN, tokens.CALL_KEYWORD, tokens.RESPONSE_KEYWORD,
                                          tokens.DECLARATION_KEYWORD)
# Every proper prefix and suffix of a marker longer than one character: what a chunk boundary or
# a careless model leaves of it.
PARTIAL_MARKERS = tuple(sorted({m[:k] for m in MARKERS for k in range(2, len(m))}
                               | {m[k:] for m in tokens.CONTROL_TOKENS for k in range(1, len(m) - 1)}))
# Tokens of the grammar's shape (`<|word>`, `<|word|>`, `<word|>`) that are not Gemma's, and
# FunctionGemma's string delimiter.
FOREIGN_TOKENS = ("<|im_start|>", "<|endoftext|>", "<image|>", "<|foo>", "<bar|>", "<escape>", "<start_function_call>")
PUNCTUATION = ("{", "}", "[", "]", ",", ":", '"', "'", "=", "(", ")", "\n", "\r\n", " ", "\t", "\\")
ODD_TEXT = ("\ufeff", "\u00e9", "\u65e5\u672c", "\U0001f600", "\x00", "\u2028", "\r", "\u0301",
            "-", "+", ".", "e", "1e309", "-0", "0.5", "true", "null", "None")

# Building a strategy from the grammar builds a Lark parser: once per start rule is enough.
grammar_text = functools.lru_cache(maxsize=None)(base.grammar_text)

SPLICES = MARKERS + FOREIGN_TOKENS + PUNCTUATION + ODD_TEXT
# What a model writes where a value goes when it gets the format wrong.
_SMALL_VALUES = ('"json"', "'single'", "bare words, with a comma", "1,", "[1,]", "{a:1,}", "{a:1 b:2}", "a=1",
                 tokens.STRING_DELIMITER + "unclosed", tokens.STRING_DELIMITER * 3, "1.5e", "--1", "0x10", "{", "]")


def splice() -> st.SearchStrategy:
    """One piece to insert: a marker, half a marker, punctuation or odd text."""
    return st.one_of(st.sampled_from(SPLICES), st.sampled_from(PARTIAL_MARKERS))


def digit_run() -> st.SearchStrategy:
    """Numbers with more digits than `int()` takes by default (4300), and around the limit."""
    return st.tuples(st.sampled_from(["", "-", "0.", "1e", "-1."]), st.integers(4290, 4400)).map(
        lambda p: p[0] + "7" * p[1])


def deep_nesting() -> st.SearchStrategy:
    """Brackets and braces open (and sometimes closed) far past any depth limit."""
    return st.tuples(st.sampled_from(["[", "{a:", "{a:[", "[{b:"]), st.integers(200, 3000), st.booleans()).map(
        lambda p: p[0] * p[1] + ("" if p[2] else "1" + "".join({"[": "]", "{": "}"}[c] for c in reversed(p[0] * p[1]) if c in "[{")))


_OPS = ("insert", "insert", "insert", "delete", "truncate", "copy", "crlf", "bom", "big", "value", "value")
_VALUE_STARTS = ":[,"
_VALUE_ENDS = ",}]<"


def _value_positions(text: str) -> list:
    return [i + 1 for i, c in enumerate(text) if c in _VALUE_STARTS]


def _apply(text: str, ops) -> str:
    for kind, at, size, piece in ops:
        at = at % (len(text) + 1)
        if kind == "insert":
            text = text[:at] + piece + text[at:]
        elif kind == "delete":
            text = text[:at] + text[at + 1 + size % 8:]
        elif kind == "truncate":
            text = text[:at]
        elif kind == "copy":  # a slice of the text itself, elsewhere
            source = size % (len(text) + 1)
            text = text[:at] + text[source:source + 1 + size % 40] + text[at:]
        elif kind == "crlf":
            text = text.replace("\n", "\r\n")
        elif kind == "bom":
            text = "\ufeff" + text
        elif kind == "value":  # a value replaced: where a value starts, up to where it ends
            positions = _value_positions(text)
            if positions:
                at = positions[size % len(positions)]
                end = at
                while end < len(text) and text[end] not in _VALUE_ENDS:
                    end += 1
                text = text[:at] + piece + text[end:]
        else:  # "big": a huge digit run or deep nesting, spliced in
            text = text[:at] + piece + text[at:]
    return text


def attacked(text: str, max_ops: int = 5) -> st.SearchStrategy:
    """`text` after 1 to `max_ops` hostile edits."""
    def op(kind):
        if kind == "big":
            piece = st.one_of(digit_run(), deep_nesting())
        elif kind == "value":
            piece = st.one_of(digit_run(), deep_nesting(), splice(), st.sampled_from(_SMALL_VALUES))
        else:
            piece = splice()
        return st.tuples(st.just(kind), st.integers(0, 10**6), st.integers(0, 10**6), piece)

    return st.lists(st.sampled_from(_OPS).flatmap(op), min_size=1, max_size=max_ops).map(lambda ops: _apply(text, ops))


def call_blocks() -> st.SearchStrategy:
    """Valid call blocks: canonical ones, and ones generated from the grammar (odd whitespace,
    every value form)."""
    return st.one_of(base.canonical_calls(), grammar_text("call_block"))


def streams() -> st.SearchStrategy:
    """Model outputs: text, thoughts and call blocks (canonical or grammar-generated)."""
    piece = st.one_of(base.canonical_streams(), call_blocks(), st.sampled_from(SPLICES))
    return st.lists(piece, min_size=1, max_size=5).map("".join)


def hostile_streams() -> st.SearchStrategy:
    """Model outputs, mostly attacked (one in five left valid)."""
    return streams().flatmap(lambda text: st.one_of(st.just(text), attacked(text), attacked(text), attacked(text),
                                                    attacked(text)))


def hostile_blocks(start: str = "call_block") -> st.SearchStrategy:
    """Blocks of one start rule of the grammar, attacked or not."""
    return grammar_text(start).flatmap(lambda text: st.one_of(st.just(text), attacked(text)))


def _turn(role: str, body: str, closed: bool) -> str:
    return tokens.TURN_OPEN + role + "\n" + body + (tokens.TURN_CLOSE + "\n" if closed else "")


def transcripts() -> st.SearchStrategy:
    """`<bos>` and turns whose bodies are text, thoughts, calls, responses and declarations."""
    body = st.lists(st.one_of(streams(), grammar_text("response_block"), grammar_text("declaration_block"),
                              st.sampled_from([tokens.THINK + "\n", tokens.IMAGE, tokens.AUDIO, tokens.TOOL_RESPONSE_OPEN,
                                               tokens.THOUGHT_OPEN + tokens.CHANNEL_CLOSE])),
                    max_size=3).map("".join)
    turn = st.tuples(st.sampled_from(["system", "user", "model", "developer", "tool"]), body, st.booleans()).map(
        lambda t: _turn(*t))
    return st.tuples(st.booleans(), st.lists(turn, max_size=4)).map(lambda t: (tokens.BOS if t[0] else "") + "".join(t[1]))


def hostile_transcripts() -> st.SearchStrategy:
    return transcripts().flatmap(lambda text: st.one_of(st.just(text), attacked(text), attacked(text)))


def any_text() -> st.SearchStrategy:
    """Anything a parse function could be handed: streams, blocks, transcripts, attacked."""
    return st.one_of(hostile_streams(), hostile_blocks("call_block"), hostile_blocks("value_document"),
                     hostile_transcripts(), st.text(max_size=40))


# --- chunkings and options -------------------------------------------------------------------------
def chunkings(text: str) -> st.SearchStrategy:
    """The text cut at random points, or into pieces of one fixed small size."""
    fixed = st.integers(1, 7).map(lambda size: [text[i:i + size] for i in range(0, len(text), size)] or [""])
    return st.one_of(base.chunked(text), fixed)


def stream_options() -> st.SearchStrategy:
    """Keyword arguments for StreamParser (and ReferenceScanner): every option, limits small and
    large."""
    return st.fixed_dictionaries({
        "strict": st.booleans(),
        "parse_thinking": st.booleans(),
        "start_in_thinking": st.booleans(),
        "max_block_chars": st.sampled_from([4 * 1024 * 1024]) | st.integers(1, 64) | st.integers(200, 300)
        | st.integers(1000, 5000),
        "max_depth": st.sampled_from([512]) | st.integers(1, 8) | st.integers(900, 3000),
    })


# --- renderer inputs -------------------------------------------------------------------------------
def hostile_strings(max_pieces: int = 4) -> st.SearchStrategy:
    """Short strings, often holding a marker, half of one, or structure punctuation."""
    piece = st.one_of(st.text(max_size=6), splice(), splice())
    return st.lists(piece, max_size=max_pieces).map("".join)


def plain_names() -> st.SearchStrategy:
    return base.names()


def names() -> st.SearchStrategy:
    """Tool names: mostly well formed, sometimes hostile."""
    return st.one_of(plain_names(), plain_names(), hostile_strings())


def keys() -> st.SearchStrategy:
    return st.one_of(st.from_regex(r"[a-z_][a-z0-9_]{0,8}", fullmatch=True), hostile_strings())


def values(max_leaves: int = 12) -> st.SearchStrategy:
    """JSON-like values with hostile strings and keys."""
    scalars = (st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
               | hostile_strings())
    return st.recursive(scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(keys(), inner, max_size=3),
                        max_leaves=max_leaves)


def arguments() -> st.SearchStrategy:
    return st.dictionaries(keys(), values(), max_size=3)


def text_parts(media=()) -> st.SearchStrategy:
    """Content as a string or as a list of parts (text split anywhere, media between)."""
    part = hostile_strings().map(lambda t: {"type": "text", "text": t})
    if media:
        part = st.one_of(part, st.sampled_from(media).map(lambda kind: {"type": kind}))
    return st.one_of(hostile_strings(), st.lists(part, max_size=4))


def official_messages() -> st.SearchStrategy:
    """OpenAI-style conversations for `render_chat`: an optional system message, then user
    messages and assistant messages (text, reasoning, calls), each call answered by a tool
    message. Every string may be hostile, including names, keys and roles."""
    def call(i):
        return st.fixed_dictionaries({"id": st.just(f"c{i}"), "type": st.just("function"),
                                      "function": st.fixed_dictionaries({"name": names(), "arguments": arguments()})})

    def assistant(i):
        # text only: media in an assistant message after tool results is written where a tool
        # result's media goes, and reads back as the result's (the template is ambiguous there)
        return st.tuples(text_parts(), st.one_of(st.none(), hostile_strings()), st.lists(call(i), max_size=2),
                         st.lists(st.one_of(hostile_strings(), st.dictionaries(keys(), values(), max_size=2)),
                                  max_size=2)).map(_assistant_messages)

    user = st.tuples(st.one_of(st.just("user"), st.just("user"), st.just("user"), hostile_strings()),
                     text_parts(media=("image", "audio", "video"))).map(lambda t: [{"role": t[0], "content": t[1]}])
    system = st.one_of(st.just([]), st.tuples(st.sampled_from(["system", "developer"]), hostile_strings()).map(
        lambda t: [{"role": t[0], "content": t[1]}]))
    turns = st.lists(st.one_of(user, st.integers(0, 99).flatmap(assistant)), min_size=1, max_size=4)
    return st.tuples(system, turns).map(lambda t: t[0] + [m for turn in t[1] for m in turn])


def _assistant_messages(parts) -> list:
    content, reasoning, calls, results = parts
    message = {"role": "assistant", "content": content}
    if reasoning is not None:
        message["reasoning_content"] = reasoning
    if not calls:
        return [message]
    # one id per call, as OpenAI gives them: a result names the call it answers by its id
    message["tool_calls"] = calls = [{**c, "id": f"{c['id']}_{k}"} for k, c in enumerate(calls)]
    answers = [{"role": "tool", "tool_call_id": c["id"], "content": r} for c, r in zip(calls, results)]
    return [message] + answers


def official_tools() -> st.SearchStrategy:
    prop = st.fixed_dictionaries({"type": st.sampled_from(["string", "integer", "number", "boolean"])},
                                 optional={"description": hostile_strings(),
                                           "enum": st.lists(hostile_strings(), min_size=1, max_size=2)})
    function = st.fixed_dictionaries(
        {"name": names(), "description": hostile_strings()},
        optional={"parameters": st.fixed_dictionaries({
            "type": st.just("object"), "properties": st.dictionaries(keys(), prop, max_size=2)},
            optional={"required": st.lists(hostile_strings(), max_size=2)})})
    return st.lists(st.fixed_dictionaries({"type": st.just("function"), "function": function}), max_size=2,
                    unique_by=lambda tool: tool["function"]["name"])  # tools.read_tools refuses a name twice


def omp_messages() -> st.SearchStrategy:
    """Conversations in OMP's message shape for `render_transcript`."""
    user_part = st.one_of(hostile_strings().map(lambda t: {"type": "text", "text": t}),
                          hostile_strings().map(lambda m: {"type": "image", "mimeType": m}))
    user = st.tuples(st.sampled_from(["user", "system", "developer"]),
                     st.one_of(hostile_strings(), st.lists(user_part, max_size=3))).map(
        lambda t: [{"role": t[0], "content": t[1]}])
    assistant_part = st.one_of(
        hostile_strings().map(lambda t: {"type": "text", "text": t}),
        hostile_strings().map(lambda t: {"type": "thinking", "thinking": t}),
        st.tuples(names(), arguments()).map(lambda c: {"type": "toolCall", "id": "", "name": c[0], "arguments": c[1]}))
    result = st.tuples(names(), st.one_of(hostile_strings(), values().map(_json))).map(
        lambda r: {"role": "toolResult", "toolCallId": "", "toolName": r[0],
                   "content": [{"type": "text", "text": r[1]}], "isError": False})
    assistant = st.tuples(st.lists(assistant_part, max_size=4), st.lists(result, max_size=2)).map(
        lambda t: [{"role": "assistant", "content": t[0]}] + t[1])
    return st.lists(st.one_of(user, assistant), min_size=1, max_size=4).map(lambda turns: [m for t in turns for m in t])


def _json(value) -> str:
    return json.dumps(value, ensure_ascii=False)


def omp_tools() -> st.SearchStrategy:
    schema = st.recursive(
        st.fixed_dictionaries({"type": st.sampled_from(["string", "integer", "boolean", "null"])},
                              optional={"description": hostile_strings(), "enum": st.lists(values(3), min_size=1, max_size=3)}),
        lambda inner: st.one_of(
            st.fixed_dictionaries({"type": st.just("object"), "properties": st.dictionaries(hostile_strings(), inner, max_size=2)},
                                  optional={"description": hostile_strings(), "required": st.lists(hostile_strings(), max_size=2)}),
            st.fixed_dictionaries({"type": st.just("array"), "items": inner})),
        max_leaves=4)
    tool = st.fixed_dictionaries({"name": names()}, optional={
        "description": hostile_strings(), "parameters": schema, "examples": st.lists(hostile_strings(), max_size=2)})
    return st.lists(tool, max_size=2, unique_by=lambda t: t["name"])  # tools.read_tools refuses a name twice
