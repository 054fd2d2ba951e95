"""Lenient recovery of call blocks the grammar rejects: the decoder that `StreamParser` (unless
`strict=True`) hands such a block to, and whose readings are marked `recovered`.

It is written without the grammar (nothing here imports Lark or the grammar-backed modules; a test
checks it, as the spec asks of the lenient decoder). It works the way OMP's does, walking brackets
and splitting at top-level commas while skipping `<|"|>` spans, and on every input the grammar
accepts it returns what the strict parser returns. Outside the language it recovers what can be
recovered safely and records each recovery as a diagnostic whose span (`pos` to `end`) covers the
text it skipped or read unusually: every character of a recovered block is either part of a
decoded value or inside such a span. The recoveries:

* a missing `<|tool_call>` or `<tool_call|>`, a stray `:` before `call:`, spaces around its colon;
* a missing closing brace or bracket (decode what is there), a mismatched closer;
* text after the object; empty members and trailing commas (skipped); a second `call:` in the
  same block (decoded as a call of its own by `decode_calls`);
* a string whose closing delimiter never comes (it runs to the end, less the closers the open
  objects need, or to a `,KEY:` that a delimiter follows: the next member), and `<|"|>` inside a
  string that is not followed by `,` `}` `]` `:` or the end (read as a literal `"`, as models use
  it for Python's triple quotes); a `<|"|>` right after an unquoted value that closes nothing;
* JSON-quoted `"strings"` (decoded as JSON), single-quoted `'strings'`, `key=value`;
* the Python-style `call:NAME(key=value, ...)` shell;
* a value that starts like a number but is not one (`432+1`): kept as text;
* a member with no `:` right after an undelimited word (`location:Tokyo, JP`): more of the word.

Two readings leave text the model wrote out of the arguments, a key without its value and words
after the object; they set `Decoded.lossy`, for the caller to refuse (the streaming parser makes
such a block a `lossy` error unless asked otherwise).

FunctionGemma's `<escape>` string delimiters inside an unquoted value are kept as the grammar
reads them (part of the word) and reported (`functiongemma-escape`).

It never raises. It returns no call when there is no `call:NAME` head to anchor one, and none when a
member cannot be read safely (it gives up rather than invent arguments). Its cost is linear in the
block: one pass, each diagnostic's line and column found in O(log n), and at most `MAX_NOTES`
diagnostics kept per call (the rest are summed up in one).

The modules: `calls` reads a block's heads and splits it into calls (`decode_calls`), `decoder`
walks one call's arguments (`Decoder`), `scalars` reads the words that are numbers or literals.
"""

from .calls import Decoded, decode_call, decode_calls, failure_code

__all__ = ["Decoded", "decode_call", "decode_calls", "failure_code"]
