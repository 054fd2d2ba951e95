"""The serving layer's entry points on the inputs servers hand them: a prompt whose assistant
prefill (`continue_final_message`) is cut anywhere, a one-message multimodal chat, a stream that
ends on the start of a further call."""

import pytest
from hypothesis import given, settings, strategies as st

from gemma4_incremental import StrayMarkup, StreamParser, parse_output
from gemma4_incremental.openai import to_openai_message
from gemma4_lark import GemmaSyntaxError
from gemma4_lark.render.official import render_chat
from gemma4_lark.render.omp import render_transcript

from stream_helpers import assert_tiles, counter_ids, merged, run, split_every

USER = [{"role": "user", "content": "Weather in Paris?"}]
CALL = '<|tool_call>call:get_weather{city:<|"|>Paris<|"|>}<tool_call|>'
# prose with no `<` (markup) and no `call:` (a bare call at the start of a prefill is a call)
PROSE = st.text(st.characters(blacklist_characters="<", blacklist_categories=("Cs",)), max_size=40).filter(
    lambda t: "call" not in t)


def events_after(prompt, output):
    parser = StreamParser.for_prompt(prompt, id_factory=counter_ids())
    return [e.type for e in merged(parser.feed(output) + parser.flush())]


@settings(max_examples=60, deadline=None)
@given(PROSE, st.booleans(), st.booleans())
def test_a_prefill_that_ends_inside_a_thought_starts_the_output_inside_it(thought, thinking, newline):
    prompt = render_chat(USER, add_generation_prompt=True, enable_thinking=thinking)
    prefill = "<|channel>thought" + ("\n" if newline else "") + thought
    kinds = events_after(prompt + prefill, " and more.<channel|>It is sunny.")
    assert kinds == ["thinking_start", "thinking_delta", "thinking_end", "text"]


@settings(max_examples=60, deadline=None)
@given(PROSE, PROSE)
def test_a_prefill_that_ends_in_text_starts_the_output_in_text(before, after):
    prompt = render_chat(USER, add_generation_prompt=True)
    for prefill in (before, "<|channel>thought\n" + before + "<channel|>" + after, before + CALL + after):
        parser = StreamParser.for_prompt(prompt + prefill)
        assert [e.type for e in merged(parser.feed("Sunny.") + parser.flush())] == ["text"]


@pytest.mark.parametrize("prefill", [
    "<|tool_call>", "<|tool_call>call:get_weather{", '<|tool_call>call:get_weather{city:<|"|>Par',
    "Let me check. <|tool_call>call:get_weather{city:", "<|channel>thought\nhm <|tool_call>call:f{a:1}",
    '<|tool_call>call:f{a:<|"|>x}<tool_call|>',  # (the delimiter's string runs on: still in the block)
])
def test_a_prefill_that_ends_inside_a_call_is_refused_saying_why(prefill):
    prompt = render_chat(USER, add_generation_prompt=True, enable_thinking=True)
    with pytest.raises(ValueError, match="ends inside a tool call") as raised:
        StreamParser.for_prompt(prompt + prefill)
    assert not isinstance(raised.value, GemmaSyntaxError)
    offset = int(str(raised.value).split("at offset ")[1].split(")")[0])
    assert (prompt + prefill).startswith("<|tool_call>", offset)


def test_a_prompt_wrong_before_its_model_turn_is_still_a_syntax_error():
    with pytest.raises(GemmaSyntaxError):
        StreamParser.for_prompt("junk<|turn>model\n<|channel>thought\nLet me")
    with pytest.raises(ValueError, match="open model turn"):
        StreamParser.for_prompt(render_chat(USER))


def test_a_prefill_of_many_thoughts_ends_in_its_last_one():
    """More thoughts and longer ones (16x): the state is the last thought's, open."""
    prompt = render_chat(USER, add_generation_prompt=True)
    for n in (1, 16):
        prefill = ("<|channel>thought\n" + "a<channel|>b" * n) * n + "<|channel>thought\n" + "words " * (100 * n)
        assert StreamParser.for_prompt(prompt + prefill).where == "thought"


# --- an image in a one-message chat -------------------------------------------------------------
@pytest.mark.parametrize("parts", [
    [{"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}],
    [{"type": "text", "text": "What is this?"}, {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,/9j/"}}],
])
def test_an_openai_image_part_is_kept_when_it_is_the_only_sign_of_the_shape(parts):
    text = render_transcript([{"role": "user", "content": parts}])
    assert text.count("[Image: image/") == 1
    # the same as when another message already says the conversation is OpenAI's
    longer = render_transcript([{"role": "user", "content": parts}, {"role": "assistant", "content": "A cat."}])
    assert longer.startswith(text[:-len("<turn|>")])


# --- the stream ends on the start of a further call ----------------------------------------------
@pytest.mark.parametrize("tail", ["<|", "<|tool", "<|tool_call", "<|tool_call>", "\n<|tool_c", "\n<|tool_call>\n"])
def test_a_cut_opener_after_a_call_at_the_end_is_stray_markup(tail):
    text = "On it." + CALL + tail
    whole = run([text])
    for chunks in (split_every(text, 1), split_every(text, 3), [text]):
        events = run(chunks)
        assert_tiles(events, text)
        assert merged(events) == merged(whole)
    out = parse_output(text)
    assert len(out.calls) == 1 and not out.errors
    assert out.text == "On it." + "".join(c for c in tail if c.isspace())
    [stray] = [e for e in out.events if isinstance(e, StrayMarkup)]
    assert stray.markup == tail.strip()
    message = to_openai_message(out)
    assert "<|tool" not in (message["content"] or "")
    render_chat(USER + [message])  # what the server sent can be sent back


@pytest.mark.parametrize("text, content", [
    ("Use <|tool_c", "Use <|tool_c"),                       # not after a call: text, as written
    (CALL + "so <|tool_c", "so <|tool_c"),                  # words between: text
    (CALL + "<", "<"),                                      # a lone `<` is prose
])
def test_a_cut_opener_anywhere_else_stays_text(text, content):
    out = parse_output(text)
    assert out.text == content and not [e for e in out.events if isinstance(e, StrayMarkup)]


def test_strict_keeps_a_cut_opener_and_fails_the_empty_block():
    assert parse_output(CALL + "<|tool_c", strict=True).text == "<|tool_c"
    assert [e.code for e in parse_output(CALL + "<|tool_call>", strict=True).errors] == ["unclosed"]
    # and an empty block with prose before it is still an error (it is not right after a call)
    assert [e.code for e in parse_output("Hi <|tool_call>").errors] == ["syntax"]
