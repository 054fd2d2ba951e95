"""gemma4_incremental: Gemma 4 model output, streamed.

Feed chunks of any size (split anywhere, even inside a token) to a `StreamParser`; get text,
thinking and tool-call events whose spans tile the stream; `parse_output` reads a whole output the
same way (leniently: problems in the text are in the result, never raised); `to_openai_message`
and `OpenAIStream` give OpenAI's shapes. Sans-IO: no I/O happens here.
"""

from gemma4_lark.events import (
    Event, Stop, StrayMarkup, Text, ThinkingDelta, ThinkingEnd, ThinkingStart, ToolCallEnd, ToolCallError, ToolCallStart,
)
from .output import ParsedOutput, collect, parse_output, parse_stream
from .parser import StreamParser, default_id_factory
from .openai import OpenAIStream, to_openai_message

__all__ = [
    "Event", "OpenAIStream", "ParsedOutput", "Stop", "StrayMarkup", "StreamParser", "Text", "ThinkingDelta", "ThinkingEnd",
    "ThinkingStart", "ToolCallEnd", "ToolCallError", "ToolCallStart", "collect", "default_id_factory", "parse_output",
    "parse_stream", "to_openai_message",
]
