"""The `official` profile: the Gemma 4 chat template of July 2026, byte for byte (docs/official-template.md).

A line-by-line translation of `gemma4-{e2b,31b}-2026-07.jinja` (see docs/official-template.md)
into plain Python: the same decisions in the same order, with Jinja's semantics kept where they
show in the output (`dictsort` sorts keys case-insensitively, `trim` strips Unicode whitespace,
`upper` writes `str(value).upper()`, a missing key renders as nothing). The two variants differ
in one place: with the generation prompt and thinking off, the 26B/31B one prefills an empty
thought.

Every string is passed through the `unsafe` policy first (docs/security.md); with unsafe="allow" the output
is exactly the template's.
"""

from __future__ import annotations

from .. import tokens
from ..values import DEFAULT_MAX_DEPTH
from .shapes import ShapeError, check_chat, check_tool_results, expect, read_arguments
from .safety import Run, UnsafeContentError, check_name, check_policy, guard, guard_run, strip_controls
from .values import ValueWriter, check_depth, key_bare, key_bare_if_possible, key_quoted, python_number

VARIANTS = ("e2b", "31b")
_D = tokens.STRING_DELIMITER
_STANDARD_KEYS = ("description", "type", "properties", "required", "nullable")


class _Missing:
    """Jinja's undefined: false, and renders as the empty string."""

    def __bool__(self):
        return False

    def __str__(self):
        return ""


MISSING = _Missing()


def _get(value, key):
    if isinstance(value, dict):
        return value.get(key, MISSING)
    return MISSING


_SCALARS = (str, int, float, type(None))


def _upper(value, where) -> str:
    """Jinja's `upper`: `str(value).upper()`. A type is a string, or a list of them (a union); the
    template would write str() of anything else, so scalars are kept for exactness and deeper
    values refused (str() of a deep one would overflow the stack)."""
    if value is MISSING:
        return ""
    if isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            expect(item, _SCALARS, (where, i))
    else:
        expect(value, _SCALARS + (list, tuple), where)
    return str(value).upper()


_MEDIA = {"image": tokens.IMAGE, "image_url": tokens.IMAGE, "audio": tokens.AUDIO, "input_audio": tokens.AUDIO,
          "video": tokens.VIDEO}


def _media_token(kind) -> str:
    """The placeholder the template writes for a content part of this type ("" for others)."""
    return _MEDIA.get(kind, "")


def _items_sorted(mapping: dict):
    """Jinja's `dictsort`: by key, case-insensitively, stable."""
    return sorted(mapping.items(), key=lambda item: item[0].lower() if isinstance(item[0], str) else item[0])


