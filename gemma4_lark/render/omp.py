"""The `omp` profile: OMP's Gemma dialect, byte for byte (docs/omp-compatibility.md).

Messages use OMP's own JSON shape (camelCase): `system`/`developer`/`user` with string or part-list
content, `assistant` with `text`, `thinking` and `toolCall` parts, and `toolResult` with
`toolCallId`, `toolName`, `content` parts and `isError`. Numbers are written as JavaScript writes
them (OMP is TypeScript).

Every renderer takes `unsafe`: "error" (default) refuses content holding a control token,
"strip" removes such tokens, "allow" passes them through as OMP does.
"""

from __future__ import annotations

import json

from .. import tokens
from ..model import ToolCall
from . import js
from ..values import DEFAULT_MAX_DEPTH
from .safety import check_name, check_policy, guard, guard_run
from .shapes import ShapeError, check_transcript, check_unmatched_policy, expect
from .values import ValueWriter, key_bare_if_possible

def _finite_number(value) -> str:
    """JavaScript's text for a number; NaN and the infinities (which OMP writes as `NaN` and
    `Infinity`, bare words that read back as strings) are refused."""
    text = js.number(value)
    if text in ("NaN", "Infinity", "-Infinity"):
        raise ValueError(f"{value!r} has no text in the value language; pass unsafe='allow' to write {text} as OMP does")
    return text


_WRITERS = {policy: ValueWriter(number=js.number if policy == "allow" else _finite_number, key=key_bare_if_possible,
                                unsafe=policy)
            for policy in ("error", "strip", "allow")}


# the model's own call arguments: their strings go back as the model wrote them
# (docs/security.md#the-models-own-calls)
_CALL_WRITERS = {policy: ValueWriter(number=js.number if policy == "allow" else _finite_number,
                                     key=key_bare_if_possible, unsafe=policy, model_strings=True)
                 for policy in ("error", "strip", "allow")}


def _writer(unsafe: str, calls: bool = False) -> ValueWriter:
    check_policy(unsafe)
    return (_CALL_WRITERS if calls else _WRITERS)[unsafe]


def _name(name: str, where: str, unsafe: str) -> str:
    """A tool name as the grammar's NAME takes it (`delete{path:/}` would forge arguments)."""
    return check_name(name, where, unsafe)


def render_tool_call(name: str, arguments: dict, *, unsafe: str = "error", where: str = "call",
                     max_depth: int = DEFAULT_MAX_DEPTH) -> str:
    """`<|tool_call>call:NAME{k:v,...}<tool_call|>`, keys in insertion order.

    Raises `UnsafeContentError` (a `ValueError`) for content that would forge structure under
    unsafe="error", `ValueError` for an unknown `unsafe` and for arguments nesting deeper than
    `max_depth`, `TypeError` when `arguments` is not a dict or holds a value with no text in the
    value language.
    """
    if not isinstance(arguments, dict):
        raise ShapeError(where, f"arguments must be a dict, not {type(arguments).__name__}")
    return (tokens.TOOL_CALL_OPEN + tokens.CALL_KEYWORD + _name(name, f"{where}.name", unsafe)
            + _writer(unsafe, calls=True).write(arguments, f"{where}.arguments", max_depth=max_depth)
            + tokens.TOOL_CALL_CLOSE)


def render_tool_calls(calls, *, unsafe: str = "error") -> str:
    """Several calls, concatenated; each a ToolCall or a {"name", "arguments"} dict.

    Raises what `render_tool_call` raises, and `KeyError` for a dict without "name".
    """
    out = []
    for i, call in enumerate(calls):
        if isinstance(call, ToolCall):
            name, arguments = call.name, call.arguments
        else:
            name, arguments = call["name"], call.get("arguments") or {}
        out.append(render_tool_call(name, arguments, unsafe=unsafe, where=f"calls[{i}]"))
    return "".join(out)


def _result_value(text: str):
    """A tool's text as OMP sends it: JSON when it parses as JSON, the text itself otherwise."""
    try:
        return js.parse_json(text)
    except ValueError:
        return text


def render_tool_results(results, *, unsafe: str = "error") -> str:
    """`<|tool_response>response:NAME{output:VALUE}<tool_response|>` per result (dicts with
    "name", "text" and "is_error"; the wire has no error flag, so an error result has the same
    shape and its failure must be in its text).

    Raises `UnsafeContentError` (a `ValueError`) for content that would forge structure under
    unsafe="error", `ValueError` for an unknown `unsafe` and for a result nesting deeper than the
    parser's max_depth, `ShapeError` (a `ValueError`) for a "text" that is not a string,
    `KeyError` for a result without "name".
    """
    return "".join(_result(result["name"], expect(result.get("text", ""), (str,), f"results[{i}].text"), unsafe,
                           f"results[{i}].name", f"results[{i}].text")
                   for i, result in enumerate(results))


