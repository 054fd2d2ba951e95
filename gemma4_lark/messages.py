"""Rendered prompts read back into messages (docs/guide.md, "Read a prompt back"), and OpenAI messages in OMP's shape.

`read_official(text)` turns an official-profile prompt into what `render.official.render_chat`
takes (messages, tools, enable_thinking, add_generation_prompt); `read_omp(text)` turns an
omp-profile transcript into OMP messages. Rendering what was read gives the same text back
(the round-trip tests check it), so a prompt can be inspected, edited and rendered again.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from .model import (
    AwaitingResponse, Media, TextPart, ThinkSwitch, Thought, ThoughtPrefill, ToolCall, ToolDeclaration, ToolResponse,
    Transcript,
)
from .errors import GemmaSyntaxError, PromptError
from .parser import parse_transcript

_BOM = "\ufeff"


def _parse(text: str | Transcript) -> Transcript:
    """The transcript, with a clear message for the two ways a file's encoding breaks one: a byte
    order mark before `<bos>`, and Windows line ends (a role line ends with `\n` alone)."""
    if not isinstance(text, str):
        return text
    if text.startswith(_BOM):
        raise GemmaSyntaxError("a byte order mark (U+FEFF) comes before the transcript; read the file with"
                               " encoding='utf-8-sig' or remove it", source=text, pos=0, text=_BOM)
    try:
        return parse_transcript(text)
    except GemmaSyntaxError as error:
        crlf = text.find("\r\n", text.rfind("\n", 0, error.pos) + 1)
        if crlf < 0 or "\n" in text[error.pos:crlf]:
            raise
        try:
            parse_transcript(text.replace("\r\n", "\n"))
        except GemmaSyntaxError:
            raise error from None
        raise GemmaSyntaxError("Windows line ends (\\r\\n): a role line ends with \\n alone; convert the"
                               " line ends before reading", source=text, pos=crlf, text="\r\n") from None


def _no_empty_thought(turn_number: int, profile: str) -> None:
    raise PromptError(f"turn {turn_number} holds an empty thought, which the {profile} profile never writes"
                     " (empty reasoning renders nothing): no messages render this transcript")


@dataclass
class OfficialPrompt:
    """The arguments of `render_chat` that produce a given official prompt."""

    messages: list = field(default_factory=list)
    tools: list = field(default_factory=list)
    enable_thinking: bool = False
    add_generation_prompt: bool = False

    def render_kwargs(self) -> dict:
        return {"messages": self.messages, "tools": self.tools or None, "enable_thinking": self.enable_thinking,
                "add_generation_prompt": self.add_generation_prompt}


def _tool_from_declaration(declaration: ToolDeclaration) -> dict:
    function = {"name": declaration.name}
    function.update(declaration.fields)
    return {"type": "function", "function": function}


def _media_part(media: Media) -> dict:
    return {"type": media.kind}


def _user_content(parts):
    message = {"content": ""}
    for part in parts:
        if isinstance(part, (TextPart, Media)):
            _add_content(message, part)
    return message["content"]


def _add_content(message: dict, part) -> None:
    """Text joins a string content; media turns the content into a list of parts."""
    content = message["content"]
    if isinstance(part, TextPart) and isinstance(content, str):
        message["content"] = content + part.text
        return
    if isinstance(content, str):
        content = [{"type": "text", "text": content}] if content else []
    content.append({"type": "text", "text": part.text} if isinstance(part, TextPart) else _media_part(part))
    message["content"] = content


def read_official(text: str | Transcript) -> OfficialPrompt:
    """Read a prompt rendered by the official template (either variant). Raises `GemmaSyntaxError` when `text` is not a transcript the grammar accepts."""
    transcript = _parse(text)
    prompt = OfficialPrompt()
    turns = list(transcript.turns)
    if turns and turns[0].role == "system":
        system = turns.pop(0)
        parts = list(system.parts)
        if parts and isinstance(parts[0], ThinkSwitch):
            prompt.enable_thinking = True
            parts.pop(0)
            if parts and isinstance(parts[0], TextPart) and parts[0].text.startswith("\n"):
                parts[0] = TextPart(parts[0].text[1:])
        prompt.tools = [_tool_from_declaration(p) for p in parts if isinstance(p, ToolDeclaration)]
        content = "".join(p.text for p in parts if isinstance(p, TextPart))
        # An empty system message leaves no trace when thinking or tools open the system turn anyway,
        # unless a developer message comes next (it would take the system message's place).
        absorbs = bool(turns) and turns[0].role in ("system", "developer")
        if content or absorbs or not (prompt.enable_thinking or prompt.tools):
            pieces = content[:-1].split(" ")
            if content != content.strip() and content.endswith(" ") and all(p == p.strip() for p in pieces):
                # the template writes each part of a list content trimmed and followed by a space
                prompt.messages.append({"role": "system", "content": [{"type": "text", "text": p} for p in pieces]})
            else:
                prompt.messages.append({"role": "system", "content": content})
    if turns and turns[-1].parts and isinstance(turns[-1].parts[-1], ThoughtPrefill):
        prompt.add_generation_prompt = prompt.enable_thinking = True  # after tool results
    elif turns and turns[-1].role == "model" and not turns[-1].closed:
        last = turns[-1]
        if not last.parts or last.parts == [Thought("")]:
            prompt.add_generation_prompt = True  # `<|turn>model\n`, and the 31B prefill
            turns.pop()
    if turns and turns[0].role == "developer" and not any(m["role"] == "system" for m in prompt.messages):
        # A first message `developer` would become the system turn; a developer turn first was
        # written after a message that renders nothing: a tool result with no call before it.
        prompt.messages.append({"role": "tool", "content": ""})
    calls = 0
    for number, turn in enumerate(turns):
        if turn.role != "model":
            prompt.messages.append({"role": turn.role, "content": _user_content(turn.parts)})
            continue
        message = None
        pending_ids: list = []
        # a thought prefill after this turn's closer: the template wrote it because the last
        # message of the turn was the one with the results (its text included)
        prefill_after = number == len(turns) - 1 and turn.closed and bool(turn.parts) \
            and isinstance(turn.parts[-1], ThoughtPrefill)
        if not turn.parts:
            prompt.messages.append({"role": "assistant", "content": ""})
        for position, part in enumerate(turn.parts):
            if isinstance(part, AwaitingResponse):
                # calls without results; whatever closes or continues the turn is the next
                # assistant message, which the template writes into the same turn
                if turn.closed or position < len(turn.parts) - 1:
                    message = {"role": "assistant", "content": ""}
                    prompt.messages.append(message)
                    pending_ids = []
                continue
            if (message is None
                    or isinstance(part, Thought) and ("reasoning_content" in message or message.get("tool_calls")
                                                      or message.get("content") or message.get("_responded"))
                    or isinstance(part, ToolCall) and (message.get("content") or message.get("_responded"))
                    or isinstance(part, ToolResponse) and not message.get("tool_calls") and message.get("content")):
                message = {"role": "assistant", "content": ""}
                prompt.messages.append(message)
                pending_ids = []
            if isinstance(part, Thought) and not part.text:
                # the 26B/31B generation prefill with the model's answer after it: no reasoning
                continue
            if isinstance(part, Thought):
                message["reasoning_content"] = part.text[:-1] if part.text.endswith("\n") else part.text
            elif isinstance(part, ToolCall):
                call_id = f"call_{calls}"
                calls += 1
                message.setdefault("tool_calls", []).append(
                    {"id": call_id, "type": "function", "function": {"name": part.name, "arguments": part.arguments}})
                pending_ids.append((call_id, part.name))
            elif isinstance(part, ToolResponse) and not message.get("tool_calls"):
                # a result with no call before it in the message: only an assistant message's
                # legacy `tool_responses` writes one (a `tool` message needs the calls)
                message["_responded"] = True
                message.setdefault("tool_responses", []).append({"name": part.name, "response": dict(part.fields)})
            elif isinstance(part, ToolResponse):
                message["_responded"] = True
                result = {"role": "tool"}
                if pending_ids and pending_ids[0][1] == part.name:
                    result["tool_call_id"] = pending_ids.pop(0)[0]
                else:
                    result["name"] = part.name
                value = part.fields.get("value") if list(part.fields) == ["value"] else None
                result["content"] = value if isinstance(value, str) else dict(part.fields)
                prompt.messages.append(result)
            elif (isinstance(part, Media) and prompt.messages[-1]["role"] == "tool"
                  and isinstance(prompt.messages[-1]["content"], (str, list))):
                # the template writes a tool message's media after its text result; after an
                # object result, media is the next assistant message's content (below)
                result = prompt.messages[-1]
                if isinstance(result["content"], str):
                    result["content"] = [{"type": "text", "text": result["content"]}]
                result["content"].append(_media_part(part))
            elif isinstance(part, (TextPart, Media)):
                if message.get("_responded") and not prefill_after:
                    # text after the results: the template writes a following assistant message
                    # into the same turn; as a message of its own it also resets what the
                    # generation prompt looks at, as the original did
                    message = {"role": "assistant", "content": ""}
                    prompt.messages.append(message)
                    pending_ids = []
                _add_content(message, part)
            # ThoughtPrefill is what the renderer writes by itself
        if (turn.closed and number == len(turns) - 1 and message is not None and message.get("_responded")
                and not message.get("content")):
            # the template leaves a last turn of results open; an empty assistant message closed it
            prompt.messages.append({"role": "assistant", "content": ""})
    for message in prompt.messages:
        message.pop("_responded", None)
    return prompt


# --- the omp profile ----------------------------------------------------------------------------
def _omp_result_text(value) -> str:
    """Text that OMP's renderer turns back into `value` (it JSON-parses result text)."""
    if isinstance(value, str):
        from .render import js

        try:
            js.parse_json(value)
        except ValueError:
            return value
        return json.dumps(value, ensure_ascii=False)
    from .render import js

    return js.dumps(value)