class _Renderer:
    def __init__(self, unsafe: str, max_depth: int = DEFAULT_MAX_DEPTH):
        self.unsafe = unsafe
        self.max_depth = max_depth
        # schemas are walked recursively (a frame per level): never past the default, whatever
        # a caller's max_depth allows for values
        self.schema_depth = min(max_depth, DEFAULT_MAX_DEPTH)
        # format_argument(..., escape_keys=False) and (..., escape_keys=True). The template writes
        # keys bare; a key the grammar's KEY terminal does not take (`to:x,memo`) would read back as
        # other members, so unless unsafe="allow" such a key is written as a `<|"|>` string.
        # Likewise the template writes NaN and infinities as `nan` and `inf`, which read back as
        # the strings "nan" and "inf": refused unless unsafe="allow".
        number = str if unsafe == "allow" else python_number
        self.bare = ValueWriter(number=number, key=key_bare if unsafe == "allow" else key_bare_if_possible,
                                sort_keys=True, unsafe=unsafe)
        self.quoted = ValueWriter(number=number, key=key_quoted, sort_keys=True, unsafe=unsafe)
        # the model's own call arguments: their strings go back as the model wrote them
        # (docs/security.md#the-models-own-calls)
        self.arguments = ValueWriter(number=number, key=key_bare if unsafe == "allow" else key_bare_if_possible,
                                     sort_keys=True, unsafe=unsafe, model_strings=True)

    def text(self, value, where: str) -> str:
        """A description, key, role or required name: a string (the template would write str()
        of anything else), as the policy allows."""
        return guard(expect(value, (str,), where), where, self.unsafe)

    def sorted(self, mapping: dict, where: str):
        """`dictsort`, by the key as written (stripped, under "strip", where two keys that become
        one are refused, as in values)."""
        if self.unsafe != "strip":
            return _items_sorted(mapping)
        seen = {}
        for key in mapping:
            written = strip_controls(key) if isinstance(key, str) else key
            if written in seen:
                raise UnsafeContentError(key, f"{where}.{key}", 0, f"{where}.{key}: once stripped of control tokens,"
                                         f" key {key!r} is another key of the same object")
            seen[written] = key
        return sorted(mapping.items(), key=lambda item: strip_controls(item[0]).lower() if isinstance(item[0], str)
                      else item[0])

    def trim(self, text, role: str = "system") -> str:
        """Content as the template writes it: trimmed (assistant content also loses its thoughts).
        Under "strip" the tokens go first, so the text is what the stripped message would give."""
        text = strip_thinking(text) if role == "model" else str(text).strip()
        return strip_controls(text).strip() if self.unsafe == "strip" else text

    def name(self, value, where: str) -> str:
        """A tool name: the grammar's NAME, or refused (see check_name)."""
        return check_name(str(value), where, self.unsafe)

    def key(self, value, where: str) -> str:
        """A bare key the template writes in a declaration, quoted when KEY does not take it."""
        text = self.text(value, where)
        return text if self.unsafe == "allow" else key_bare_if_possible(text)

    # --- declarations -------------------------------------------------------------------------
    def parameters(self, properties: dict, where: str, filter_keys: bool = False, depth: int = 2) -> str:
        # `depth`: the objects open around `properties`' members (`declaration:f{parameters:{properties:{`
        # is 3 less one, as each member opens `name:{`); each level of a schema is two levels of
        # the value. Past the parser's nesting limit the prompt could not be read back (and
        # Python's stack would overflow a little further on), so the limit is an error naming
        # the field.
        check_depth(depth + 2, where, self.schema_depth, "the schema")
        out = []
        first = True
        for key, value in self.sorted(properties, where):
            if filter_keys and key in _STANDARD_KEYS:
                continue
            at = f"{where}.{key}"
            if not first:
                out.append(",")
            first = False
            out.append(self.key(key, at) + ":{")
            comma = False
            description = _get(value, "description")
            if description:  # as the stripped schema would be: an all-token description is none
                description = self.text(description, at + ".description")
            if description:
                out.append("description:" + _D + description + _D)
                comma = True
            kind = _upper(_get(value, "type"), at + ".type")
            if kind == "STRING":
                enum = _get(value, "enum")
                if enum:
                    out.append("," if comma else "")
                    comma = True
                    out.append("enum:" + self.quoted.write(enum, at + ".enum", depth=depth + 2,
                                                                  max_depth=self.schema_depth))
            elif kind == "ARRAY":
                items = _get(value, "items")
                if isinstance(items, dict) and items:
                    out.append("," if comma else "")
                    comma = True
                    out.append("items:{")
                    first_item = True
                    for item_key, item_value in self.sorted(items, at + ".items"):
                        if item_value is None:
                            continue
                        if not first_item:
                            out.append(",")
                        first_item = False
                        item_at = f"{at}.items.{item_key}"
                        if item_key == "properties":
                            out.append("properties:{")
                            if isinstance(item_value, dict):
                                out.append(self.parameters(item_value, item_at, depth=depth + 4))
                            out.append("}")
                        elif item_key == "required":
                            out.append("required:[" + ",".join(_D + self.text(r, (item_at, i)) + _D for i, r in
                                                               enumerate(expect(item_value, (list, tuple), item_at)))
                                       + "]")
                        elif item_key == "type":
                            if isinstance(item_value, str):
                                out.append("type:" + self.quoted.write(item_value.upper(), item_at))
                            else:
                                expect(item_value, (list, tuple), item_at)
                                out.append("type:" + self.quoted.write([_upper(v, (item_at, i)) for i, v in
                                                                        enumerate(item_value)], item_at,
                                                                       depth=depth + 3, max_depth=self.schema_depth))
                        else:
                            out.append(self.key(item_key, item_at) + ":" + self.quoted.write(
                                item_value, item_at, depth=depth + 3, max_depth=self.schema_depth))
                    out.append("}")
            if _get(value, "nullable"):
                out.append("," if comma else "")
                comma = True
                out.append("nullable:true")
            if kind == "OBJECT":
                nested = _get(value, "properties")
                if isinstance(nested, dict):
                    out.append("," if comma else "")
                    comma = True
                    out.append("properties:{" + self.parameters(nested, at + ".properties", depth=depth + 2) + "}")
                elif isinstance(value, dict):
                    out.append("," if comma else "")
                    comma = True
                    out.append("properties:{" + self.parameters(value, at, filter_keys=True, depth=depth + 2) + "}")
                required = _get(value, "required")
                if required:
                    out.append("," if comma else "")
                    comma = True
                    out.append("required:[" + ",".join(_D + self.text(r, (at + ".required", i)) + _D for i, r in
                                                       enumerate(expect(required, (list, tuple), at + ".required")))
                               + "]")
            out.append("," if comma else "")
            out.append("type:" + _D + guard(kind, at + ".type", self.unsafe) + _D + "}")
        return "".join(out)

    def declaration(self, tool: dict, where: str) -> str:
        function = tool["function"]
        out = [tokens.DECLARATION_KEYWORD + self.name(function["name"], where + ".name")
               + "{description:" + _D + self.text(function.get("description", ""), where + ".description") + _D]
        params = function.get("parameters")
        if params:
            out.append(",parameters:{")
            properties = _get(params, "properties")
            if properties:
                out.append("properties:{" + self.parameters(properties, where + ".parameters.properties") + "},")
            required = _get(params, "required")
            if required:
                out.append("required:[" + ",".join(_D + self.text(r, f"{where}.parameters.required[{i}]") + _D
                                                   for i, r in enumerate(required)) + "],")
            kind = _get(params, "type")
            if kind:
                out.append("type:" + _D + guard(_upper(kind, where + ".parameters.type"), where + ".parameters.type",
                                                self.unsafe) + _D + "}")
        if "response" in function:
            response = function["response"]
            out.append(",response:{")
            description = _get(response, "description")
            if description:
                description = self.text(description, where + ".response.description")
            if description:
                out.append("description:" + _D + description + _D + ",")
            if _upper(_get(response, "type"), where + ".response.type") == "OBJECT":
                out.append("type:" + _D + "OBJECT" + _D + "}")
        out.append("}")
        return "".join(out).strip()

    # --- conversation pieces ------------------------------------------------------------------
    def call(self, tool_call: dict, where: str) -> str:
        function = tool_call["function"]
        arguments = function.get("arguments", MISSING)
        out = [tokens.TOOL_CALL_OPEN + tokens.CALL_KEYWORD + self.name(function["name"], where + ".function.name") + "{"]
        if isinstance(arguments, dict):
            body = self.arguments.write(arguments, where + ".function.arguments", max_depth=self.max_depth)
            out.append(body[1:-1])
        elif arguments is not None:  # a string was decoded already (shapes.read_arguments)
            raise ShapeError(f"{where}.function.arguments",
                             f"must be an object or a JSON string of one, not {type(arguments).__name__}")
        out.append("}" + tokens.TOOL_CALL_CLOSE)
        return "".join(out)

    def response(self, name: str, response, where: str) -> str:
        head = tokens.TOOL_RESPONSE_OPEN + tokens.RESPONSE_KEYWORD + self.name(name, where + ".name") + "{"
        if isinstance(response, dict):  # its braces are the block's
            body = self.bare.write(response, where + ".content", max_depth=self.max_depth)[1:-1]
        else:
            body = "value:" + self.bare.write(response, where + ".content", depth=1, max_depth=self.max_depth)
        return head + body + "}" + tokens.TOOL_RESPONSE_CLOSE

    def content(self, content, role: str, where: str, run: Run) -> bool:
        """Write a message's content into `run`; whether it wrote anything but whitespace. Text
        goes in as content, so that it is checked together with whatever text lands next to it
        (the next part, or the next assistant message written into the same turn)."""
        pieces = []
        media = False
        if isinstance(content, str):
            pieces.append((self.trim(content, role), where))
            run.content(*pieces[-1])
        elif isinstance(content, (list, tuple)):
            for i, item in enumerate(content):
                kind = item.get("type")
                if kind == "text":
                    text = item.get("text", "")
                    pieces.append((self.trim(text, role), f"{where}[{i}].text"))
                    run.content(*pieces[-1])
                elif _media_token(kind):
                    run.structure(_media_token(kind))
                    media = True
        # what is left of the text once stripped (under "error" the run refuses it anyway)
        return media or bool(guard_run(pieces, "strip" if self.unsafe == "strip" else "allow").strip())


