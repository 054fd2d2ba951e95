"""Adapters that put `gemma4_incremental` behind the servers users run (docs/serving.md).

- `gemma4_incremental.integrations.vllm`: a vLLM `ToolParser` and `ReasoningParser` registered as
  `gemma4-lark` (imports vLLM);
- `gemma4_incremental.integrations.sglang`: an SGLang `BaseFormatDetector` registered as
  `gemma4-lark` (imports SGLang);
- `gemma4_incremental.integrations.base`: what both delegate to, framework-free (tested without
  either framework installed).

Adapters sit above the streaming layer: nothing in `gemma4_lark` or the rest of
`gemma4_incremental` imports them.
"""
