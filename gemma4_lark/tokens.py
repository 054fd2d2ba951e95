"""The special tokens of Gemma 4 (the grammar's terminals: docs/spec/index.md) as text.

Renderers write these; the parsers read them through the grammar. Error messages and renderers take
them from here rather than spelling them out again.
"""

BOS = "<bos>"
EOS = "<eos>"
TURN_OPEN = "<|turn>"
TURN_CLOSE = "<turn|>"
TOOL_OPEN = "<|tool>"
TOOL_CLOSE = "<tool|>"
TOOL_CALL_OPEN = "<|tool_call>"
TOOL_CALL_CLOSE = "<tool_call|>"
TOOL_RESPONSE_OPEN = "<|tool_response>"
TOOL_RESPONSE_CLOSE = "<tool_response|>"
STRING_DELIMITER = '<|"|>'
THINK = "<|think|>"
CHANNEL_OPEN = "<|channel>"
CHANNEL_CLOSE = "<channel|>"
THOUGHT_OPEN = CHANNEL_OPEN + "thought\n"
CALL_KEYWORD = "call:"
RESPONSE_KEYWORD = "response:"
DECLARATION_KEYWORD = "declaration:"
IMAGE = "<|image|>"
AUDIO = "<|audio|>"
VIDEO = "<|video|>"
# FunctionGemma's string delimiter, not Gemma 4's: outputs of a model trained on both may hold it
# in a bare word, and the decoders report it (`functiongemma-escape`).
FUNCTIONGEMMA_ESCAPE = "<escape>"

# The tokens the format itself uses. The renderers' guard does not rely on this list: any
# `<|word>`, `<|word|>`, `<word|>` is a control token, as the grammar's TEXT terminal says (see
# render/safety.py); a test checks every token here is one.
CONTROL_TOKENS = (
    BOS, EOS, TURN_OPEN, TURN_CLOSE, TOOL_OPEN, TOOL_CLOSE, TOOL_CALL_OPEN, TOOL_CALL_CLOSE,
    TOOL_RESPONSE_OPEN, TOOL_RESPONSE_CLOSE, STRING_DELIMITER, THINK, CHANNEL_OPEN, CHANNEL_CLOSE,
    IMAGE, AUDIO, VIDEO,
)