def read_omp(text: str | Transcript) -> list[dict[str, Any]]:
    """Read a transcript rendered by the omp profile into OMP's message shape.

    Raises `GemmaSyntaxError` when `text` is not a transcript the grammar accepts, and `PromptError`
    (a `ValueError`) naming the turn for one that the omp profile never writes (an empty thought).
    """
    transcript = _parse(text)
    messages = []
    calls = 0
    for number, turn in enumerate(transcript.turns):
        if turn.role in ("system", "user"):
            messages.append({"role": turn.role, "content": "".join(p.text for p in turn.parts if isinstance(p, TextPart))})
            continue
        content, results, ids = [], [], []
        for part in turn.parts:
            if isinstance(part, Thought):
                if not part.text:
                    _no_empty_thought(number, "omp")
                content.append({"type": "thinking", "thinking": part.text})
            elif isinstance(part, TextPart):
                content.append({"type": "text", "text": part.text})
            elif isinstance(part, ToolCall):
                ids.append(f"call_{calls}")
                calls += 1
                content.append({"type": "toolCall", "id": ids[-1], "name": part.name, "arguments": part.arguments})
            elif isinstance(part, ToolResponse):
                value = part.fields.get("output")
                results.append({"role": "toolResult", "toolCallId": ids[len(results)] if len(results) < len(ids) else "",
                                "toolName": part.name, "content": [{"type": "text", "text": _omp_result_text(value)}],
                                "isError": False})
        # A turn of results alone has no assistant message, unless the message before would take the
        # results into its own turn (an assistant's, or results'): then an empty one opens this turn.
        if content or not results or (messages and messages[-1]["role"] in ("assistant", "toolResult")):
            messages.append({"role": "assistant", "content": content})
        messages.extend(results)
    return messages


