"""Reading back (docs/guide.md, "Read a prompt back"): a rendered transcript parses into the structure that was rendered, and
rendering what was read gives the same text, for both profiles."""

import json

from hypothesis import example, given, settings, strategies as st

import gemma4_lark as g
from gemma4_lark.messages import from_openai_messages, read_official, read_omp, to_openai_messages
from gemma4_lark.render.official import render_chat
from gemma4_lark.render.omp import render_transcript

from conftest import load_jsonl
from conftest import numbers_by_value
from conversations import MESSAGES, OPTIONS, TOOLS, argument_objects, conversations, names, texts, tool_declarations


def _object_tools():
    # a non-object `response` makes the template write a trailing comma (a template bug the
    # grammar rejects), so round trips use object responses
    return st.lists(tool_declarations.filter(lambda t: t["function"].get("response", {"type": "object"})["type"] == "object"), max_size=2,
                    unique_by=lambda t: t["function"]["name"])  # one declaration per name (tools.read_tools)


@settings(max_examples=120)
@example(messages=[{"role": "user", "content": ""},
                   {"role": "assistant", "content": "", "tool_calls": [
                       {"id": "c20", "type": "function", "function": {"name": "a", "arguments": {}}}]},
                   {"role": "tool", "tool_call_id": "c20", "content": ""},
                   {"role": "assistant", "content": "0"}],
         tools=None, options={"add_generation_prompt": True, "enable_thinking": False, "preserve_thinking": False},
         variant="e2b")
@given(conversations(), st.none() | _object_tools(), st.sampled_from(OPTIONS), st.sampled_from(["e2b", "31b"]))
def test_official_render_read_render(messages, tools, options, variant):
    text = render_chat(messages, tools, variant=variant, unsafe="allow", **options)
    read = read_official(text)
    again = render_chat(variant=variant, unsafe="allow", preserve_thinking=options["preserve_thinking"],
                        **read.render_kwargs())
    assert again == text


def test_official_read_back_structure():
    text = render_chat(MESSAGES, TOOLS, enable_thinking=True, add_generation_prompt=True)
    read = read_official(text)
    assert read.enable_thinking and [t["function"]["name"] for t in read.tools] == ["get_current_weather", "github:create-issue"]
    roles = [m["role"] for m in read.messages]
    assert roles == ["system", "user", "assistant", "tool", "tool", "assistant", "user"]
    assert read.messages[5]["content"] == "Done: 15 degrees, issue #7."
    calls = read.messages[2]["tool_calls"]
    assert calls[0]["function"]["arguments"] == MESSAGES[2]["tool_calls"][0]["function"]["arguments"]
    assert read.messages[3]["content"] == '{"temperature": 15}'
    assert to_openai_messages(text) == read.messages


def test_omp_cases_read_back_and_render_again():
    cases = [c for c in load_jsonl("omp-render-cases.jsonl") if c["op"] == "renderTranscript"]
    for case in cases:
        text = case["omp_text"]
        transcript = g.parse_transcript(text)
        assert [t.role for t in transcript.turns]
        assert render_transcript(read_omp(text), unsafe="allow") == text


@settings(max_examples=80)
@given(st.lists(st.tuples(texts, names, argument_objects, st.one_of(texts, st.dictionaries(names, st.integers(), max_size=2))),
                min_size=1, max_size=3))
def test_omp_render_read_render(turns):
    messages = []
    for i, (text, name, arguments, result) in enumerate(turns):
        messages.append({"role": "user", "content": text})
        messages.append({"role": "assistant", "content": [{"type": "text", "text": text},
                                                          {"type": "toolCall", "id": f"c{i}", "name": name, "arguments": arguments}]})
        messages.append({"role": "toolResult", "toolCallId": f"c{i}", "toolName": name,
                         "content": [{"type": "text", "text": result if isinstance(result, str) else json.dumps(result)}],
                         "isError": False})
    rendered = render_transcript(messages, unsafe="allow")
    parsed = g.parse_transcript(rendered)
    # numbers compare as doubles: OMP writes them as JavaScript does (1.0 as 1, 6.6e16 as 66086842409756050)
    assert [numbers_by_value(c.arguments) for t in parsed.turns for c in t.parts if isinstance(c, g.ToolCall)] == [
        numbers_by_value(a) for _, _, a, _ in turns]
    assert render_transcript(read_omp(rendered), unsafe="allow") == rendered


def test_from_openai_messages_feeds_the_omp_profile():
    omp_messages = from_openai_messages(MESSAGES)
    text = render_transcript(omp_messages)
    parsed = g.parse_transcript(text)
    calls = [p for t in parsed.turns for p in t.parts if isinstance(p, g.ToolCall)]
    assert [c.name for c in calls] == ["get_current_weather", "github:create-issue"]
    responses = [p for t in parsed.turns for p in t.parts if isinstance(p, g.ToolResponse)]
    assert responses[0].fields == {"output": {"temperature": 15}}
