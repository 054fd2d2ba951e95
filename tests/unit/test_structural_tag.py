"""constrain.structural_tag: the shape vLLM and SGLang take (xgrammar's structural-tag format),
and the tag at work in llguidance, whose structural tags (`llguidance.StructTag`) take the same
trigger, begin and end, and the tag's own argument grammars read by llguidance's GBNF reader."""

import json
import random

import pytest

from gemma4_lark import parse_call
from gemma4_lark.constrain.structural_tag import structural_tag
from gemma4_lark.tools import ShapeError

WEATHER = {"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"location": {"type": "string"}, "days": {"type": "integer"}},
    "required": ["location"]}}}
PING = {"name": "ping"}


def tags_of(tag):
    fmt = tag["format"]
    if fmt["type"] == "sequence":
        fmt = fmt["elements"][-1]
    return fmt


def test_shape_auto_with_thinking():
    tag = structural_tag([WEATHER, PING])
    json.dumps(tag)  # JSON-able
    assert tag["type"] == "structural_tag"
    thought, calls = tag["format"]["elements"]
    assert thought == {"type": "optional", "content": {"type": "tag", "begin": "<|channel>thought",
                                                       "content": {"type": "any_text"}, "end": "<channel|>"}}
    assert calls["type"] == "triggered_tags" and calls["triggers"] == ["<|tool_call>"]
    assert calls["at_least_one"] is False
    assert [t["begin"] for t in calls["tags"]] == ["<|tool_call>call:get_weather", "<|tool_call>call:ping"]
    assert all(t["end"] == "<tool_call|>" and t["content"]["type"] == "grammar" for t in calls["tags"])
    assert calls["tags"][0]["content"]["grammar"].startswith("root ::= ")


def test_tool_choice_and_thinking_shapes():
    assert tags_of(structural_tag([WEATHER], tool_choice="required"))["at_least_one"] is True
    named = structural_tag([WEATHER, PING], tool_choice={"type": "function", "function": {"name": "ping"}}, thinking=False)
    assert named["format"]["type"] == "tag" and named["format"]["begin"] == "<|tool_call>call:ping"
    none = structural_tag([WEATHER], tool_choice="none", thinking=False)
    assert none["format"] == {"type": "any_text", "excludes": ["<|tool_call>"]}
    with pytest.raises(ValueError, match="at least one declared tool"):
        structural_tag([], tool_choice="required")
    with pytest.raises(ShapeError):
        structural_tag([WEATHER], tool_choice={"type": "function", "function": {"name": "nope"}})


# --- llguidance -------------------------------------------------------------------------------

llg = pytest.importorskip("llguidance")
from llguidance.gbnf_to_lark import gbnf_to_lark  # noqa: E402

from constrain_helpers import ByteTokenizer  # noqa: E402
from constrain_llg import EOS_ID, SPECIAL_ID, TOKENIZER, allowed  # noqa: E402

_TOKENS = ByteTokenizer().tokens


def decode(ids):
    """The text so far (a character cut between two byte tokens shows as U+FFFD)."""
    return b"".join(_TOKENS[t] for t in ids).decode("utf-8", errors="replace")

TRIGGER_ID = SPECIAL_ID["<|tool_call>"]


def llguidance_grammar(tag):
    """llguidance's structural tags for the triggered tags of `tag`: the same trigger, begin and
    end, and each argument grammar as the tag carries it (xgrammar's EBNF, GBNF-compatible)."""
    calls = tags_of(tag)
    struct_tags = [llg.StructTag(trigger=calls["triggers"][0], begin=t["begin"],
                                 grammar=gbnf_to_lark(t["content"]["grammar"]), end=t["end"]) for t in calls["tags"]]
    return llg.StructTag.to_grammar(struct_tags)


def text_ids(text):
    """The trigger as its special token (llguidance's structural tags take `<...>` triggers as
    special tokens), everything else as bytes: the grammar spells the rest as text."""
    ids = []
    for i, part in enumerate(text.split("<|tool_call>")):
        if i:
            ids.append(TRIGGER_ID)
        ids.extend(part.encode())
    return ids


def test_llguidance_takes_the_tag_and_its_calls():
    m = llg.LLMatcher(TOKENIZER, llguidance_grammar(structural_tag([WEATHER, PING])), log_level=0)
    assert not m.is_error(), m.get_error()
    good = ('Let me look.<|tool_call>call:get_weather{days:2,location:<|"|>Paris, FR<|"|>}<tool_call|>'
            'and<|tool_call>call:ping{}<tool_call|>')
    assert m.consume_tokens(text_ids(good)) and m.is_accepting(), m.get_error()
    for bad in ('<|tool_call>call:get_weather{days:2}<tool_call|>',        # location is required
                '<|tool_call>call:get_weather{location:Paris}<tool_call|>',  # strings are delimited
                '<|tool_call>call:other{}<tool_call|>'):
        fresh = llg.LLMatcher(TOKENIZER, llguidance_grammar(structural_tag([WEATHER, PING])), log_level=0)
        ids = text_ids(bad)
        assert fresh.validate_tokens(ids) < len(ids), bad


@pytest.mark.parametrize("seed", range(6))
def test_calls_generated_under_the_tag_parse(seed):
    """After the trigger, sample any allowed token until the tag's end: the block parses, and
    names a declared tool."""
    rng = random.Random(seed)
    m = llg.LLMatcher(TOKENIZER, llguidance_grammar(structural_tag([WEATHER, PING])), log_level=0)
    assert m.consume_token(TRIGGER_ID)
    ids = [TRIGGER_ID]
    for _ in range(300):
        text = decode(ids)
        if text.endswith("<tool_call|>"):
            break
        choices = [t for t in allowed(m) if t not in (EOS_ID, TRIGGER_ID)]
        printable = [t for t in choices if 0x20 <= t < 0x7f] or choices
        token = rng.choice(printable)
        for target in ('<|"|>', "<tool_call|>"):  # spelled in bytes here: finish one once begun
            for k in range(len(target) - 1, -1, -1):
                if text.endswith(target[:k]) and ord(target[k]) in choices and rng.random() < (0.9 if k else 0.15):
                    token = ord(target[k])
                    break
            else:
                continue
            break
        assert m.consume_token(token), m.get_error()
        ids.append(token)
    else:
        pytest.fail(f"no end within 300 tokens: {decode(ids)!r}")
    block = parse_call(decode(ids))
    assert block.name in ("get_weather", "ping")
    if block.name == "get_weather":
        assert isinstance(block.arguments["location"], str)