_OPENAI_ROLES = ("system", "developer", "user", "assistant", "tool")


def _image_mime(part: dict) -> str:
    """An image part's MIME type: OMP's `mimeType`, or the type of a `data:` URL as OpenAI sends
    images (`{"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,..."}}`); PNG when
    the part does not say."""
    if isinstance(part.get("mimeType"), str):
        return part["mimeType"]
    url = part.get("image_url")
    url = url.get("url") if isinstance(url, dict) else url
    if isinstance(url, str) and url.startswith("data:"):
        mime = url[5:].split(",", 1)[0].split(";", 1)[0]
        if mime:
            return mime
    return "image/png"


def _result_text(content) -> str:
    """A tool message's content as the text of OMP's result (which OMP reads as JSON when it is)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, (list, tuple)):
        return "".join(part.get("text", "") for part in content if part.get("type") == "text")
    from .render.values import json_dumps

    return json_dumps(content)


def from_openai_messages(messages, *, unmatched_tool_call_id: str = "error") -> list:
    """OpenAI chat messages, as the chat-completions API sends them, in OMP's shape (for
    `render.omp.render_transcript`): string `arguments` are decoded, `content` may be a string,
    null or a list of parts, a `tool` message takes its function's name from the call of the
    assistant message before it whose id is its `tool_call_id` (docs/serving.md, "Messages in").

    unmatched_tool_call_id: "error" (default) refuses a result that answers no call of the
    message before it, "keep" takes its `name` (or "unknown", as the official template does).
    Raises `ShapeError` (a `ValueError` and a `TypeError`) for a message of the wrong shape or an
    unknown role, naming the field, and for a result matching no call; `ArgumentsError` (a
    `ShapeError`) for string arguments that are not a JSON object, with the position in the
    string."""
    return convert_openai_messages(messages, unmatched_tool_call_id)[0]


_OMP_FIELD = re.compile(r"messages\[\d+\]\.(?:toolName|content(?:\[\d+\](?:\.(?:thinking|text))?)?)")


def rename_fields(error: BaseException, fields: dict) -> None:
    """Name in `error` (its message, and its `where`) the OpenAI field that the OMP field it names
    came from (see `convert_openai_messages`)."""
    def rename(text):
        match = _OMP_FIELD.search(text)
        if not match:
            return text
        found = match.group()
        cuts = [len(found)] + [k for k in range(len(found) - 1, 0, -1) if found[k] in ".["]
        for cut in cuts:
            if found[:cut] in fields:
                return text[:match.start()] + fields[found[:cut]] + text[match.start() + cut:]
        return text

    if error.args and isinstance(error.args[0], str):
        error.args = (rename(error.args[0]),) + error.args[1:]
    if isinstance(getattr(error, "where", None), str):
        error.where = rename(error.where)


def convert_openai_messages(messages, unmatched_tool_call_id: str = "error") -> tuple[list, dict]:
    """`from_openai_messages`, and where each OMP field came from: {OMP field: OpenAI field}
    (`messages[1].content[2]` -> `messages[1].tool_calls[0].function`), so that an error found
    while rendering the OMP messages can name the field the caller gave."""
    from .render.shapes import ShapeError, check_chat, check_tool_results, read_arguments

    check_chat(messages, None)
    names = check_tool_results(messages, unmatched_tool_call_id, orphans_render=True)
    messages = read_arguments(messages)
    out = []
    fields: dict = {}
    seen = {}
    for i, message in enumerate(messages):
        role = message["role"]
        content = message.get("content")
        at = f"messages[{i}]"
        if role in ("system", "developer", "user"):
            if isinstance(content, str):
                out.append({"role": role, "content": content})
                continue
            parts = []
            for k, p in enumerate(content or []):
                if p.get("type") in ("text", "image", "image_url"):
                    fields[f"{at}.content[{len(parts)}]"] = f"{at}.content[{k}]"
                    parts.append({"type": "text", "text": p.get("text", "")} if p.get("type") == "text"
                                 else {"type": "image", "mimeType": _image_mime(p)})
            out.append({"role": role, "content": parts})
        elif role == "assistant":
            parts = []
            for key in ("reasoning_content", "reasoning"):  # the first given
                if message.get(key):
                    fields[f"{at}.content[0].thinking"] = f"{at}.{key}"
                    parts.append({"type": "thinking", "thinking": message[key]})
                    break
            if isinstance(content, str) and content:
                fields[f"{at}.content[{len(parts)}].text"] = f"{at}.content"
                parts.append({"type": "text", "text": content})
            elif isinstance(content, list):
                for k, p in enumerate(content):
                    if p.get("type") == "text":
                        fields[f"{at}.content[{len(parts)}]"] = f"{at}.content[{k}]"
                        parts.append({"type": "text", "text": p.get("text", "")})
            for k, call in enumerate(message.get("tool_calls") or []):
                function = call["function"]
                seen[call.get("id")] = function["name"]
                fields[f"{at}.content[{len(parts)}]"] = f"{at}.tool_calls[{k}].function"
                parts.append({"type": "toolCall", "id": call.get("id", ""), "name": function["name"],
                              "arguments": function.get("arguments") or {}})
            out.append({"role": "assistant", "content": parts})
        elif role == "tool":
            # under "keep", as the official template does: the name given, or "unknown"
            name = names[i] or message.get("name") or seen.get(message.get("tool_call_id")) or "unknown"
            fields[f"{at}.content[0].text"] = f"{at}.content"
            fields[f"{at}.toolName"] = f"{at}.name" if "name" in message else f"{at}.tool_call_id"
            out.append({"role": "toolResult", "toolCallId": message.get("tool_call_id", ""), "toolName": name,
                        "content": [{"type": "text", "text": _result_text(content)}], "isError": False})
        else:
            raise ShapeError(f"{at}.role", f"{role!r} is not a role of OpenAI's chat messages"
                             f" ({', '.join(_OPENAI_ROLES)})")
    return out, fields


_OPENAI_ONLY_KEYS = ("tool_calls", "tool_call_id", "reasoning_content", "reasoning")


def _marker(message) -> tuple[str, str] | None:
    """("openai" or "omp", what says so) for a message only one of the two shapes has."""
    if not isinstance(message, dict):
        return None
    role = message.get("role")
    if role == "tool":
        return "openai", "role 'tool'"
    if role == "toolResult":
        return "omp", "role 'toolResult'"
    for key in _OPENAI_ONLY_KEYS:
        if key in message:
            return "openai", f"a {key!r} field"
    content = message.get("content")
    if role == "assistant" and isinstance(content, str):
        return "openai", "string content in an assistant message"
    if isinstance(content, list):
        for part in content:
            if not isinstance(part, dict):
                continue
            if part.get("type") == "image_url":  # OpenAI's image part, in any role's content
                return "openai", "an 'image_url' part"
            if role == "assistant" and part.get("type") in ("thinking", "toolCall"):
                return "omp", f"a {part['type']!r} part"
    return None


def message_shape(messages) -> str | None:
    """Which shape `messages` are in: "openai" (the chat-completions API's: `tool` messages,
    `tool_calls`, string assistant content, `image_url` parts) or "omp" (OMP's: `toolResult` messages, `thinking` and
    `toolCall` parts); None when no message tells them apart (then both shapes render the same).
    Raises `ShapeError` naming two messages of different shapes."""
    from .render.shapes import ShapeError

    found = None
    for i, message in enumerate(messages if isinstance(messages, (list, tuple)) else ()):
        marker = _marker(message)
        if marker is None:
            continue
        if found is None:
            found = (i, *marker)
        elif marker[0] != found[1]:
            raise ShapeError(f"messages[{i}]", f"is in {marker[0].upper()} shape ({marker[1]}), but messages[{found[0]}]"
                             f" is in {found[1].upper()} shape ({found[2]}): one conversation takes one shape")
    return found[1] if found else None


def to_openai_messages(text: str | Transcript) -> list:
    """Any rendered transcript as OpenAI chat messages (the official reading). Raises `GemmaSyntaxError` when `text` is not a transcript the grammar accepts."""
    return read_official(text).messages
