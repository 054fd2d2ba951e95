"""The requests of the run, read from requests.json: each case once per seed, streamed and not.

A request's grammar is the library's own output-scope export for llguidance
(`constrain.grammar("llguidance", scope="output", tools=..., tool_choice=..., thinking=...)`), sent
as `structured_outputs.grammar`: vLLM's guidance backend then lets the random model write only
valid Gemma 4 turns for that request's tools, tool choice and thinking switch.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gemma4_lark import constrain

HERE = Path(__file__).resolve().parent
REQUESTS = HERE / "requests.json"


@dataclass(frozen=True)
class Case:
    name: str
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] | None
    tool_choice: Any
    thinking: bool
    grammar: str | None
    seed: int
    max_tokens: int
    logit_bias: dict[str, float]    # token id (as text) -> bias: the same for every server

    def body(self, stream: bool) -> dict[str, Any]:
        """The keyword arguments of `client.chat.completions.create` (vLLM's own fields in `extra_body`)."""
        extra: dict[str, Any] = {"return_token_ids": True, "chat_template_kwargs": {"enable_thinking": self.thinking}}
        if self.grammar is not None:
            extra["structured_outputs"] = {"grammar": self.grammar}
        body: dict[str, Any] = {"model": "gemma4-tiny", "messages": self.messages, "max_tokens": self.max_tokens,
                                "temperature": 1.0, "seed": self.seed, "stream": stream, "extra_body": extra}
        if self.logit_bias:
            body["logit_bias"] = self.logit_bias
        if self.tools is not None:
            body["tools"] = self.tools
        if self.tool_choice is not None:
            body["tool_choice"] = self.tool_choice
        return body

    def parser_options(self) -> dict[str, Any]:
        """The request's tools as `parse_output` takes them."""
        if self.tools is None:
            return {}
        return {"tools": self.tools, "tool_choice": self.tool_choice if self.tool_choice is not None else "auto"}


def choice_name(choice: Any) -> str:
    if isinstance(choice, dict):
        return choice["function"]["name"]
    return str(choice or "no tools")


def load(vocab: dict[str, int], path: Path = REQUESTS) -> list[Case]:
    """The cases; `vocab` (the model's, token text -> id) turns requests.json's `logit_bias`,
    written by token text, into the ids the API takes."""
    data = json.loads(path.read_text(encoding="utf-8"))
    bias = {str(vocab[text]): value for text, value in data.get("logit_bias", {}).items()}
    cases = []
    grammars: dict[str, str] = {}
    for spec in data["cases"]:
        tools = data["tools"] if spec["tools"] else None
        choice = spec["tool_choice"]
        grammar = None
        if isinstance(spec.get("grammar"), str):  # one of requests.json's own grammars, by name
            grammar = data["grammars"][spec["grammar"]]
        elif spec.get("grammar", True):
            key = json.dumps([spec["tools"], choice, spec["thinking"]])
            if key not in grammars:
                grammars[key] = constrain.grammar("llguidance", scope="output", tools=tools,
                                                  tool_choice=choice if choice is not None else "auto",
                                                  thinking=spec["thinking"])
            grammar = grammars[key]
        for seed in spec["seeds"]:
            name = (f"{spec['conversation']}/{choice_name(choice) if spec['tools'] else 'no tools'}"
                    f"/think {'on' if spec['thinking'] else 'off'}{'' if grammar else '/no grammar'}"
                    f"{'/grammar ' + spec['grammar'] if isinstance(spec.get('grammar'), str) else ''}"
                    f"{'' if spec.get('bias', True) else '/no bias'}/seed {seed}")
            cases.append(Case(name, data["conversations"][spec["conversation"]], tools, choice, spec["thinking"],
                              grammar, seed, data["max_tokens"],
                              {**(bias if spec.get("bias", True) else {}),
                               **{str(vocab[text]): value for text, value in spec.get("logit_bias", {}).items()}}))
    return cases
