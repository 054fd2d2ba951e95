"""The strings each export is checked on, by source: accept lists (what the parser accepts:
canonical calls and turns, blocks generated from the grammar, calls the official renderer writes
from schema-conforming arguments), reject lists (the conformance corpus' invalid blocks and turns,
calls made wrong in one place), and mutants of every accept-list string (gemma4_lark.strategies.mutated).
Random walks are the fourth source (walks.py); they need the engines, so check.py draws them."""

from __future__ import annotations

import json
import pathlib

from hypothesis import strategies as st
from schema_strategies import rendered, values

from gemma4_lark import strategies, tokens
from gemma4_lark.render.safety import UnsafeContentError

CORPUS = pathlib.Path(__file__).resolve().parents[2] / "tests" / "conformance"
STOPS = (tokens.TURN_CLOSE, tokens.TOOL_RESPONSE_OPEN, tokens.EOS)
MUTANTS = 6  # per accept-list string


# --- accept lists ---------------------------------------------------------------------------
def prose() -> st.SearchStrategy:
    """Text between blocks: no `<` but in a few strings that look like the start of a marker."""
    plain = st.text(alphabet=st.characters(codec="utf-8", exclude_characters="<"), min_size=1, max_size=40)
    return plain | st.sampled_from(["a < b", "x <y> z", "{not a block}", "see <|", "<|tool_c", 'say <|"|>'])


def turns(calls: st.SearchStrategy) -> st.SearchStrategy:
    """A model turn around `calls`: an optional thought, text and calls in any order, an optional stop."""
    thought = prose().map(lambda t: tokens.THOUGHT_OPEN + t + tokens.CHANNEL_CLOSE)
    body = st.lists(prose() | calls, max_size=6).map("".join)
    return st.tuples(st.just("") | thought, body, st.sampled_from(("",) + STOPS)).map("".join)


def tool_calls(tools: list[dict]) -> st.SearchStrategy:
    """Blocks the official renderer writes for the tools, from arguments their schemas accept."""
    @st.composite
    def one(draw):
        function = draw(st.sampled_from(tools))["function"]
        arguments = draw(values(function["parameters"], function["parameters"]))
        try:
            return rendered(function["name"], arguments)
        except UnsafeContentError:  # a string the renderer refuses (a control token in it)
            return tokens.TOOL_CALL_OPEN + "call:" + function["name"] + "{}" + tokens.TOOL_CALL_CLOSE
    return one()


def accept_lists(scope: str, tools: list[dict] | None) -> dict[str, st.SearchStrategy]:
    if tools is None:
        blocks = {"canonical calls": strategies.canonical_calls(), "grammar-generated blocks": strategies.grammar_text("call_block")}
        if scope == "call":
            return blocks
        return {"canonical streams": st.tuples(strategies.canonical_streams(), st.sampled_from(("",) + STOPS)).map("".join),
                "turns": turns(strategies.canonical_calls())}
    if scope == "call":
        return {"rendered tool calls": tool_calls(tools)}
    return {"turns with tool calls": turns(tool_calls(tools))}


# --- reject lists ---------------------------------------------------------------------------
def corpus(kind: str, start: str) -> list[str]:
    out = []
    for spec in sorted((CORPUS / kind).glob("*.json")):
        if json.loads(spec.read_text(encoding="utf-8")).get("start") == start:
            out.append(spec.with_suffix(".gemma").read_bytes().decode("utf-8"))
    return out


def corpus_lists(scope: str) -> dict[str, list[str]]:
    """The conformance corpus: blocks, values inside a block, and (scope output) turns."""
    def in_call(value):
        return tokens.TOOL_CALL_OPEN + "call:f{v:" + value + "}" + tokens.TOOL_CALL_CLOSE

    out = {
        "corpus: valid blocks": corpus("valid", "call_block") + [in_call(v) for v in corpus("valid", "value_document")],
        "corpus: invalid blocks": corpus("invalid", "call_block") + [in_call(v) for v in corpus("invalid", "value_document")],
    }
    if scope == "output":
        out["corpus: valid turns"] = corpus("valid", "model_output")
        out["corpus: invalid turns"] = corpus("invalid", "model_output")
    return out


def wrong_in_one_place(tools: list[dict]) -> st.SearchStrategy:
    """Calls made wrong in one place, as tests/properties/test_constrain_tools_llguidance.py makes them: an
    undeclared name, a required member dropped, an undeclared member, a value of the wrong type."""
    @st.composite
    def some(draw):
        function = draw(st.sampled_from(tools))["function"]
        name, parameters = function["name"], function["parameters"]
        arguments = draw(values(parameters, parameters))
        out = []
        try:
            good = rendered(name, arguments)
            out.append(good.replace("call:" + name + "{", "call:" + name + "x{", 1))
            out += [rendered(name, {k: v for k, v in arguments.items() if k != key}) for key in parameters["required"]]
            out.append(rendered(name, {**arguments, "zz_undeclared": 1}))
            for key, sub in parameters["properties"].items():
                if key in arguments and isinstance(sub, dict) and sub.get("type") in ("integer", "boolean", "null"):
                    out.append(rendered(name, {**arguments, key: "text"}))
        except UnsafeContentError:
            pass
        return out
    return some()


# --- mutants --------------------------------------------------------------------------------
def with_mutants(strategy: st.SearchStrategy) -> st.SearchStrategy:
    """A string and MUTANTS mutants of it."""
    @st.composite
    def both(draw):
        text = draw(strategy)
        return text, [draw(strategies.mutated(text)) for _ in range(MUTANTS)]
    return both()
