"""docs/serving.md's agent loop: render, model, parse, render, with OpenAI messages."""

import json

import pytest

from gemma4_lark.render import official
from conftest import REPO

DOC = REPO / "docs" / "serving.md"


def agent_loop_block():
    section = DOC.read_text(encoding="utf-8").split("\n## An agent loop", 1)[1]
    return section.split("```python\n", 1)[1].split("```", 1)[0]


def test_the_agent_loop_runs_with_openai_messages_fed_back_as_they_are():
    namespace = {}
    exec(compile(agent_loop_block(), "docs/serving.md", "exec"), namespace)
    roles = [m["role"] for m in namespace["messages"]]
    assert roles == ["user", "assistant", "tool", "assistant"]


def test_the_agent_loop_runs_when_the_renderer_is_given_dict_arguments(monkeypatch):
    """The loop itself, today: the same block with string arguments decoded before rendering."""
    render_chat = official.render_chat

    def decoding(messages, **options):
        decoded = []
        for message in messages:
            if message.get("tool_calls"):
                message = dict(message, tool_calls=[
                    dict(c, function=dict(c["function"], arguments=json.loads(c["function"]["arguments"])))
                    for c in message["tool_calls"]])
            decoded.append(message)
        return render_chat(decoded, **options)

    monkeypatch.setattr(official, "render_chat", decoding)
    namespace = {}
    exec(compile(agent_loop_block(), "docs/serving.md", "exec"), namespace)
    roles = [m["role"] for m in namespace["messages"]]
    assert roles == ["user", "assistant", "tool", "assistant"]
    assert namespace["messages"][1]["tool_calls"][0]["function"]["arguments"] == '{"city": "Paris"}'
