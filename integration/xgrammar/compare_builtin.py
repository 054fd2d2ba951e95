"""Ours against xgrammar's built-in `gemma_4` structural tag, on the same random tools: how many
canonical calls (the official renderer's) each takes, and how many random walks under each
end in a block that `parse_call` reads and whose arguments pass the tool's schema. Prints a
summary; `make integration-xgrammar` runs it after the tests."""

from __future__ import annotations

import copy
import random
import sys
import pathlib

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "tests"))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import jsonschema  # noqa: E402
import xgrammar as xgr  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from schema_strategies import as_json_schema, rendered, tools_with_schemas, values  # noqa: E402
from xgr_harness import (  # noqa: E402
    EOS_ID, SPECIAL_ID, accepts, allowed, compiled_tag, decode,
)

from gemma4_lark import GemmaSyntaxError, constrain, parse_call  # noqa: E402
from gemma4_lark.render.safety import UnsafeContentError  # noqa: E402

TRIGGER = SPECIAL_ID["<|tool_call>"]


def walk_call(grammar, rng, max_tokens=300):
    """Text then one call: open with the trigger, sample until `<tool_call|>` is written."""
    m = xgr.GrammarMatcher(grammar)
    if not m.accept_token(TRIGGER):
        return None
    ids = [TRIGGER]
    for _ in range(max_tokens):
        if ids[-1] == SPECIAL_ID["<tool_call|>"] or bytes(t for t in ids[-12:] if t < 256).endswith(b"<tool_call|>"):
            try:  # the end, unless the marker was taken as a string's content (xgrammar matches
                parse_call(decode(ids))  # special tokens as their text)
                return decode(ids)
            except GemmaSyntaxError:
                pass
        choices = [t for t in allowed(m) if t not in (EOS_ID, TRIGGER)]
        if not choices:
            return None
        printable = [t for t in choices if 0x20 <= t < 0x7f or t >= 256] or choices
        closing = [t for t in printable if t >= 256 or t in b'}]"']
        token = rng.choice(closing if closing and rng.random() < 0.3 else printable)
        assert m.accept_token(token)
        ids.append(token)
    return None


def main(samples: int = 40, seed: int = 1) -> None:
    rng = random.Random(seed)
    counts = {k: [0, 0] for k in ("canonical ours", "canonical builtin", "walk ours", "walk builtin")}
    examples: dict[str, str] = {}
    strategy = st.tuples(tools_with_schemas(), st.randoms(use_true_random=False))
    for _ in range(samples):
        tools, draw_rng = strategy.example()
        try:
            ours = compiled_tag(constrain.structural_tag(tools, thinking=False))
            builtin = compiled_tag(xgr.get_model_structural_tag("gemma_4", tools=tools, reasoning=False).model_dump())
        except Exception as error:  # noqa: BLE001 - a summary of what each side refuses
            examples.setdefault("compile error", repr(error)[:200])
            continue
        for tool in tools:
            function = tool["function"]
            try:
                text = rendered(function["name"], values(function["parameters"], function["parameters"]).example())
            except UnsafeContentError:
                continue
            for name, grammar in (("canonical ours", ours), ("canonical builtin", builtin)):
                counts[name][1] += 1
                if accepts(grammar, text, complete=False):
                    counts[name][0] += 1
                else:
                    examples.setdefault(name + " refused", text)
        by_name = {t["function"]["name"]: t["function"]["parameters"] for t in tools}
        for name, grammar in (("walk ours", ours), ("walk builtin", builtin)):
            text = walk_call(grammar, rng)
            if text is None:
                continue
            counts[name][1] += 1
            try:
                block = parse_call(text)
                jsonschema.validate(block.arguments, as_json_schema(copy.deepcopy(by_name[block.name])))
                counts[name][0] += 1
            except (GemmaSyntaxError, jsonschema.ValidationError) as error:
                examples.setdefault(name + " invalid", f"{text!r}: {str(error).splitlines()[0]}")
    from importlib.metadata import version

    print(f"xgrammar {version('xgrammar')}: ours vs the built-in gemma_4 structural tag, {samples} random tool sets")
    for name, (good, total) in counts.items():
        print(f"  {name:18} {good:4} / {total:4} {'accepted' if name.startswith('canonical') else 'parse and validate'}")
    for name, example in examples.items():
        print(f"  e.g. {name}: {example[:300]}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 40)