def strip_thinking(text: str) -> str:
    """What the template keeps of assistant content: every `<|channel>...<channel|>` span removed
    (the format's own markup for that place, so it is removed before the safety check), trimmed."""
    kept = []
    for part in str(text).split(tokens.CHANNEL_CLOSE):
        kept.append(part.split(tokens.CHANNEL_OPEN)[0] if tokens.CHANNEL_OPEN in part else part)
    return "".join(kept).strip()


def render_chat(messages, tools=None, *, add_generation_prompt: bool = False, enable_thinking: bool = False,
                preserve_thinking: bool = False, variant: str = "e2b", unsafe: str = "error",
                model: str | None = None, max_depth: int = DEFAULT_MAX_DEPTH,
                unmatched_tool_call_id: str = "error") -> str:
    """`messages` (and `tools`) as the OpenAI chat-completions API sends them, as the official
    Gemma 4 chat template renders them (docs/serving.md, "Messages in").

    Beyond what the template takes: a call's `arguments` may be the JSON string OpenAI sends
    (rendered exactly as the object it encodes), and a tool may be a bare function schema.
    variant: "e2b" (E2B/E4B) or "31b" (26B/31B). max_depth: the deepest nesting the prompt will be
    read with (the parser's default). unmatched_tool_call_id: "error" (default) refuses a tool
    result that answers no call of the message before it (see `shapes.check_tool_results`);
    "keep" renders it as the template does. Raises `ValueError` for an unknown `variant`,
    `unsafe` or `unmatched_tool_call_id`, and for a value or schema nesting deeper than
    `max_depth` once rendered (naming the field); `ShapeError` (a `ValueError` and a
    `TypeError`) for a message or tool of the wrong shape, naming the field
    (`messages[0].content[0]`), and for a result matching no call; `ArgumentsError` (a
    `ShapeError`) for string arguments that are not a JSON object, with the position in the
    string; `UnsafeContentError` (a `ValueError`) for content with control tokens (see
    `unsafe`); `WrongModelFamilyError` (a `ValueError`) when `model` is given and is not a Gemma
    4 id. Nothing else, whatever the input.
    """
    check_policy(unsafe)
    tools = check_chat(messages, tools)
    check_tool_results(messages, unmatched_tool_call_id)
    messages = read_arguments(messages)
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}, not {variant!r}")
    if model is not None:
        from ..family import require_gemma4

        require_gemma4(model)
    r = _Renderer(unsafe, max_depth)
    out = Run(unsafe)
    out.structure(tokens.BOS)
    prev_type = None
    prev_non_tool_role = None
    loop = list(messages)
    first_role = messages[0]["role"] if messages else None
    if enable_thinking or tools or first_role in ("system", "developer"):
        out.structure(tokens.TURN_OPEN + "system\n")
        if enable_thinking:
            out.structure(tokens.THINK + "\n")
            prev_type = "think"
        if first_role in ("system", "developer"):
            content = messages[0].get("content")
            if isinstance(content, str):
                out.content(r.trim(content), "messages[0].content")
            elif isinstance(content, (list, tuple)):
                for i, item in enumerate(content):
                    out.content(r.trim(_get(item, "text")), f"messages[0].content[{i}]")
                    out.content(" ", f"messages[0].content[{i}]")
            loop = loop[1:]
        if tools:
            for i, tool in enumerate(tools):
                out.structure(tokens.TOOL_OPEN + r.declaration(tool, f"tools[{i}]") + tokens.TOOL_CLOSE)
            prev_type = "tool"
        out.structure(tokens.TURN_CLOSE + "\n")
    offset = len(messages) - len(loop)

    last_user = -1
    for i, message in enumerate(loop):
        if message["role"] == "user":
            last_user = i
    # the role of the next message that is not a tool result, for every index: the template scans
    # forward from each message, which is quadratic in a long conversation
    next_roles = [None] * len(loop)
    for i in range(len(loop) - 2, -1, -1):
        follow = loop[i + 1]["role"]
        next_roles[i] = next_roles[i + 1] if follow == "tool" else follow

    for index, message in enumerate(loop):
        if message["role"] == "tool":
            continue
        where = f"messages[{index + offset}]"
        prev_type = None
        role = "model" if message["role"] == "assistant" else message["role"]
        if not (role == "model" and prev_non_tool_role == "assistant"):
            out.structure(tokens.TURN_OPEN + check_name(r.text(role, where + ".role"), where + ".role", unsafe,
                                                        "ROLE_LINE", "\n") + "\n")
        thinking = message.get("reasoning") or message.get("reasoning_content")
        if thinking and unsafe == "strip":  # reasoning that is all tokens is no reasoning
            thinking = strip_controls(str(thinking))
        tool_calls = message.get("tool_calls")
        if thinking and (index > last_user or (preserve_thinking and tool_calls)):
            out.structure(tokens.THOUGHT_OPEN)
            out.content(thinking if isinstance(thinking, str) else str(thinking), where + ".reasoning_content")
            out.content("\n", where + ".reasoning_content")
            out.structure(tokens.CHANNEL_CLOSE)
        if tool_calls:
            for i, tool_call in enumerate(tool_calls):
                out.structure(r.call(tool_call, f"{where}.tool_calls[{i}]"))
            prev_type = "tool_call"
        responded = False
        if message.get("tool_responses"):  # legacy: results embedded in the assistant message
            for i, tool_response in enumerate(message["tool_responses"]):
                out.structure(r.response(tool_response.get("name") or "unknown", tool_response.get("response"),
                                         f"{where}.tool_responses[{i}]"))
                responded = True
                prev_type = "tool_response"
        elif tool_calls:
            # the template takes the name of the last call whose id matches, for every result
            names = {tc.get("id"): tc["function"]["name"] for tc in tool_calls}
            for k in range(index + 1, len(loop)):
                follow = loop[k]
                if follow["role"] != "tool":
                    break
                follow_at = f"messages[{k + offset}]"
                name = names.get(follow.get("tool_call_id"), follow.get("name") or "unknown")
                body = follow.get("content")
                if isinstance(body, (list, tuple)):
                    text = "".join(str(part.get("text", "")) for part in body if part.get("type") == "text")
                    out.structure(r.response(name, text, follow_at))
                    out.structure("".join(_media_token(part.get("type")) for part in body))
                else:
                    out.structure(r.response(name, body, follow_at))
                responded = True
                prev_type = "tool_response"
        has_content = r.content(message.get("content"), role, where + ".content", out)
        next_role = next_roles[index]
        continues = role == "model" and next_role == "assistant" and (not tool_calls or responded)
        if prev_type == "tool_call" and not responded:
            out.structure(tokens.TOOL_RESPONSE_OPEN)
        elif continues:
            pass
        elif not (responded and not has_content and next_role is None):
            out.structure(tokens.TURN_CLOSE + "\n")
        prev_non_tool_role = message["role"]

    if add_generation_prompt:
        if prev_type not in ("tool_response", "tool_call"):
            out.structure(tokens.TURN_OPEN + "model\n")
            if variant == "31b" and not enable_thinking:
                out.structure(tokens.THOUGHT_OPEN + tokens.CHANNEL_CLOSE)
        elif prev_type == "tool_response" and enable_thinking:
            out.structure(tokens.THOUGHT_OPEN)
    return out.text()
