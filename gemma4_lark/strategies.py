"""Hypothesis strategies for the format, for your own tests and for the differential campaign
(`gemma4_lark.fuzz`). hypothesis is not a dependency of the library: only this module imports it,
and nothing of the library imports this module but the campaign, when it runs.

    values()             JSON-like values the format can carry (no string delimiter in strings)
    names()              function names of the grammar's NAME terminal
    calls()              (name, arguments) pairs
    canonical_calls()    canonical call blocks, as text (`canonical_call` writes one)
    canonical_streams()  model outputs made of text, thoughts and canonical call blocks
    edge_streams()       markup in every place: whole, cut and stray markers, odd, invalid,
                         nested and unclosed blocks, between text and canonical blocks
    bounded_streams()    a few blocks of every size and depth up to a few dozen: for small limits
    mutated(text)        the text after random deletions, insertions of markers, brackets and
                         quotes, and truncations
    chunked(text)        the text split at random points
    grammar_text(start)  strings generated from the grammar itself (hypothesis.extra.lark)

    settings(...)        hypothesis settings for properties over these strategies: no deadline,
                         no too-slow health check (see its docstring)
"""

from __future__ import annotations

import hypothesis
from hypothesis import strategies as st

from . import tokens
from .render.values import dump_value

__all__ = [
    "values", "names", "calls", "canonical_call", "canonical_calls",
    "canonical_streams", "edge_streams", "bounded_streams", "mutated", "chunked", "grammar_text", "settings",
]

_D = tokens.STRING_DELIMITER
_MARKERS = [t for t in tokens.CONTROL_TOKENS] + [tokens.CALL_KEYWORD, "{", "}", "[", "]", ",", ":", '"', "'", "\n"]


def values(max_leaves: int = 20) -> st.SearchStrategy:
    strings = st.text().filter(lambda s: _D not in s)
    scalars = (st.none() | st.booleans() | st.integers() | st.integers(min_value=-10**30, max_value=10**30)
               | st.floats(allow_nan=False, allow_infinity=False) | strings)
    return st.recursive(scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(strings, inner, max_size=4),
                        max_leaves=max_leaves)


def names() -> st.SearchStrategy:
    return st.from_regex(r"[A-Za-z_][A-Za-z0-9_.:-]{0,24}", fullmatch=True)


def calls() -> st.SearchStrategy:
    return st.tuples(names(), st.dictionaries(st.text().filter(lambda s: _D not in s), values(), max_size=5))


def settings(**overrides):
    """Hypothesis settings for a property over these strategies: `overrides` (max_examples, ...) on
    top of the current profile, without a deadline and without the too_slow health check.

    These strategies draw whole calls and streams, nested values and the grammar's own strings; on
    a loaded or small machine (2 shared cores) drawing the first examples can take longer than the
    health check allows, and the run then fails having found nothing (1 run in 13 did, running the
    guide's example). How long a draw takes says nothing about a parser, so neither the check nor a
    deadline belongs in a differential property."""
    current = hypothesis.settings()  # the profile loaded
    options = {"deadline": None, **overrides}
    options["suppress_health_check"] = [*current.suppress_health_check, hypothesis.HealthCheck.too_slow,
                                        *options.get("suppress_health_check", ())]
    return hypothesis.settings(current, **options)


def canonical_call(name: str, arguments: dict) -> str:
    """The canonical call block of `name` with `arguments` (strings may hold anything)."""
    return tokens.TOOL_CALL_OPEN + tokens.CALL_KEYWORD + name + dump_value(arguments, unsafe="allow") + tokens.TOOL_CALL_CLOSE


def canonical_calls() -> st.SearchStrategy:
    # control tokens inside strings are fine for the parsers (only the delimiter is not)
    return calls().map(lambda c: canonical_call(*c))


def _prose() -> st.SearchStrategy:
    plain = st.text(alphabet=st.characters(codec="utf-8", exclude_characters="<"), min_size=1, max_size=40)
    return plain | st.sampled_from(["a < b", "x <y> z", "{not a block}", "see <|", "<|tool_c"])


def canonical_streams() -> st.SearchStrategy:
    thought = _prose().map(lambda t: tokens.THOUGHT_OPEN + t + tokens.CHANNEL_CLOSE)
    piece = _prose() | thought | canonical_calls() | st.just(tokens.THOUGHT_OPEN + tokens.CHANNEL_CLOSE)
    return st.lists(piece, max_size=8).map("".join)


