"""The grammars the exports start from, translated from the grammar of record (`_translate`): one
call block (`call_grammar`, exactly the language of `parse_call`), a whole model turn under a tool
choice (`output_grammar`), and either with the declared tools' call blocks in place of the
generic one (`with_call_block`)."""

from __future__ import annotations

import functools
from types import MappingProxyType

from .. import grammar as source
from .. import tokens
from ._translate import Builder, rule_name
from .ir import Grammar, Literal, Ref, Repeat, char_class, seq


@functools.lru_cache(maxsize=1)
def call_grammar() -> Grammar:
    """One call block: exactly the language of `parse_call` (whitespace before it included, as
    the parser ignores it)."""
    b = Builder(source.BLOCK_STARTS)
    block = b.rule("call_block")
    b.rules["start"] = seq(Repeat(b.ws(), 0, 1), Ref(block))
    return Grammar("start", MappingProxyType(dict(b.rules)))  # cached: shared, so read-only


# How much text may come before the call a turn must make (`tool_choice` "required" or a named
# function). Unbounded, a model that keeps writing prose never reaches the call the grammar
# insists on (llama.cpp's lazy grammars looped this way); bounded, the call comes within this
# many characters. The prefix also holds no `<`, the first character of every marker, so it can
# neither spell a marker nor leave one half-written: a preamble such as "Let me check that." fits.
MAX_PREFIX_CHARS = 512

CALL_RULE = "call_block"
THOUGHT_RULE = "thought"
OUTPUT_RULE = "model_output"
MODES = ("none", "auto", "required", "function")


def output_grammar(*, mode: str = "auto", thinking: bool = True, call_block: Grammar | None = None) -> Grammar:
    """A whole model turn, as the grammar's `model_output` rule has it: text, thoughts and call
    blocks in any order, then an optional stop marker. `thinking=False` leaves thoughts out;
    `mode` "none" leaves calls out, "required" and "function" ask for at least one call with at
    most `MAX_PREFIX_CHARS` of text (and a thought, when thinking) before the first.
    `call_block`, when given, stands for every call block (the declared tools')."""
    g = _output_grammar(mode, thinking, call_block is not None and mode in ("required", "function"))
    return with_call_block(g, call_block) if call_block is not None and mode != "none" else g


@functools.lru_cache(maxsize=None)
def _output_grammar(mode: str, thinking: bool, named_allowed: bool) -> Grammar:
    # the turn without its tools: built once per mode and thinking
    if mode not in MODES:
        raise ValueError(f"unknown tool choice mode {mode!r}")
    exclude = set()
    if not thinking:
        exclude.add(THOUGHT_RULE)
    if mode == "none":
        exclude.add(CALL_RULE)
    b = Builder(source.DOCUMENT_STARTS, frozenset(exclude))
    output = b.rule(OUTPUT_RULE)
    rules = dict(b.rules)
    if mode in ("required", "function"):
        if not named_allowed and mode == "function":
            raise ValueError("a named tool_choice needs the declared tools")
        first = [Ref(b.rule(THOUGHT_RULE))] if thinking else []
        prefix = Repeat(char_class(_prefix_ranges()), 0, MAX_PREFIX_CHARS)
        rules["start"] = seq(*(Repeat(f, 0, 1) for f in first), Repeat(Ref("call_prefix"), 0, 1),
                             Ref(rule_name(CALL_RULE)), Ref(output))
        rules["call_prefix"] = prefix
        # every piece the turn may hold after its first call is what `auto` allows
    else:
        rules["start"] = Ref(output)
    return Grammar("start", MappingProxyType(rules))  # cached: shared, so read-only


def _prefix_ranges():
    """Every character but the first characters of the markers."""
    from .ir import complement_ranges, merge_ranges
    return complement_ranges(merge_ranges((ord(m[0]), ord(m[0])) for m in tokens.CONTROL_TOKENS))


def with_call_block(g: Grammar, call_block: Grammar) -> Grammar:
    """`g` with its call block rule standing for `call_block`'s start rule (the declared tools'
    call blocks), their rules beside those of `g` still in use."""
    name = rule_name(CALL_RULE)
    if name not in g.rules:
        raise ValueError("the grammar has no call block to replace")
    rules = dict(g.rules)
    rules[name] = Ref(call_block.start)
    rules.pop(call_block.start, None)
    from ._analysis import reachable

    kept = {n: rules[n] for n in reachable(Grammar(g.start, {**rules, **{call_block.start: Literal("")}}))
            if n != call_block.start}
    clash = sorted(set(call_block.rules) & set(kept))
    if clash:
        raise ValueError(f"rule names used twice: {', '.join(clash)}")
    kept.update(call_block.rules)
    return Grammar(g.start, kept, structure=frozenset(n for n in g.structure | call_block.structure if n in kept),
                   marks_apart=frozenset(n for n in g.marks_apart | call_block.marks_apart if n in kept))
