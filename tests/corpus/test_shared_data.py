"""The strict parser against data recorded elsewhere: OMP's decoded blocks and the shapes the
official Gemma 4 templates render. Skips when ../shared/data is absent."""

import pytest

import gemma4_lark as g

from conftest import load_jsonl, numbers_by_value, shared_file
from conversations import MESSAGES, TOOLS


def _strict_blocks():
    cases = [c for c in load_jsonl("omp-stream-cases.jsonl") if c["kind"] == "strict"]
    for case in cases:
        for block, call in zip(case["omp"]["blocks"], case["omp"]["calls"]):
            yield case["id"], block, call


def test_every_strict_omp_block_parses_to_omp_arguments():
    checked = 0
    for case_id, block, expected in _strict_blocks():
        call = g.parse_call(block)
        assert call.name == expected["name"], case_id
        assert numbers_by_value(call.arguments) == numbers_by_value(expected["arguments"]), (case_id, block)
        checked += 1
    assert checked > 100


# --- the official templates ----------------------------------------------------------------------
def _render(template_name, **context):
    jinja2 = pytest.importorskip("jinja2")
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    def raise_exception(message):
        raise jinja2.TemplateError(message)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"])
    env.globals["raise_exception"] = raise_exception
    source = shared_file("gemma4-templates", template_name).read_text(encoding="utf-8")
    return env.from_string(source).render(bos_token="<bos>", **context)


@pytest.mark.parametrize("template", ["gemma4-e2b-2026-07.jinja", "gemma4-31b-2026-07.jinja"])
@pytest.mark.parametrize("thinking", [False, True])
@pytest.mark.parametrize("generation_prompt", [False, True])
def test_official_renders_are_valid_transcripts(template, thinking, generation_prompt):
    text = _render(template, messages=MESSAGES, tools=TOOLS, enable_thinking=thinking,
                   add_generation_prompt=generation_prompt)
    assert g.validate(text) == [], text
    transcript = g.parse_transcript(text)
    assert transcript.bos
    system = transcript.turns[0]
    declarations = [p for p in system.parts if isinstance(p, g.ToolDeclaration)]
    assert [d.name for d in declarations] == ["get_current_weather", "github:create-issue"]
    props = declarations[0].fields["parameters"]["properties"]
    assert props["unit"]["enum"] == ["celsius", "fahrenheit"]
    assert props["points"]["items"]["properties"]["label-name"]["type"] == "STRING"
    calls = [p for t in transcript.turns for p in t.parts if isinstance(p, g.ToolCall)]
    assert calls[0].arguments["ratio"] == 1.0 and isinstance(calls[0].arguments["ratio"], float)
    assert calls[0].arguments["big"] == 1e20 and calls[0].arguments["none"] is None
    responses = [p for t in transcript.turns for p in t.parts if isinstance(p, g.ToolResponse)]
    assert [r.name for r in responses] == ["get_current_weather", "github:create-issue"]
    assert responses[1].fields == {"value": "created #7"}


@pytest.mark.parametrize("template", ["gemma4-e2b-2026-07.jinja", "gemma4-31b-2026-07.jinja"])
def test_official_render_with_pending_call_is_valid(template):
    messages = MESSAGES[:3]
    text = _render(template, messages=messages, tools=TOOLS, add_generation_prompt=True)
    assert g.validate(text) == []
    last = g.parse_transcript(text).turns[-1]
    assert isinstance(last.parts[-1], g.AwaitingResponse) and not last.closed


def test_pre_july_none_renders_parse():
    # every template before July 2026 printed Python's None for null
    assert g.parse_call("<|tool_call>call:f{a:None,b:[None]}<tool_call|>").arguments == {"a": None, "b": [None]}