def _result(name: str, text: str, unsafe: str, name_at: str, text_at: str, max_depth: int = DEFAULT_MAX_DEPTH) -> str:
    # the text is checked as the value it becomes: JSON can spell `<` as `\u003c`
    value = _result_value(text)
    return (tokens.TOOL_RESPONSE_OPEN + tokens.RESPONSE_KEYWORD + _name(name, name_at, unsafe) + "{output:"
            + _writer(unsafe).write(value, text_at, depth=1, max_depth=max_depth) + "}" + tokens.TOOL_RESPONSE_CLOSE)


def render_thinking(text: str, *, unsafe: str = "error", where: str = "thinking") -> str:
    """`<|channel>thought\\n` + text + `<channel|>`; empty thinking renders nothing.

    Raises `UnsafeContentError` (a `ValueError`) for content that would forge structure under
    unsafe="error", `ValueError` for an unknown `unsafe`.
    """
    text = guard(text, where, unsafe)
    if not text:  # also when stripping left nothing: OMP writes no empty thought
        return ""
    return tokens.THOUGHT_OPEN + text + tokens.CHANNEL_CLOSE


# --- transcripts ------------------------------------------------------------------------------
def _content_pieces(content, where: str) -> list:
    """String content, or text and image parts (images as `[Image: MIME]`); others ignored. The
    pieces land side by side, so they are checked as one text."""
    if isinstance(content, str):
        return [(content, where)]
    pieces = []
    for i, part in enumerate(content or []):
        kind = part.get("type")
        if kind == "text":
            pieces.append((part.get("text", ""), f"{where}[{i}].text"))
        elif kind == "image":
            pieces += [("[Image: ", f"{where}[{i}]"), (str(part.get("mimeType", "")), f"{where}[{i}].mimeType"),
                       ("]", f"{where}[{i}]")]
    return pieces


def _content_text(content, where: str, unsafe: str) -> str:
    return guard_run(_content_pieces(content, where), unsafe)


def _turn(role: str, body: str) -> str:
    return tokens.TURN_OPEN + role + "\n" + body + tokens.TURN_CLOSE


def _results_of(messages, start: int, unsafe: str, max_depth: int):
    """The run of toolResult messages from `start`, rendered, and where the run ends."""
    out = []
    i = start
    while i < len(messages) and messages[i].get("role") == "toolResult":
        m = messages[i]
        where = f"messages[{i}]"
        pieces = _content_pieces(m.get("content"), f"{where}.content")
        text = "".join(piece for piece, _ in pieces)
        text_at = pieces[0][1] if len(pieces) == 1 else f"{where}.content"
        out.append(_result(m.get("toolName", ""), text, unsafe, f"{where}.toolName", text_at, max_depth))
        i += 1
    return "".join(out), i


def render_transcript(messages, *, unsafe: str = "error", model: str | None = None,
                      max_depth: int = DEFAULT_MAX_DEPTH, unmatched_tool_call_id: str = "error") -> str:
    """`<bos>` then one turn per message (`developer` becomes `system`); an assistant message is a
    `model` turn holding its thinking, its text, its calls, and the results that follow it.

    `messages` are OMP's, or OpenAI's chat messages (told apart by `messages.message_shape`: `tool`
    messages, `tool_calls`, string assistant content, `image_url` parts), which are converted by
    `messages.from_openai_messages` first (docs/serving.md, "Messages in"; unmatched_tool_call_id
    is its policy for results that answer no call).

    Raises `UnsafeContentError` (a `ValueError`) for content that would forge structure under
    unsafe="error", `ValueError` for an unknown `unsafe` or an unknown role and for a value nesting
    deeper than `max_depth` once rendered, `ShapeError` (a `ValueError` and a `TypeError`) for a
    message of the wrong shape, naming the field (`messages[0].content`), for a conversation that
    mixes the two shapes and for an OpenAI result that answers no call, `ArgumentsError` (a
    `ShapeError`) for OpenAI string arguments that are not a JSON object, `TypeError` for a value
    with no text in the value language, `WrongModelFamilyError` (a `ValueError`) when `model` is
    given and is not a Gemma 4 id.
    """
    check_policy(unsafe)
    from ..messages import convert_openai_messages, message_shape, rename_fields  # it reads prompts back

    check_unmatched_policy(unmatched_tool_call_id)
    if message_shape(messages) != "openai":
        return _render_transcript(messages, unsafe, model, max_depth)
    messages, fields = convert_openai_messages(messages, unmatched_tool_call_id)
    try:
        return _render_transcript(messages, unsafe, model, max_depth)
    except (ValueError, TypeError) as error:
        rename_fields(error, fields)  # the caller's fields, not those of the converted messages
        raise


