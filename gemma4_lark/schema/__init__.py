"""Decoding against the declared tools (docs/schema.md).

* `lexeme`: what a lossless decode keeps of each scalar (no parser code: the reference decoder
  uses it too);
* `coerce`: typing decoded arguments by a tool's JSON schema;
* `registry`: the tools compiled (`compile_tools`), and the check of one call against them.

This package's `__init__` imports nothing, so importing `lexeme` costs nothing else.
"""
