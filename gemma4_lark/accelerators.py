"""The one switch for the accelerators: the accept-only second implementations of the grammar.

The grammar (`grammar/gemma4.lark`) is run by Lark's own LALR parser; everything else that reads
the format faster is a second implementation of some part of it, written to be accept-only (what
it cannot take, it leaves to the plain path, so every result it gives is the plain path's):

* the call-block fast path (`gemma4_lark.fastpath`);
* the lean LALR driver (`gemma4_lark.lalr.LeanLALR.parse`), which runs Lark's tables instead of
  Lark's own parser loop;
* parse_output's express path (`gemma4_incremental.express`);
* the stream's block jump (`_block_rest`, `_block_rest_end`) and the copy of `_consume` and
  `_add_to_block` inlined in `StreamParser.feed`.

`GEMMA4_LARK_ACCELERATORS=0` in the environment turns all of them off, for the whole process:
the plain path then runs everywhere (Lark's own parser builds every value, the stream reads every
chunk with its scan), slower and with the same results. Any other value, or none, leaves them
on. The variable is read once, when this module is first imported; `make test-plain` runs the
differential tests that way. docs/architecture.md lists each accelerator with the test that
proves it equal to the plain path.
"""

from __future__ import annotations

import os

__all__ = ["ENV_VAR", "ENABLED", "enabled"]

ENV_VAR = "GEMMA4_LARK_ACCELERATORS"

# (Read once: a switch that changed while a parser ran would mix the two paths in one result.)
ENABLED: bool = os.environ.get(ENV_VAR) != "0"


def enabled() -> bool:
    """Whether the accelerators run: False only when GEMMA4_LARK_ACCELERATORS was "0" at import."""
    return ENABLED
