"""Block decisions: one finished call block, as a stream found it, to the calls it makes or the
error it is (docs/streaming.md, docs/leniency.md, docs/schema.md).

A stream only finds a block's boundaries; what the block *is* is decided here, once, for every
reader (`StreamParser`, `parse_output`, its express path): the strict parser of the grammar first;
when it rejects the block and the policy is not strict, the lenient decoder, with the grammar's
error and each recovery as diagnostics; then the policy's checks (declared tools, `tool_choice`,
the tools' schemas).

`decide_block(raw, policy, closed=..., at_end=..., bare=...)` returns the block's outcomes in order:
`BlockCall`s and `BlockError`s (one block may hold several calls when it is recovered), or None when
a bare block (one the stream guessed from `call:NAME{` without its opener) is prose after all.
Positions in outcomes are offsets into `raw`. Ids and the calls' indices are the stream's: it
numbers the outcomes as it emits them.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass, field
from typing import Any, Collection, Sequence

from . import accelerators, fastpath, marker_search, tokens
from .diagnostics import Diagnostic, LineIndex, message
from .errors import GemmaSyntaxError
from .model import fast_init
from .grammar import control_pattern
from .parser import parse_call, parse_lossless_call
from .recovery import decode_calls, failure_code
from .schema.lexeme import Scalar, plain
from .schema.registry import ToolRegistry, compile_tools
from .textmarkers import mask_for, respelled, spelled_out
from .tools import ToolChoice, read_tool_choice

__all__ = ["BlockCall", "BlockError", "BlockPolicy", "decide_block", "has_escape_outside_strings"]

_CONTROL = control_pattern()
FUNCTIONGEMMA_ESCAPE = tokens.FUNCTIONGEMMA_ESCAPE


@fast_init
@dataclass(frozen=True, slots=True)
class BlockCall:
    """A call the block makes. `raw` is the part of the block that holds it (the whole block, or
    one call of a recovered block that held several), `begin`/`end` where that part is in the
    block; `arguments` are lossless (`Scalar`s) and typed by the tool's schema when tools are
    declared; `recovered`: read by the lenient decoder, its `diagnostics` say how."""

    name: str
    arguments: Any
    raw: str
    diagnostics: list = field(default_factory=list)
    recovered: bool = False
    begin: int = 0
    end: int = 0


@fast_init
@dataclass(frozen=True, slots=True)
class BlockError:
    """A block (or part of one) that makes no call: `message` and `code` say why (the codes of
    docs/streaming.md#errors), `name` and `partial` what could be read of it."""

    raw: str
    message: str
    code: str
    name: str | None = None
    partial: Any = None
    diagnostics: list = field(default_factory=list)
    begin: int = 0
    end: int = 0


@dataclass(frozen=True)
class BlockPolicy:
    """How blocks are decided: `strict` (a block the grammar rejects is an error, never recovered),
    `lossy_recovery` (accept a recovered call whose reading leaves text out), `max_depth` and
    `max_block_chars` (limits), `tools` (compiled: calls are decoded against them) and
    `tool_choice`. Build it with `BlockPolicy.of(...)`, which reads `tools` and `tool_choice` as a
    request gives them (raises `ShapeError` for malformed ones)."""

    strict: bool = False
    lossy_recovery: bool = False
    max_depth: int = 512
    max_block_chars: int = 4 * 1024 * 1024
    tools: ToolRegistry | None = None
    tool_choice: ToolChoice = field(default_factory=lambda: ToolChoice("auto"))

    @classmethod
    def of(cls, *, strict: bool = False, lossy_recovery: bool = False, max_depth: int = 512,
           max_block_chars: int = 4 * 1024 * 1024, tools: Sequence[Any] | ToolRegistry | None = None,
           tool_choice: Any = None) -> "BlockPolicy":
        if tools is None and tool_choice is None:  # most parsers: one shared policy per setting
            return _without_tools(strict, lossy_recovery, max_depth, max_block_chars)
        registry = compile_tools(tools)
        choice = read_tool_choice(tool_choice, registry.tools if registry is not None else ())
        return cls(strict, lossy_recovery, max_depth, max_block_chars, registry, choice)

    @property
    def plain(self) -> bool:
        """No tools and `tool_choice` "auto": a decoded call is made as it reads."""
        return self.tools is None and self.tool_choice.mode == "auto"

    def types_arguments(self, name: str) -> bool:
        """Whether a call of `name` is typed by a schema: its bare scalars may change type when it
        is decoded (OpenAIStream streams its arguments only up to the first of them)."""
        schema = self.tools.get(name) if self.tools is not None else None
        return schema is not None and schema.root is not None

    def refusal(self, name: str) -> tuple[str, str] | None:
        """(code, message) when a call of `name` may not be made: undeclared, or not what
        `tool_choice` allows; else None."""
        if self.tools is not None and name not in self.tools:
            return "unknown-tool", f"`{name[:80]}` is not one of the declared tools"
        mode = self.tool_choice.mode
        if mode == "none":
            return "tool-choice", "tool_choice is \"none\": no call may be made"
        if mode == "function" and name != self.tool_choice.name:
            return "tool-choice", f"tool_choice names `{self.tool_choice.name}`: `{name[:80]}` may not be called"
        return None

    def output_findings(self, calls_made: int, end: int) -> list[Diagnostic]:
        """The whole-output check of `tool_choice`: "required" (or a named function) and no call.
        Its finding is about no place in the text: `pos` is the output's end, line and column 0."""
        mode = self.tool_choice.mode
        if mode in ("required", "function") and not calls_made:
            what = "a call" if mode == "required" else f"a call of `{self.tool_choice.name}`"
            return [Diagnostic("error", "missing-call", f"tool_choice requires {what}, and the output makes none",
                               0, 0, end)]
        return []

    def admit(self, call: BlockCall) -> BlockCall | BlockError:
        """A decoded call, checked: an error when it may not be made (`unknown-tool`, `tool-choice`)
        or, strict, when its arguments violate the tool's schema; else the call, its arguments
        typed by the tool's schema (with the coercions and violations as diagnostics)."""
        refusal = self.refusal(call.name)
        if refusal is not None:
            code, message = refusal
            return BlockError(call.raw, message, code, call.name, plain(call.arguments), call.diagnostics,
                              call.begin, call.end)
        if self.tools is None:
            return call
        brace = call.raw.find("{")
        typed, coerced, violations = self.tools.get(call.name).check(call.arguments, LineIndex(call.raw),
                                                                     max(brace, 0))
        diagnostics = call.diagnostics
        if coerced or violations:
            diagnostics = sorted(diagnostics + coerced + violations, key=lambda d: d.pos)
        if violations and self.strict:
            return BlockError(call.raw, violations[0].message, "schema", call.name, typed, diagnostics,
                              call.begin, call.end)
        return BlockCall(call.name, typed, call.raw, diagnostics, call.recovered, call.begin, call.end)


@functools.lru_cache(maxsize=64)
def _without_tools(strict: bool, lossy_recovery: bool, max_depth: int, max_block_chars: int) -> BlockPolicy:
    return BlockPolicy(strict, lossy_recovery, max_depth, max_block_chars, None,
                       read_tool_choice(None, ()))


def decide_block(raw: str, policy: BlockPolicy, *, closed: bool = True, at_end: bool = False, bare: bool = False,
                 size: int | None = None, text_markers: Collection[int] = (),
                 delimiters: list[int] | None = None) -> list[BlockCall | BlockError] | None:
    """The outcomes of the call block `raw` (from its `<|tool_call>`, or from `call:` for a `bare`
    block), in order; None when a bare block is prose after all.

    `closed`: `raw` ends with the `<tool_call|>` that closes it; else a marker ended it, or the
    stream did (`at_end`: it may have been cut off). `size`: the block's length when it outgrew
    `policy.max_block_chars` (then `raw` holds its first characters and it is a `too-large` error).
    `text_markers`: offsets in `raw` where a control token is spelled with ordinary tokens (token-id
    mode): text, never markup. `delimiters`: where its string delimiters are, when the caller found
    them (the fast path need not look again). Raises nothing for any text; a decoder's failure is an
    `internal` error outcome.
    """
    if size is not None and size > policy.max_block_chars:
        return [BlockError(raw, f"block exceeds {policy.max_block_chars} characters ({size}); raw holds the first"
                                f" {policy.max_block_chars}", "too-large", end=len(raw))]
    try:
        mask = mask_for(raw, text_markers) if text_markers else ""
        if mask is None:  # nothing can stand for the spelled markers: never read them as markup
            return [BlockError(raw, "the block spells control tokens with ordinary tokens and holds every"
                                    " private-use character, so they cannot be kept apart from its markup;"
                                    " it is not decoded", "unreadable", end=len(raw))]
        if mask:
            outcomes = _decode(spelled_out(raw, text_markers, mask), policy, closed, at_end, bare, None, mask)
            return None if outcomes is None else [_respell(outcome, mask) for outcome in outcomes]
        return _decode(raw, policy, closed, at_end, bare, delimiters, "")
    except Exception as exc:  # noqa: BLE001 - a decoder's bug must not lose the stream
        return [BlockError(raw, f"the block could not be decoded ({type(exc).__name__}: {str(exc)[:200]})",
                           "internal", end=len(raw))]


def _decode(raw: str, policy: BlockPolicy, closed: bool, at_end: bool, bare: bool, delimiters: list[int] | None,
            mask: str) -> list[BlockCall | BlockError] | None:
    """The block's outcomes, `mask` standing for the `<` of spelled markers (see `decide_block`).

    A block not closed by `<tool_call|>` is never a plain success: at the end of the stream it is
    an error (it may have been cut off), and before a marker that ended it, a recovered call only
    when its arguments are complete (lenient), else an error."""
    lossless = policy.tools is not None
    max_depth = policy.max_depth
    syntax = None
    if closed and not bare:
        duplicates: list = []
        try:
            if lossless:
                call = parse_lossless_call(raw, max_depth=max_depth, duplicates=duplicates)
            else:  # the fast path (told where the delimiters are, when known); else the LALR path
                call = (fastpath.parse_call(raw, max_depth, unique_keys=True, delimiters=delimiters)
                        if accelerators.ENABLED else None)
                if call is None:
                    call = parse_call(raw, max_depth=max_depth, duplicates=duplicates, fast=False)
        except GemmaSyntaxError as err:
            if policy.strict or err.code == "too-deep":
                return [BlockError(raw, str(err).split("\n", 1)[0], err.code, end=len(raw))]
            syntax = Diagnostic("error", "syntax", err.message, err.line, err.column, err.pos)
        else:
            warnings = []
            if has_escape_outside_strings(raw, delimiters):  # valid, but FunctionGemma's delimiter: say so
                _, _, read = decode_calls(raw, max_depth=max_depth)[0]
                warnings = [d for d in read.diagnostics if d.code == "functiongemma-escape"]
            if duplicates:  # valid, and the last value wins (SPEC); the call says so, as validate() does
                lines = LineIndex(raw)
                warnings = sorted(warnings + [
                    Diagnostic("warning", "duplicate-key", message("duplicate-key", key),
                               *lines.line_and_column(pos), pos) for key, pos in duplicates],
                    key=lambda d: d.pos)
            decided = BlockCall(call.name, call.arguments, raw, warnings, False, 0, len(raw))
            return [decided if policy.plain and not mask else policy.admit(_unmasked(decided, mask))]
    segments = decode_calls(raw, max_depth=max_depth, lossless=lossless, hints=policy.tools.hints if lossless else None,
                            declared=policy.tools)
    if bare and segments[0][2].call is None:
        return None  # the bare guess was prose after all
    if policy.strict:
        # not closed (a closed block the grammar rejects returned above): one error for the whole
        # block, never a call per part (several calls in one block are not in the grammar)
        call = segments[0][2].call if len(segments) == 1 else None
        return [BlockError(raw, f"the block is not closed by {tokens.TOOL_CALL_CLOSE}", "unclosed",
                           call.name if call else None, plain(call.arguments) if call else None,
                           segments[0][2].diagnostics if len(segments) == 1 else [], end=len(raw))]
    out: list[BlockCall | BlockError] = []
    for number, (begin, finish, decoded) in enumerate(segments):
        part = raw if len(segments) == 1 else raw[begin:finish]
        diagnostics = ([syntax] if syntax and number == 0 else []) + decoded.diagnostics
        problem = None
        if decoded.call is None:
            errors = [d.message for d in decoded.diagnostics if d.severity == "error"]
            problem = syntax.message if syntax else (errors[0] if errors else f"no `{tokens.CALL_KEYWORD}NAME` head")
            code = failure_code(decoded.diagnostics)
        elif not closed and (at_end and not bare or not decoded.complete):
            # every call of the block, not only its last: they share its fate
            code = "unclosed"
            if at_end and not bare:
                problem = (f"the block is not closed by {tokens.TOOL_CALL_CLOSE} when the stream ends: it may"
                           " be cut off")
            else:
                problem = f"the block is not closed by {tokens.TOOL_CALL_CLOSE}, and its arguments are cut off"
        elif decoded.lossy and not policy.lossy_recovery:
            # the reading left some of the model's text out of the arguments: not a call to run
            # as if it said all the model wrote (docs/leniency.md#lossy-recoveries)
            dropped = next((d for d in decoded.diagnostics if d.code in ("missing-value", "text-after-object")), None)
            problem = ("the lenient reading leaves text the model wrote out of the arguments"
                       + (f" ({dropped.message})" if dropped else "") + "; lossy_recovery=True accepts it")
            code = "lossy"
        call = decoded.call
        if problem is None:
            token = _control_token_in(call.arguments)
            if token is not None:  # the reading took markup for text: not what the model meant
                problem = (f"the lenient reading would put the control token {token} inside an argument"
                           " (docs/leniency.md#unclosed-strings)")
                code = "syntax"
        if problem is None:
            out.append(policy.admit(_unmasked(BlockCall(call.name, call.arguments, part, diagnostics, True,
                                                        begin, finish), mask)))
        else:
            out.append(BlockError(part, problem, code, call.name if call else None,
                                  plain(call.arguments) if call else None, diagnostics, begin, finish))
    return out


def _control_token_in(arguments: Any) -> str | None:
    """The first control token in a string or key of decoded `arguments`, else None. (In token-id
    mode the spelled ones are masked here: text, not tokens.) An explicit stack: any depth."""
    stack = [arguments]
    while stack:
        value = stack.pop()
        if type(value) is Scalar:  # (lossless arguments: read, never changed here)
            value = value.value
        if isinstance(value, str):
            found = _CONTROL.search(value) if "<" in value else None
            if found is not None:
                return found.group()
        elif isinstance(value, dict):
            stack.extend(value.keys())
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
    return None


def has_escape_outside_strings(raw: str, delimiters: list[int] | None) -> bool:
    """Whether FunctionGemma's `<escape>` is in the valid block `raw` outside its strings (in a
    bare word, where the decoders report it), given where its delimiters are; when that is not
    known (None), whether it is anywhere in the block."""
    escape = FUNCTIONGEMMA_ESCAPE
    if delimiters is None:
        return escape in raw if len(raw) < marker_search.SHORT else marker_search.find(raw, escape) != -1
    begin = 0
    for k in range(0, len(delimiters) - 1, 2):  # (a valid block closes every string it opens)
        if raw.find(escape, begin, delimiters[k]) != -1:
            return True
        begin = delimiters[k + 1] + len(tokens.STRING_DELIMITER)
    return raw.find(escape, begin) != -1


def _unmasked(call: BlockCall, mask: str) -> BlockCall:
    """`call` with its arguments as written (the schema checks them so), when a mask stood in."""
    if not mask:
        return call
    return BlockCall(call.name, respelled(call.arguments, mask), call.raw, call.diagnostics, call.recovered,
                     call.begin, call.end)


def _respell(outcome: BlockCall | BlockError, mask: str) -> BlockCall | BlockError:
    """An outcome with every `mask` back to `<`: its raw text, name, message, partial arguments
    and diagnostics (a call's arguments were respelled before its checks)."""
    changes: dict[str, Any] = {}
    for name in ("raw", "name", "message"):
        value = getattr(outcome, name, None)
        if isinstance(value, str) and mask in value:
            changes[name] = value.replace(mask, "<")
    if isinstance(outcome, BlockError) and outcome.partial is not None:
        changes["partial"] = respelled(outcome.partial, mask)
    if outcome.diagnostics:
        changes["diagnostics"] = [dataclasses.replace(d, message=d.message.replace(mask, "<")) if mask in d.message
                                  else d for d in outcome.diagnostics]
    return dataclasses.replace(outcome, **changes) if changes else outcome
