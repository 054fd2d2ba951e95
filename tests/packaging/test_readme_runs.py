"""The README's Python blocks run as pasted, in order, in one namespace (as a reader pastes them
into one session), and say what their comments claim."""

import re

from conftest import REPO


def test_readme_python_blocks_run_in_order():
    blocks = re.findall(r"```python\n(.*?)```", (REPO / "README.md").read_text(encoding="utf-8"), re.S)
    assert len(blocks) == 4
    namespace: dict = {}
    for i, block in enumerate(blocks):
        exec(compile(block, f"README.md python block {i + 1}", "exec"), namespace)
    assert (namespace["call"].name, namespace["call"].arguments) == ("get_weather", {"location": "Tokyo, JP", "days": 3})
    g = namespace["g"]
    [diagnostic] = g.validate('<|tool_call>call:f{a:1,}<tool_call|>')
    assert (diagnostic.code, diagnostic.line, diagnostic.column) == ("syntax", 1, 24)
    assert namespace["events"] == []  # the call closed inside the stream: nothing left to flush
    sent = namespace["sent"]
    assert sent[-1]["choices"][0]["finish_reason"] == "tool_calls"
    calls = [d for c in sent for d in c["choices"][0]["delta"].get("tool_calls", ())]
    assert calls and calls[0]["function"]["name"] == "get_weather"
    assert namespace["prompt"].endswith("<|turn>model\n")
