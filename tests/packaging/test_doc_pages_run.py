"""The examples in docs/schema.md, docs/constrained-decoding.md and docs/streaming.md run as
written (docs/serving.md's run in test_openai.py and test_integrations_docs.py; docs/guide.md's in
test_docs.py)."""

import re

from conftest import REPO
from gemma4_lark import constrain


def python_blocks(page):
    return re.findall(r"```python\n(.*?)```", (REPO / page).read_text(encoding="utf-8"), re.S)


def test_schema_page_example_runs_and_says_what_it_returns():
    [block] = python_blocks("docs/schema.md")
    namespace = {}
    exec(compile(block, "docs/schema.md", "exec"), namespace)
    call = namespace["out"].calls[0]
    assert call.arguments == {"zip": "02134", "days": 3}  # what the comment says
    [diagnostic] = call.diagnostics
    assert (diagnostic.severity, diagnostic.code, diagnostic.pos, diagnostic.end) == ("warning", "coerced", 29, 34)


def test_constrained_decoding_page_examples_run():
    first, llama_cpp, tag = python_blocks("docs/constrained-decoding.md")
    namespace = {}
    exec(compile(first, "docs/constrained-decoding.md", "exec"), namespace)
    assert namespace["text"].startswith("%llguidance") and "get_weather" in namespace["text"]
    assert "from llama_cpp import" in llama_cpp  # needs llama.cpp and a model: not run here
    # The structural tag shown is the one built for the first example's tools, but for the grammar.
    shown = eval(tag)  # a literal
    built = constrain.structural_tag(namespace["tools"])
    for tag_in in built["format"]["elements"][1]["tags"]:
        assert tag_in["content"]["grammar"].startswith("root ::= ")
        tag_in["content"]["grammar"] = "root ::= ..."
    assert shown == built


def test_streaming_page_token_ids_example_prints_what_it_says(capsys):
    [block] = python_blocks("docs/streaming.md")
    exec(compile(block, "docs/streaming.md", "exec"), {})
    said = block.rstrip().splitlines()[-1].removeprefix("# ")
    assert capsys.readouterr().out.strip() == said