def _render_transcript(messages, unsafe: str, model: str | None, max_depth: int) -> str:
    check_transcript(messages)
    if model is not None:
        from ..family import require_gemma4

        require_gemma4(model)
    out = [tokens.BOS]
    i = 0
    while i < len(messages):
        message = messages[i]
        role = message.get("role")
        where = f"messages[{i}]"
        if role in ("system", "developer", "user"):
            out.append(_turn("user" if role == "user" else "system",
                             _content_text(message.get("content"), f"{where}.content", unsafe)))
            i += 1
        elif role == "assistant":
            thinking, text, calls = [], [], []
            for j, part in enumerate(message.get("content") or []):
                kind = part.get("type")
                if kind == "thinking":
                    # parts join with a newline, and the pieces are checked as that one text
                    thinking += [("\n", f"{where}.content[{j}].thinking")] * bool(thinking)
                    thinking.append((part.get("thinking", ""), f"{where}.content[{j}].thinking"))
                elif kind == "text":
                    text.append((part.get("text", ""), f"{where}.content[{j}].text"))
                elif kind == "toolCall":
                    calls.append(render_tool_call(part.get("name", ""), part.get("arguments") or {}, unsafe=unsafe,
                                                  where=f"{where}.content[{j}]", max_depth=max_depth))
            results, i = _results_of(messages, i + 1, unsafe, max_depth)
            thought = guard_run(thinking, unsafe)
            body = ((tokens.THOUGHT_OPEN + thought + tokens.CHANNEL_CLOSE if thought else "") + guard_run(text, unsafe)
                    + "".join(calls) + results)
            out.append(_turn("model", body))
        elif role == "toolResult":  # results with no assistant message before them
            results, i = _results_of(messages, i, unsafe, max_depth)
            out.append(_turn("model", results))
        else:
            raise ShapeError(where, f"unknown role {role!r}")
    return "".join(out)


# --- tools --------------------------------------------------------------------------------------
def _openai_tool(tool: dict) -> dict:
    function = {"name": tool["name"]}
    if tool.get("description") is not None:
        function["description"] = tool["description"]
    if tool.get("parameters") is not None:
        function["parameters"] = tool["parameters"]
    return {"type": "function", "function": function}


def _functions(tools) -> list:
    """The tools as bare function schemas (OMP's shape), whichever of OpenAI's shapes they came in."""
    from ..tools import read_tools

    return [tool.function for tool in read_tools(tools)]


def render_tool_catalog(tools, *, unsafe: str = "error") -> str:
    """One compact OpenAI-style JSON object per tool, one per line. `tools`: bare function
    schemas or OpenAI's `{"type": "function", "function": ...}` (see `tools.read_tools`).

    Raises `UnsafeContentError` (a `ValueError`) for content that would forge structure under
    unsafe="error", `ValueError` for an unknown `unsafe`, `ShapeError` (a `ValueError`) for a tool
    of the wrong shape, naming the field.
    """
    check_policy(unsafe)
    tools = _functions(tools)
    return "\n".join(guard(js.dumps(_openai_tool(t)), f"tools[{i}]", unsafe) for i, t in enumerate(tools))


def format_guide() -> str:
    """How the model is to call tools in this dialect (goes where `{{DIALECT}}` stands)."""
    d = tokens.STRING_DELIMITER
    return (
        "To call a tool, write one block per call, nothing else inside it:\n"
        f"{tokens.TOOL_CALL_OPEN}call:TOOL_NAME{{key:value,key:value}}{tokens.TOOL_CALL_CLOSE}\n"
        f"- Write every string between {d} delimiters: path:{d}src/main.py{d}. Nothing inside is escaped;"
        " quotes, commas, braces and newlines are written as they are.\n"
        "- Numbers, true, false and null are written bare; lists as [a,b]; objects as {key:value}.\n"
        "- Keys are bare words. No spaces are needed anywhere.\n"
        "- For several independent calls, write several blocks one after another.\n"
        f"- Never write {tokens.TOOL_RESPONSE_OPEN} yourself: results come back to you after your calls.\n"
        "- If you reason first, finish reasoning before the first call; nothing follows your calls.\n"
        f"Example: {tokens.TOOL_CALL_OPEN}call:get_weather{{location:{d}Tokyo, JP{d},days:3}}{tokens.TOOL_CALL_CLOSE}"
    )


DEFAULT_PROMPT_TEMPLATE = (
    "You can use the tools below.\n\n{{TOOLS}}\n\n{{DIALECT}}"
)