# Small blocks at the edges of the language: repeated keys, `<escape>`, nesting, odd blanks and
# numbers, refusals of every kind, unclosed strings and blocks.
_EDGE_BLOCKS = tuple(tokens.TOOL_CALL_OPEN + body for body in (
    "call:f{a:1,a:2}" + tokens.TOOL_CALL_CLOSE, "call:f{a:x<escape>y<escape> z}" + tokens.TOOL_CALL_CLOSE,
    "call:f{a:[[[[{b:[]}]]]]}" + tokens.TOOL_CALL_CLOSE, " call: f {\n a : -1.5e3 , b:.5,c:1.}\n" + tokens.TOOL_CALL_CLOSE,
    "call:f{a:1,}" + tokens.TOOL_CALL_CLOSE, "call:f{a:-,b:+x,c:hello world ,d:None}" + tokens.TOOL_CALL_CLOSE,
    "call:f{" + _D + "k" + _D + ":1," + _D + "k" + _D + ":" + _D + "<turn|>" + _D + "}" + tokens.TOOL_CALL_CLOSE,
    "call:f{a:1e999}" + tokens.TOOL_CALL_CLOSE, "call:f{a:12abc}" + tokens.TOOL_CALL_CLOSE,
    "call:f{a:x" + _D + "}" + tokens.TOOL_CALL_CLOSE, "call:f{a:" + _D + "open", "call:f{a:1}", "call:f",
    "call:f{a:<|image|>}" + tokens.TOOL_CALL_CLOSE, "call:f{a:b<c}" + tokens.TOOL_CALL_CLOSE,
    "call:f(a=1)" + tokens.TOOL_CALL_CLOSE, ":call:f{}" + tokens.TOOL_CALL_CLOSE, "call:a{}call:b{}" + tokens.TOOL_CALL_CLOSE,
))
_EDGE_PIECES = tuple(tokens.CONTROL_TOKENS) + (
    tokens.THOUGHT_OPEN, tokens.THOUGHT_OPEN[:-1], "thought\n", tokens.CALL_KEYWORD, "call:f{", "<|tool_c", "<tool_call",
    "<|channel>tho", "<|", "<", "|>", "{", "}", "[", "]", ",", ":", " ", "\n", tokens.FUNCTIONGEMMA_ESCAPE, "x y", "1",
    "-1.5e3", "true", "\ud800", "\udc00")  # lone surrogates: a str may hold them


def edge_streams() -> st.SearchStrategy:
    """Markup in every place: whole, cut and stray markers, odd, invalid, nested and unclosed
    blocks, among text and canonical blocks."""
    piece = st.one_of(st.sampled_from(_EDGE_PIECES), st.sampled_from(_EDGE_BLOCKS), canonical_calls(), _prose())
    return st.lists(piece, max_size=12).map("".join)


def bounded_streams() -> st.SearchStrategy:
    """A few short pieces, mostly blocks of every size and depth up to a few dozen characters and
    levels: what small `max_block_chars` and `max_depth` cut, at and around their bounds."""
    sized = st.integers(0, 40).map(lambda k: tokens.TOOL_CALL_OPEN + "call:f{a:" + _D + "x" * k + _D + "}"
                                   + tokens.TOOL_CALL_CLOSE)
    nested = st.tuples(st.integers(0, 8), st.sampled_from(["[", "{b:"])).map(
        lambda p: tokens.TOOL_CALL_OPEN + "call:f{a:" + p[1] * p[0] + "1" + ("]" if p[1] == "[" else "}") * p[0] + "}"
        + tokens.TOOL_CALL_CLOSE)
    bare = st.sampled_from([tokens.TOOL_CALL_OPEN, tokens.TOOL_CALL_CLOSE, tokens.TURN_CLOSE, tokens.EOS, "x", "{"])
    piece = st.one_of(sized, nested, bare, st.sampled_from(_EDGE_BLOCKS))
    return st.lists(piece, min_size=1, max_size=4).map("".join)


def mutated(text: str) -> st.SearchStrategy:
    """Mutations of `text`: deletions, insertions of markers/brackets/quotes, truncations."""
    def apply(draw_ops):
        out = text
        for kind, at, what in draw_ops:
            at = at % (len(out) + 1)
            if kind == "delete":
                out = out[:at] + out[at + 1 + what % 4:]
            elif kind == "insert":
                out = out[:at] + _MARKERS[what % len(_MARKERS)] + out[at:]
            else:
                out = out[:at]
        return out

    op = st.tuples(st.sampled_from(["delete", "insert", "insert", "truncate"]), st.integers(0, 10**6), st.integers(0, 10**6))
    return st.lists(op, min_size=1, max_size=4).map(apply)


def chunked(text: str) -> st.SearchStrategy:
    return st.lists(st.integers(0, max(len(text), 1)), max_size=12).map(
        lambda cuts: [text[a:b] for a, b in zip([0] + sorted(set(cuts)), sorted(set(cuts)) + [len(text)])])


def grammar_text(start: str) -> st.SearchStrategy:
    """Strings of the grammar's language for a block start rule, generated from the grammar."""
    from hypothesis.extra.lark import from_lark

    from . import grammar

    prose = st.text(alphabet=st.characters(codec="utf-8", exclude_characters="<"), min_size=1)
    explicit = {
        "STRING": prose.map(lambda s: _D + s + _D) | st.just(_D + _D),
        "INTEGER": st.integers().map(str),
        "FLOAT": st.floats(allow_nan=False, allow_infinity=False).map(repr),
        "BARE_WORD": st.from_regex(r"[A-Za-z_][A-Za-z0-9_ ]{0,10}[A-Za-z0-9_]", fullmatch=True),
    }
    return from_lark(grammar.build(grammar.BLOCK_STARTS, cache=False), start=start, explicit=explicit)
