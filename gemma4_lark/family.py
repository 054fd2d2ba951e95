"""Which tool-calling format a model id speaks (docs/README.md, "Model families").

OMP maps Gemma 3 and Gemma 4 ids to the same dialect, so a Gemma 3 model gets Gemma 4 syntax it
was never trained on (Gemma 3 writes Python-style `tool_code` blocks). This tells them apart.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .error_base import Gemma4Error

# Model ids as hubs and servers write them: "google/gemma-4-31b-it", "gemma4:e4b",
# "mlx-community/gemma-3-27b-it-4bit", "functiongemma-270m-it", "gemma3n:e2b".
_FAMILY = re.compile(r"(?:^|[/:_\-\s])(function)?gemma[-_ ]?(\d+)(n)?(?=$|[^0-9])", re.IGNORECASE)
_FUNCTION_GEMMA = re.compile(r"function[-_]?gemma", re.IGNORECASE)


@dataclass(frozen=True)
class ModelFormat:
    format: str | None   # "gemma4", "gemma3-tool-code" or None (not a Gemma id, or no tool format)
    reason: str


def classify(model_id: str, *, supports_tools: bool | None = None) -> ModelFormat:
    """The format `model_id` speaks, with the reason. Raises nothing: an id of no known format
    gets the format None, and the reason says why."""
    text = str(model_id or "")
    if supports_tools is False:
        return ModelFormat(None, f"{text!r} is marked as not supporting tools")
    if _FUNCTION_GEMMA.search(text):
        return ModelFormat("gemma3-tool-code", f"{text!r} is FunctionGemma, built on Gemma 3: its own call format, not Gemma 4's")
    match = _FAMILY.search(text)
    if not match:
        return ModelFormat(None, f"{text!r} is not a Gemma model id")
    generation = int(match.group(2))
    if generation >= 4:
        return ModelFormat("gemma4", f"{text!r} is Gemma {generation}: token-delimited <|tool_call> blocks")
    if generation == 3:
        variant = "Gemma 3n" if match.group(3) else "Gemma 3"
        return ModelFormat("gemma3-tool-code", f"{text!r} is {variant}: Python-style tool_code blocks, not Gemma 4 syntax")
    return ModelFormat(None, f"{text!r} is Gemma {generation}, which has no tool-calling format")


def format_for_model(model_id: str, *, supports_tools: bool | None = None):
    """("gemma4" | "gemma3-tool-code" | None, reason)."""
    result = classify(model_id, supports_tools=supports_tools)
    return result.format, result.reason


class WrongModelFamilyError(ValueError, Gemma4Error):
    """A Gemma 4 renderer was asked to render for a model that speaks another format, or a
    tokenizer without Gemma 4's control tokens was given to read a stream's token ids."""


def require_gemma4(model_id: str) -> None:
    result = classify(model_id)
    if result.format != "gemma4":
        advice = " Use the Gemma 3 tool_code format for it." if result.format == "gemma3-tool-code" else ""
        raise WrongModelFamilyError(f"not rendering Gemma 4 syntax: {result.reason}.{advice}")
