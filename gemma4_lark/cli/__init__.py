"""The `gemma4-lark` command: validate and decode Gemma 4 tool-calling text.

One module per concept: `command` (the parser of arguments and `main`: exit codes, standard output's
errors), one module per command group (`validate`, `decode`, `render`, `grammar` with `docs`), and
what they share: `inputs` (files, standard input, JSON, CommandError), `tools_file` (the `--tools`
file, read one way by every command), `output` (standard output, carets), `progress` (the status
line on a terminal), `arguments` (number types, optional dependencies). Commands of the streaming
layer (`parse`, `demo`, `fuzz`, `conformance`) build on the names exported here.
"""

from .arguments import DISTRIBUTION, add_max_depth, at_least, missing_extra, optional_dependencies
from .command import build_parser, main
from .inputs import CommandError, NotUTF8, display_name, load_json, not_utf8, os_message, read_text, stdin_binary
from .output import caret_lines, check_reader, escape_unencodable_output
from .progress import Progress

__all__ = [
    "DISTRIBUTION", "CommandError", "NotUTF8", "Progress", "add_max_depth", "at_least", "build_parser", "caret_lines",
    "check_reader", "display_name", "escape_unencodable_output", "load_json", "main", "missing_extra", "not_utf8",
    "optional_dependencies", "os_message", "read_text", "stdin_binary",
]
