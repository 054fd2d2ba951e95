"""gemma4_lark: Gemma 4's tool-calling format, defined by a formal grammar.

The strict parser is generated from `grammar/gemma4.lark`; see `parse_call` and friends.
"""

from .diagnostics import Diagnostic
from .error_base import Gemma4Error
from .errors import GemmaSyntaxError
from .model import (
    AwaitingResponse, Media, ModelOutput, StopMarker, Text, ThinkSwitch, Thought, ThoughtPrefill, ToolCall,
    ToolDeclaration, ToolResponse, Transcript, Turn,
)
from .parser import (
    parse_call, parse_declaration, parse_model_output, parse_response, parse_thought,
    parse_transcript, parse_value,
)
from .validate import validate

__all__ = [
    "AwaitingResponse", "Diagnostic", "Gemma4Error", "GemmaSyntaxError", "Media", "ModelOutput", "StopMarker",
    "Text", "ThinkSwitch", "Thought", "ThoughtPrefill", "ToolCall", "ToolDeclaration", "ToolResponse", "Transcript",
    "Turn", "parse_call", "parse_declaration", "parse_model_output", "parse_response",
    "parse_thought", "parse_transcript", "parse_value", "validate",
]
