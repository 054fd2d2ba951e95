"""gemma4_lark.family: which format a model id names (Gemma 4, the Gemma 3 family's tool_code, or
neither), the renderers refusing a Gemma 3 model, and `demote_thinking` turning thoughts into
`<think>` text."""

import pytest

from gemma4_lark.family import WrongModelFamilyError, format_for_model
from gemma4_lark.render import demote_thinking
from gemma4_lark.render.official import render_chat
from gemma4_lark.render.omp import render_transcript


@pytest.mark.parametrize("model_id", ["google/gemma-4-31b-it", "gemma4:e4b", "unsloth/gemma-4-E2B-it-GGUF",
                                      "mlx-community/gemma-4-26b-a4b-it-4bit", "Gemma 4 E4B"])
def test_gemma4_ids(model_id):
    assert format_for_model(model_id)[0] == "gemma4"


@pytest.mark.parametrize("model_id", ["google/gemma-3-27b-it", "gemma3:12b", "gemma3n:e2b", "google/gemma-3n-E4B-it",
                                      "google/functiongemma-270m-it", "mlx-community/gemma-3-4b-it-qat-4bit"])
def test_gemma3_ids(model_id):
    fmt, reason = format_for_model(model_id)
    assert fmt == "gemma3-tool-code" and "Gemma" in reason


@pytest.mark.parametrize("model_id", ["llama-3.1-8b", "qwen3:32b", "google/gemma-2-9b-it", ""])
def test_other_ids(model_id):
    assert format_for_model(model_id)[0] is None


def test_supports_tools_false():
    assert format_for_model("google/gemma-4-31b-it", supports_tools=False)[0] is None


def test_renderers_refuse_a_gemma3_model():
    with pytest.raises(WrongModelFamilyError, match="tool_code"):
        render_chat([{"role": "user", "content": "hi"}], model="google/gemma-3-27b-it")
    with pytest.raises(WrongModelFamilyError):
        render_transcript([{"role": "user", "content": "hi"}], model="gemma3:4b")
    assert render_chat([{"role": "user", "content": "hi"}], model="google/gemma-4-31b-it").startswith("<bos>")


def test_demote_thinking():
    assert demote_thinking("a<|channel>thought\nplan<channel|>b") == "a<think>plan</think>b"
    assert demote_thinking("<|channel>thought<channel|>x") == "<think></think>x"
    assert demote_thinking("x<|channel>thought\nunclosed") == "x<think>unclosed</think>"
    assert demote_thinking("no thoughts") == "no thoughts"
    assert "<|" not in demote_thinking("<|channel>thought\na<channel|><|channel>thought\nb<channel|>")