def render_tool_prompt(tools, template: str = DEFAULT_PROMPT_TEMPLATE, *, unsafe: str = "error") -> str:
    """A system prompt: `template` with `{{TOOLS}}` (the catalog in `<tools>` tags) and
    `{{DIALECT}}` (the format guide) filled in.

    Raises `UnsafeContentError` (a `ValueError`) for content that would forge structure under
    unsafe="error", `ValueError` for an unknown `unsafe`.
    """
    catalog = "<tools>\n" + render_tool_catalog(tools, unsafe=unsafe) + "\n</tools>"
    return template.replace("{{TOOLS}}", catalog).replace("{{DIALECT}}", format_guide())


# --- inventory ------------------------------------------------------------------------------------
def _ts_type(schema: dict, indent: str, where: str = "parameters", depth: int = 0) -> list[str]:
    """A JSON schema as TypeScript type text (lines; the first continues the current line)."""
    if depth > DEFAULT_MAX_DEPTH:  # Python's stack would overflow a little further on
        raise ShapeError(where, f"the schema nests deeper than {DEFAULT_MAX_DEPTH} levels")
    if not isinstance(schema, dict):
        return ["any"]
    if "enum" in schema and isinstance(schema["enum"], list):
        return [" | ".join(json.dumps(v, ensure_ascii=False) for v in schema["enum"]) or "never"]
    kind = schema.get("type")
    if isinstance(kind, list):
        return [" | ".join(_ts_type({**schema, "type": k}, indent, where, depth + 1)[0] for k in kind)]
    if kind == "object" or "properties" in schema:
        properties = schema.get("properties") or {}
        if not properties:
            return ["object"]
        required = set(schema.get("required") or [])
        lines = ["{"]
        for name, prop in properties.items():
            description = prop.get("description") if isinstance(prop, dict) else None
            if description:
                description = expect(description, (str,), f"{where}.properties.{name}.description")
                lines += [f"{indent}  // {line}" for line in description.splitlines()]
            key = name if key_bare_if_possible(name) == name and not name[:1].isdigit() else json.dumps(name)
            sub = _ts_type(prop, indent + "  ", f"{where}.properties.{name}", depth + 1)
            lines.append(f"{indent}  {key}{'' if name in required else '?'}: {sub[0]}")
            lines += sub[1:]
            lines[-1] += ","
        lines.append(f"{indent}}}")
        return lines
    if kind == "array":
        items = _ts_type(schema.get("items") or {}, indent, f"{where}.items", depth + 1)
        head = items[0] if len(items) == 1 and " | " not in items[0] else None
        if head is not None:
            return [head + "[]"]
        return ["Array<" + items[0]] + items[1:-1] + [items[-1] + ">"] if len(items) > 1 else ["Array<" + items[0] + ">"]
    return [{"string": "string", "integer": "number", "number": "number", "boolean": "boolean",
             "null": "null"}.get(kind, "any") if isinstance(kind, str) else "any"]


def render_tool_inventory(tools, *, unsafe: str = "error") -> str:
    """`## functions` and one `namespace functions { ... }` block: each tool's description as `//`
    lines above `type NAME = (_: PARAMS) => any;`, its `examples` as `// @example` lines.

    Raises `UnsafeContentError` (a `ValueError`) for content that would forge structure under
    unsafe="error", `ValueError` for an unknown `unsafe` or a schema nesting deeper than 512,
    `ShapeError` (a `ValueError`) for a tool of the wrong shape or a description that is not a
    string. `tools`: bare function schemas or OpenAI's `{"type": "function", "function": ...}`.
    """
    check_policy(unsafe)
    tools = _functions(tools)
    lines = ["## functions", "", "namespace functions {", ""]
    for i, tool in enumerate(tools):
        where = f"tools[{i}]"
        for line in (expect(tool.get("description"), (str,), f"{where}.description", optional=True) or "").splitlines():
            lines.append("// " + guard(line, f"{where}.description", unsafe))
        for k, example in enumerate(tool.get("examples") or []):
            text = guard(example if isinstance(example, str) else json.dumps(example), f"{where}.examples[{k}]", unsafe)
            if unsafe != "allow":
                # OMP writes the example as is: a line break in it would end the comment, and
                # what follows would read as declarations of the namespace
                text = "\n// ".join(text.splitlines())
            lines.append("// @example " + text)
        params = _ts_type(tool.get("parameters") or {"type": "object"}, "", f"{where}.parameters")
        name = check_name(tool["name"], f"{where}.name", unsafe)
        lines.append(f"type {name} = (_: {guard(params[0], f'{where}.parameters', unsafe)}")
        lines += [guard(line, f"{where}.parameters", unsafe) for line in params[1:]]
        lines[-1] += ") => any;"
        lines.append("")
    lines.append("} // namespace functions")
    return "\n".join(lines)
