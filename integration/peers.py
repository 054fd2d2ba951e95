"""The conformance kit against the Gemma 4 parsers of vLLM, SGLang, mlx-lm and transformers, from
their PyPI wheels, without installing them (their Python sources on `sys.path`, the stubs of
integration/stubs.txt for torch, GPUs and servers, as integration/harness.py does): `make
conformance-peers`.

    python integration/peers.py CACHE          run every peer whose wheel is in CACHE; write
                                               docs/conformance-report.md
    python integration/peers.py serve PEER CACHE   the peer as a conformance target (JSONL protocol)

Each adapter takes the path its project's server takes for a finished (non-streamed) output: the
reasoning parser first where the project has one, then the tool parser on what is left. The stop
markers (`<turn|>`, `<eos>`, `<|tool_response>`) are taken out of the text first: they are
end-of-sequence tokens, which an engine does not pass to its parsers. A request
declares as its tools every name the output writes after `call:`, as a real request would declare
the tools the model calls, so no peer drops a call for an undeclared name. An exception of the
peer's parser is answered as {"error"} (a crash the process survives).
"""

from __future__ import annotations

import json
import pathlib
import sys
import time
import zipfile

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent
PEERS = {k: v for k, v in json.loads((HERE / "peers.json").read_text()).items() if not k.startswith("_")}


def wheel(cache: pathlib.Path, peer: str) -> pathlib.Path | None:
    name = PEERS[peer]["distribution"].replace("-", "_")
    from packaging.version import Version

    found = sorted(cache.glob(f"{name}-*.whl"), key=lambda path: Version(path.name.split("-")[1]))
    return found[-1] if found else None  # the latest downloaded


def version(cache: pathlib.Path, peer: str) -> str:
    return wheel(cache, peer).name.split("-")[1]


def extract(cache: pathlib.Path, peer: str) -> pathlib.Path:
    """The wheel's .py files under CACHE/peers/PEER-VERSION (once)."""
    package = PEERS[peer]["package"]
    target = cache / "src" / f"{peer}-{version(cache, peer)}"
    done = target / ".extracted"
    if not done.exists():
        with zipfile.ZipFile(wheel(cache, peer)) as archive:
            for name in archive.namelist():
                if name.startswith(package + "/") and name.endswith(".py"):
                    archive.extract(name, target)
        done.write_text(wheel(cache, peer).name + "\n")
    return target


def activate(cache: pathlib.Path, peer: str) -> None:
    """The peer's sources first on sys.path, its engine packages hollow, the rest stubbed."""
    import importlib.util

    # harness.py by its path: integration/ on sys.path would make its xgrammar/ folder a package
    sys.path[:] = [p for p in sys.path if pathlib.Path(p or ".").resolve() != HERE]  # (the script's own folder)
    spec = importlib.util.spec_from_file_location("harness", HERE / "harness.py")
    harness = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(harness)
    root = extract(cache, peer)
    sys.path.insert(0, str(root))
    stubs, aliases, _, versions = harness.read_stubs()
    package = PEERS[peer]["package"]
    stubs = (stubs | set(PEERS[peer]["stubs"])) - {package}
    for hollow in PEERS[peer]["hollow"]:
        folder = pathlib.Path(*hollow.split("."))
        module = harness._HollowPackage(hollow)
        module.__path__ = [str(root / folder)]
        sys.modules[hollow] = module
        parent, _, name = hollow.rpartition(".")
        if parent:
            setattr(sys.modules[parent], name, module)
    sys.meta_path.append(harness.StubFinder(frozenset(stubs), aliases, {k: v for k, v in versions.items() if k != package}))


STOP_MARKERS = ("<turn|>", "<eos>", "<|tool_response>")


def _without_stop_markers(text: str) -> str:
    for marker in STOP_MARKERS:
        text = text.replace(marker, "")
    return text


def _json_safe(value):
    """NaN and infinities (a peer's reading of `NaN` or `1e1000`) as strings that say so: JSON has none."""
    if isinstance(value, float) and value != value or value in (float("inf"), float("-inf")):
        return f"{value!r} (a float)"
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_safe(v) for v in value]
    return value


def _declared_names(text: str) -> list[str]:
    """Every name written after `call:` (up to the next `{`, at most 100 characters)."""
    names, at = [], text.find("call:")
    while at >= 0:
        end = text.find("{", at + 5, at + 105)
        names.append(text[at + 5:end if end >= 0 else at + 5].strip() or "f")
        at = text.find("call:", at + 5)
    return sorted(set(names))


