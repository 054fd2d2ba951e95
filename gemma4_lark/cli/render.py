"""`gemma4-lark render`: a conversation as a Gemma 4 prompt."""

from __future__ import annotations

import json
import re
import sys

from .inputs import CommandError, display_name, json_list_of_objects, load_json, read_text
from .tools_file import read_tools_file


def cmd_render(args) -> int:
    from ..render import official, omp
    from ..render.safety import UnsafeContentError

    name = display_name(args.messages)
    source = read_text(args.messages)
    messages = json_list_of_objects(load_json(source, name, "the messages file"), source, name, "the messages")
    tools = read_tools_file(args.tools) if args.tools else None
    try:
        if args.profile == "official":
            text = official.render_chat(messages, tools, add_generation_prompt=args.generation_prompt,
                                        enable_thinking=args.thinking, variant=args.variant, unsafe=args.unsafe,
                                        unmatched_tool_call_id=args.unmatched_tool_call_id)
        else:  # OpenAI's shape or OMP's, told apart by the messages
            text = omp.render_transcript(messages, unsafe=args.unsafe,
                                         unmatched_tool_call_id=args.unmatched_tool_call_id)
            if tools:
                text = omp.render_tool_prompt(tools, unsafe=args.unsafe) + "\n\n" + text
    except UnsafeContentError as err:
        raise CommandError(in_options(str(err), args), code=1) from None
    except KeyError as err:
        raise CommandError(f"a message or tool lacks the field {err.args[0]!r}", code=1) from None
    except RecursionError:
        raise CommandError("the messages or tools nest too deeply to render", code=1) from None
    except (ValueError, TypeError, AttributeError) as err:
        # a field of the wrong JSON type deep inside a message or tool
        raise CommandError(in_options(f"a message or tool has a field of the wrong type or value: {err}", args),
                           code=1) from None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as err:
        # JSON's \uD800 escapes decode to lone surrogates, which no UTF-8 text can hold
        where = _surrogate_field({"messages": messages, "tools": tools}) or "the input"
        raise CommandError(f"{where} holds a lone surrogate (U+{ord(text[err.start]):04X}, from a \\u escape), which"
                           " UTF-8 cannot encode", code=1) from None
    sys.stdout.write(text)
    return 0


# A renderer's advice names its keyword argument, `pass unsafe='strip'`: the command's user typed options.
_KEYWORD_ARGUMENT = re.compile(r"\b([a-z][a-z_]*)=(['\"])([\w.-]+)\2")


def in_options(message: str, args) -> str:
    """A renderer's message with each `name='value'` that one of this command's options sets written
    as that option (`--unsafe strip`, `--unmatched-tool-call-id keep`). The options are the
    renderers' keyword arguments under argparse's names, so the parsed `args` say which they are."""
    def option(found: re.Match) -> str:
        name, value = found.group(1), found.group(3)
        return f"--{name.replace('_', '-')} {value}" if name in vars(args) else found.group()

    return _KEYWORD_ARGUMENT.sub(option, message)


def _surrogate_field(value) -> str | None:
    """The first field (`messages[1].content`) whose string holds a lone surrogate, looking into
    JSON string arguments too; an explicit stack, as the input may nest deeply."""
    from ..render.safety import describe

    stack = [(value, None)]
    while stack:
        item, where = stack.pop()
        if isinstance(item, str):
            if any("\ud800" <= c <= "\udfff" for c in item):
                return describe(where)
            if isinstance(where, tuple) and where[1] == "arguments":
                try:
                    stack.append((json.loads(item), where))
                except (ValueError, RecursionError):
                    pass
        elif isinstance(item, dict):
            stack.extend((v, k if where is None else (where, k)) for k, v in reversed(item.items()))
            stack.extend((k, where) for k in item if isinstance(k, str))
        elif isinstance(item, list):
            stack.extend((v, (where, i)) for i, v in reversed(list(enumerate(item))))
    return None


def register(sub) -> None:
    p = sub.add_parser("render", help="render a conversation as a Gemma 4 prompt")
    p.add_argument("messages", metavar="messages.json",
                   help="a JSON array of messages (OpenAI shape; for omp also OMP shape, told apart by its"
                        " toolResult messages and toolCall/thinking parts), or - for standard input")
    p.add_argument("--profile", choices=["official", "omp"], default="official",
                   help="official: Google's chat template; omp: oh-my-pi's prompt (default official)")
    p.add_argument("--tools", metavar="tools.json", help="a JSON array of tool declarations (OpenAI shape or bare function schemas)")
    p.add_argument("--generation-prompt", action="store_true", help="end with the opening of a model turn")
    p.add_argument("--thinking", action="store_true", help="official: turn thinking on in the system turn")
    p.add_argument("--variant", choices=["e2b", "31b"], default="e2b",
                   help="official: which model's template (they differ in the generation prompt; default e2b)")
    p.add_argument("--unsafe", choices=["error", "strip", "allow"], default="error",
                   help="what to do with control tokens inside content: refuse (default), remove, or keep")
    p.add_argument("--unmatched-tool-call-id", choices=["error", "keep"], default="error",
                   help="a tool message that answers no call of the message before it: refuse (default) or"
                        " render it as the official template does")
    p.set_defaults(run=cmd_render)
