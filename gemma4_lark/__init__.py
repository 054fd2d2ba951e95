"""gemma4_lark: Gemma 4's tool-calling format, defined by a formal grammar.

The strict parser is generated from `grammar/gemma4.lark`; see `parse_call` and friends. The
renderers (`render_chat`, `omp`), the readers back (`read_official`, `read_omp`) and the grammar
exports (`constrain`) are here too, imported when first used. Every error the library raises on
purpose is a `Gemma4Error`. Streaming is `gemma4_incremental`'s.
"""

import typing as _typing

from .diagnostics import Diagnostic
from .error_base import Gemma4Error
from .errors import GemmaSyntaxError, PromptError
from ._names import module_getattr as _module_getattr
from .model import (
    AwaitingResponse, Media, OutputDocument, StopPart, TextPart, ThinkSwitch, Thought, ThoughtPrefill, ToolCall,
    ToolDeclaration, ToolResponse, Transcript, Turn,
)
from .parser import (
    parse_call, parse_declaration, parse_output_document, parse_response, parse_thought, parse_transcript, parse_value,
)
from .validate import validate

if _typing.TYPE_CHECKING:  # what the lazy names are, for type checkers
    from . import constrain
    from .family import WrongModelFamilyError, classify
    from .messages import from_openai_messages, read_official, read_omp
    from .render import demote_thinking, omp
    from .render.official import render_chat
    from .render.safety import UnsafeContentError
    from .render.shapes import ArgumentsError, ShapeError

__all__ = [
    "ArgumentsError", "AwaitingResponse", "Diagnostic", "Gemma4Error", "GemmaSyntaxError", "Media",
    "OutputDocument", "PromptError", "ShapeError", "StopPart", "TextPart", "ThinkSwitch", "Thought",
    "ThoughtPrefill", "ToolCall", "ToolDeclaration", "ToolResponse", "Transcript", "Turn", "UnsafeContentError",
    "WrongModelFamilyError", "classify", "constrain", "demote_thinking", "from_openai_messages", "omp",
    "parse_call", "parse_declaration", "parse_output_document", "parse_response", "parse_thought",
    "parse_transcript", "parse_value", "read_official", "read_omp", "render_chat", "validate",
]

# Imported when first asked: the renderers and the grammar exports load Lark, which parsing
# well-formed output never needs (tests/packaging/test_import_cost.py).
__getattr__ = _module_getattr(__name__, lazy={
    "ArgumentsError": "gemma4_lark.render.shapes:ArgumentsError",
    "ShapeError": "gemma4_lark.render.shapes:ShapeError",
    "UnsafeContentError": "gemma4_lark.render.safety:UnsafeContentError",
    "WrongModelFamilyError": "gemma4_lark.family:WrongModelFamilyError",
    "classify": "gemma4_lark.family:classify",
    "constrain": "gemma4_lark.constrain",
    "demote_thinking": "gemma4_lark.render:demote_thinking",
    "from_openai_messages": "gemma4_lark.messages:from_openai_messages",
    "omp": "gemma4_lark.render.omp",
    "read_official": "gemma4_lark.messages:read_official",
    "read_omp": "gemma4_lark.messages:read_omp",
    "render_chat": "gemma4_lark.render.official:render_chat",
}, renamed={
    # The names of one release before (docs/architecture.md, "Names"): they still work, and warn.
    "ModelOutput": "OutputDocument", "StopMarker": "StopPart", "Text": "TextPart",
    "parse_model_output": "parse_output_document",
})


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