# --- adapters: text -> {"calls", "text"} ---------------------------------------------------------------
def vllm_adapter():
    from gemma4_lark import tokens
    from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest
    from vllm.reasoning import ReasoningParserManager
    from vllm.tool_parsers import ToolParserManager

    class Tokenizer:  # Gemma 4's control tokens, one id each (the parsers look them up)
        def __init__(self):
            self.vocab = {marker: i for i, marker in enumerate(tokens.CONTROL_TOKENS, start=1)}

        def get_vocab(self):
            return dict(self.vocab)

    tokenizer = Tokenizer()
    tool_cls = ToolParserManager.get_tool_parser("gemma4")
    reasoning_cls = ReasoningParserManager.get_reasoning_parser("gemma4")

    def answer(text, options):
        tools = [{"type": "function", "function": {"name": n, "parameters": {"type": "object"}}} for n in _declared_names(text)]
        request = ChatCompletionRequest(model="gemma-4", messages=[{"role": "user", "content": "hi"}],
                                        tools=tools or None, tool_choice="auto" if tools else "none")
        _, content = reasoning_cls(tokenizer).extract_reasoning(text, request)
        info = tool_cls(tokenizer).extract_tool_calls(content or "", request)
        calls = [{"name": c.function.name, "arguments": json.loads(c.function.arguments)} for c in info.tool_calls]
        return {"calls": calls, "text": info.content or ""}

    return answer


def sglang_adapter():
    from sglang.srt.entrypoints.openai.protocol import Tool
    from sglang.srt.function_call.function_call_parser import FunctionCallParser
    from sglang.srt.parser.reasoning_parser import ReasoningParser

    def answer(text, options):
        tools = [Tool(type="function", function={"name": n, "parameters": {"type": "object"}}) for n in _declared_names(text)]
        _, normal = ReasoningParser(model_type="gemma4", stream_reasoning=False).parse_non_stream(text)
        content, calls = FunctionCallParser(tools=tools, tool_call_parser="gemma4").parse_non_stream(normal or "")
        return {"calls": [{"name": c.name, "arguments": json.loads(c.parameters)} for c in calls], "text": content or ""}

    return answer


def mlx_lm_adapter():
    from mlx_lm.generate import TextStateMachine
    from mlx_lm.tool_parsers import gemma4

    # What make_text_state_machine builds for Gemma 4's tokenizer: thinking and tool transitions.
    machine = TextStateMachine({
        "normal": [("<|channel>thought", "reasoning"), (gemma4.tool_call_start, "tool")],
        "reasoning": [("<channel|>", "normal"), (gemma4.tool_call_start, "tool")],
        "tool": [(gemma4.tool_call_end, "normal")],
    })

    def answer(text, options):
        # the server's loop (server.py, handle_completion): text by state, each tool text parsed;
        # a prompt that ends in the thinking prefill starts the machine in "reasoning"
        state = machine.make_state("reasoning" if options.get("start_in_thinking") else "normal")
        state, segments = TextStateMachine.split(state, text)
        state, current = TextStateMachine.discard(state)
        segments.append((current, ""))
        out, tool_text, tool_texts, previous = [], "", [], "normal"
        for name, piece in segments:
            if name == "tool":
                tool_text += piece
            elif name == "normal":
                if previous == "tool":
                    tool_texts.append(tool_text)
                    tool_text = ""
                out.append(piece)
            previous = name
        if previous == "tool" and tool_text:
            tool_texts.append(tool_text)
        calls = []
        for tool in tool_texts:
            try:  # ToolCallFormatter: a text that fails to parse is dropped with a warning
                parsed = gemma4.parse_tool_call(tool, None)
            except (ValueError, json.JSONDecodeError):
                continue
            calls += [{"name": c["name"], "arguments": c["arguments"]} for c in (parsed if isinstance(parsed, list) else [parsed])]
        return {"calls": calls, "text": "".join(out)}

    return answer


def transformers_adapter():
    from transformers.cli.serving.utils import _RESPONSE_TEMPLATE_FALLBACKS
    from transformers.utils.chat_parsing import parse_response

    template = _RESPONSE_TEMPLATE_FALLBACKS[("gemma4",)]

    def answer(text, options):
        prefix = "<|turn>model\n" + ("<|channel>thought\n" if options.get("start_in_thinking") else "")
        message = parse_response(text, template, prefix=prefix)
        calls = []
        for call in message.get("tool_calls") or []:
            arguments = call["function"]["arguments"]
            calls.append({"name": call["function"]["name"],
                          "arguments": json.loads(arguments) if isinstance(arguments, str) else arguments})
        return {"calls": calls, "text": message.get("content") or ""}

    return answer


ADAPTERS = {"vllm": vllm_adapter, "sglang": sglang_adapter, "mlx-lm": mlx_lm_adapter, "transformers": transformers_adapter}


def serve(peer: str, cache: pathlib.Path) -> None:
    import logging

    logging.disable(logging.CRITICAL)  # peers log each failed block; stderr is for crashes
    activate(cache, peer)
    answer = ADAPTERS[peer]()
    for line in sys.stdin:
        try:
            request = json.loads(line)
            result = _json_safe(answer(_without_stop_markers(request["text"]), request.get("options") or {}))
        except Exception as err:  # noqa: BLE001 - the peer's exception is its answer
            result = {"error": f"{type(err).__name__}: {str(err)[:200]}"}
        sys.stdout.write(json.dumps(result) + "\n")
        sys.stdout.flush()


# --- the report -----------------------------------------------------------------------------------------
def _cell(value, width: int = 200) -> str:
    """A code span: an input with its newlines and tabs escaped, an answer as JSON."""
    shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    shown = shown.replace("\\", "\\\\").replace("\n", "\\n").replace("\t", "\\t") if isinstance(value, str) else shown
    shown = shown if len(shown) <= width else shown[:width - 1] + "…"
    return "`` " + shown + " ``"  # (in a list item: a `|` needs no escape)


def report(cache: pathlib.Path, out: pathlib.Path) -> None:
    from gemma4_incremental import conformance
    from gemma4_lark.conformance import CATEGORIES, VERSION

    rows, details = [], []
    peers = [p for p in PEERS if wheel(cache, p)]
    for peer in peers:
        command = f"{sys.executable} {pathlib.Path(__file__).resolve()} serve {peer} {cache.resolve()}"
        start = time.monotonic()
        result = conformance.run(command, timeout=5, startup=120, shrink_seconds=20)
        print(conformance.summary(result), flush=True)
        (cache / f"{peer}-report.json").write_text(json.dumps(result.to_dict(), ensure_ascii=False, indent=1))
        tally = result.by_category
        name = f"{peer} {version(cache, peer)}"
        rows.append(f"| {name} | {result.cases} | {result.passed} | " + " | ".join(str(tally.get(c, 0)) for c in CATEGORIES)
                    + f" | {time.monotonic() - start:.0f} s |")
        details.append(f"\n### {name}\n\n{PEERS[peer].get('note', '')}\n")
        if not result.failed:
            details.append("Agrees with the kit on every case.\n")
        for category in CATEGORIES:
            failures = [f for f in result.failed if f.category == category]
            if not failures:
                continue
            first = failures[0]
            shrunk, origin, length = result.smallest[category]
            options = f" (options {_cell(shrunk.request['options'])})" if shrunk.request.get("options") else ""
            details.append(f"- **{category}**: {len(failures)} case(s), the first `{first.id}`. Smallest input, shrunk from"
                           f" `{origin}` ({length} to {len(shrunk.request['text'])} characters){options}:\n"
                           f"  - input {_cell(shrunk.request['text'])}\n"
                           f"  - expected {_cell(shrunk.expected)}\n"
                           f"  - got {_cell(shrunk.got) if not isinstance(shrunk.got, str) else shrunk.got}")
    header = ("| implementation | cases | passed | " + " | ".join(CATEGORIES) + " | time |\n"
              "|---|---|---|" + "---|" * len(CATEGORIES) + "---|")
    out.write_text(f"""# Conformance of other Gemma 4 parsers

Generated by `make conformance-peers` ({time.strftime('%Y-%m-%d', time.gmtime())}): the conformance kit
(corpus {VERSION}, seed 0: its corpus cases, 200 generated and 200 mutated model outputs; see
[conformance.md](conformance.md)) run against each project's own Gemma 4 parser, from its latest PyPI
wheel, through the path its server takes for a finished output (integration/peers.py). The
expected answers are this project's; the categories are in
[conformance.md](conformance.md#categories). Text is compared without whitespace at its two ends.
A crash here is an exception the parser raised; a timeout is no answer in 5 s. Each request declares
the tools the output calls; stop markers are taken out of the text before a peer sees it, as an
engine does (integration/peers.py says why). `input` below shows newlines as `\\n`; `got` is the
peer's answer, or what happened. The full reports (every failure) are written beside the wheels,
in `.cache/peers/PEER-report.json`.

{header}
{chr(10).join(rows)}

## The first failing case of each category, and the smallest input found for it
{chr(10).join(details)}
""", encoding="utf-8")
    print(f"wrote {out}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["serve"]:
        serve(sys.argv[2], pathlib.Path(sys.argv[3]))
    else:
        report(pathlib.Path(sys.argv[1]), REPO / "docs" / "conformance-report.md")
