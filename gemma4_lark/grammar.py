"""The grammar file and the two LALR parsers built from it.

`grammar/gemma4.lark` at the top of the repository is the only copy of the grammar. The package
reaches it as the resource `gemma4_lark/gemma4.lark`: a symbolic link in a checkout, the file itself
in a wheel (the build copies what the link points to), so both read it the same way.

Two parsers come from the one file (see the grammar's header): the block parser, whose lexer knows
only what can stand inside a block, and the document parser for thoughts, model outputs and
transcripts.

Building a parser's LALR tables takes tens of milliseconds, so the package also carries them,
generated from the grammar, as plain JSON data (`tables.json`, written by `make tables`), once for
each Lark version the project is tested with (Lark's serialized form changes between releases;
vLLM pins 1.2.2). They are used only when they were generated from this very grammar text by the
Lark version installed; otherwise the parser is built from the grammar. Nothing is ever unpickled: see docs/security.md,
"Loading the parser tables".

The terminals' patterns, which the fast path, the renderers and the stream scanner compile at
import, come from a second file made the same way (`terminals.json`): reading them needs neither
Lark nor the tables, so that `import gemma4_incremental` loads Lark only when a block first needs
the LALR parser (the fast path takes the common ones without it).
"""

from __future__ import annotations

import functools
import hashlib
import json
import sys
from importlib import resources
from pathlib import Path

import re

from ._compat import load_lark_from_dict
from .tokens import STRING_DELIMITER

GRAMMAR_PACKAGE = "gemma4_lark"
GRAMMAR_FILE = "gemma4.lark"
TABLES_FILE = "tables.json"
TERMINALS_FILE = "terminals.json"

BLOCK_STARTS = ("call_block", "response_block", "declaration_block", "response_blocks", "declaration_blocks",
                "value_document")
DOCUMENT_STARTS = ("thought", "model_output", "transcript")
# The parsers whose tables the package carries.
STORED_STARTS = {"block": BLOCK_STARTS, "document": DOCUMENT_STARTS}

_OPTIONS = dict(parser="lalr", lexer="contextual", maybe_placeholders=False, propagate_positions=False)


@functools.lru_cache(maxsize=1)
def grammar_text() -> str:
    """The grammar's source text."""
    return resources.files(GRAMMAR_PACKAGE).joinpath(GRAMMAR_FILE).read_text(encoding="utf-8")


def build(starts, *, strict: bool = False, cache: bool = True) -> lark.Lark:
    """A Lark LALR parser with the contextual lexer for the given start rules.

    `strict=True` makes Lark refuse any conflict or regex collision (the test suite builds both
    parsers that way). With `cache=True` (and not strict), the block and document parsers come
    from the tables the package carries when those are current (see `stored_tables`); any other
    parser, or `cache=False`, is built from the grammar, and only then keeps the analysed grammar
    (`parser.grammar`) that hypothesis's `from_lark` reads.

    Raises `lark.exceptions.GrammarError` (or another `LarkError`) only if the grammar itself is
    broken, which the test suite rules out for the grammar it ships.
    """
    import lark

    starts = tuple(starts)
    if cache and not strict:
        tables = stored_tables()
        if tables is not None:
            for kind, stored in STORED_STARTS.items():
                if stored == starts:
                    return load_lark_from_dict(tables[kind]["data"], tables[kind]["memo"])
    return lark.Lark(grammar_text(), start=list(starts), strict=strict, **_OPTIONS)


def grammar_sha256() -> str:
    """The SHA-256 of the grammar's text, which the stored tables record."""
    return hashlib.sha256(grammar_text().encode("utf-8")).hexdigest()


@functools.lru_cache(maxsize=1)
def stored_tables() -> dict | None:
    """The parser tables the package carries for the installed Lark version, decoded, or None when
    there are none for it or they were not generated from this grammar (then parsers are built)."""
    import lark

    stored = _stored_file()
    if stored is None or stored["grammar_sha256"] != grammar_sha256():
        return None
    return stored["lark"].get(lark.__version__)


def _stored_file() -> dict | None:
    try:
        text = resources.files(GRAMMAR_PACKAGE).joinpath(TABLES_FILE).read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    return decode_tables(text)


def generate_tables() -> dict:
    """The tables of the block and document parsers, built from the grammar by the installed Lark,
    as plain data; the tables the file holds for other Lark versions are kept when they were made
    from this same grammar (each version's venv adds its own: `make tables`)."""
    import lark

    parsers = {}
    for kind, starts in STORED_STARTS.items():
        data, memo = build(starts, cache=False).memo_serialize([lark.lexer.TerminalDef, lark.grammar.Rule])
        parsers[kind] = {"data": data, "memo": memo}
    stored = _stored_file()
    others = {} if stored is None or stored["grammar_sha256"] != grammar_sha256() else stored["lark"]
    by_version = {v: t for v, t in others.items() if v != lark.__version__}
    by_version[lark.__version__] = parsers
    return {"grammar_sha256": grammar_sha256(), "lark": dict(sorted(by_version.items()))}


# JSON has neither tuples nor integer keys, and Lark's serialized tables use both. Two tagged
# objects carry them exactly; `decode_tables(encode_tables(x)) == x` (a test checks it).
_TUPLE = "~tuple"
_INT_KEYS = "~int_keys"


def _to_json(value):
    if isinstance(value, tuple):
        return {_TUPLE: [_to_json(v) for v in value]}
    if isinstance(value, list):
        return [_to_json(v) for v in value]
    if isinstance(value, dict):
        if value and all(type(k) is int for k in value):
            return {_INT_KEYS: [[k, _to_json(v)] for k, v in value.items()]}
        if not all(type(k) is str and not k.startswith("~") for k in value):
            raise TypeError(f"cannot store a dict with keys {list(value)[:5]!r}")
        return {k: _to_json(v) for k, v in value.items()}
    if value is None or type(value) in (str, int, float, bool):
        return value
    if isinstance(value, str):  # lark 1.2 names rules with Tokens (a str subclass): their text
        return str(value)
    raise TypeError(f"cannot store {type(value).__name__} in the tables")


def _from_json(obj: dict):
    if _TUPLE in obj:
        return tuple(obj[_TUPLE])
    if _INT_KEYS in obj:
        return dict(obj[_INT_KEYS])
    return obj


def encode_tables(tables: dict) -> str:
    """`tables` as JSON text (one line per Lark version and parser, so that a regenerated file
    diffs by parser)."""
    lines = ["{" + json.dumps({"grammar_sha256": tables["grammar_sha256"]})[1:-1] + ', "lark": {']
    versions = list(tables["lark"].items())
    for i, (version, parsers) in enumerate(versions):
        lines.append(json.dumps(version) + ": {")
        items = list(parsers.items())
        for j, (kind, parser) in enumerate(items):
            comma = "," if j < len(items) - 1 else ""
            lines.append(json.dumps(kind) + ": " + json.dumps(_to_json(parser), separators=(",", ":")) + comma)
        lines.append("}" + ("," if i < len(versions) - 1 else ""))
    lines.append("}}")
    return "\n".join(lines) + "\n"


def decode_tables(text: str) -> dict:
    """The inverse of `encode_tables`. Plain JSON: decoding runs no code."""
    return json.loads(text, object_hook=_from_json)


def tables_path() -> Path:
    """Where `make tables` writes the tables: beside this module, in the source tree."""
    return Path(__file__).resolve().parent / TABLES_FILE


def terminals_path() -> Path:
    """Where `make tables` writes the terminals: beside this module, in the source tree."""
    return Path(__file__).resolve().parent / TERMINALS_FILE


def generate_terminals() -> dict:
    """Every terminal's pattern as plain data (name, "str" or "re", its text, its flags), as the
    installed Lark compiles the grammar: what `terminals.json` holds."""
    return {"grammar_sha256": grammar_sha256(),
            "terminals": sorted([t.name, t.pattern.type, t.pattern.value, sorted(t.pattern.flags)] for t in terminals())}


def encode_terminals(stored: dict) -> str:
    lines = ",\n".join(json.dumps(t, ensure_ascii=False) for t in stored["terminals"])
    return f'{{"grammar_sha256": {json.dumps(stored["grammar_sha256"])}, "terminals": [\n{lines}\n]}}\n'


@functools.lru_cache(maxsize=1)
def terminal_specs() -> dict[str, tuple[str, str, tuple[str, ...]]]:
    """name -> (kind, text, flags) for every terminal: from `terminals.json` when it was made
    from this grammar (no Lark needed), otherwise from the parsers Lark builds."""
    try:
        stored = json.loads(_stored_terminals_text())
    except (FileNotFoundError, ValueError):
        stored = None
    if stored is None or stored.get("grammar_sha256") != grammar_sha256():
        stored = generate_terminals()
    return {name: (kind, value, tuple(flags)) for name, kind, value, flags in stored["terminals"]}


def _stored_terminals_text() -> str:
    return resources.files(GRAMMAR_PACKAGE).joinpath(TERMINALS_FILE).read_text(encoding="utf-8")


def _to_regexp(kind: str, value: str, flags: tuple[str, ...]) -> str:
    """A terminal's pattern as one regular expression, as Lark writes it (`Pattern.to_regexp`:
    a string escaped, then each flag a scoped group around it)."""
    out = re.escape(value) if kind == "str" else value
    for flag in flags:
        out = f"(?{flag}:{out})"
    return out


@functools.lru_cache(maxsize=1)
def terminals() -> tuple:
    """Every terminal of the grammar (Lark's TerminalDef objects; this loads Lark and its
    parsers: `terminal_specs` does neither)."""
    found = {}
    for starts in STORED_STARTS.values():
        for term in build(starts).terminals:
            found.setdefault(term.name, term)
    return tuple(found.values())


@functools.lru_cache(maxsize=1)
def literal_terminals() -> dict[str, str]:
    """Every terminal that is a fixed string, as literal -> terminal name (for error messages)."""
    return {value: name for name, (kind, value, _) in terminal_specs().items() if kind == "str"}


@functools.lru_cache(maxsize=None)
def terminal_literal(name: str) -> str | None:
    """The fixed string of a terminal, or None when the terminal is a pattern."""
    for literal, term in literal_terminals().items():
        if term == name:
            return literal
    return None


@functools.lru_cache(maxsize=None)
def first_terminals(rule: str) -> frozenset[str]:
    """The terminals a rule of the block grammar can begin with (its FIRST set), read from the
    grammar's rules: `first_terminals("value")` is what a value may start with. Builds (or loads)
    the block parser. Raises KeyError for a rule the grammar does not have."""
    rules = build(BLOCK_STARTS).rules
    first: dict[str, set[str]] = {r.origin.name: set() for r in rules}
    nullable: set[str] = set()
    changed = True
    while changed:  # to a fixed point: a rule's FIRST set takes its leading rules' sets
        changed = False
        for r in rules:
            found = first[r.origin.name]
            size = len(found)
            for symbol in r.expansion:
                if symbol.is_term:
                    found.add(symbol.name)
                    break
                found |= first[symbol.name]
                if symbol.name not in nullable:
                    break
            else:
                if r.origin.name not in nullable:
                    nullable.add(r.origin.name)
                    changed = True
            changed |= len(found) != size
    return frozenset(first[rule])


@functools.lru_cache(maxsize=None)
def whitespace() -> str:
    """The characters of the grammar's `WS` terminal (space, tab, CR, LF): what may stand between
    tokens. The one home of that fact: every module that skips or strips blanks reads it here."""
    pattern = terminal_pattern("WS")
    return "".join(c for c in map(chr, range(128)) if pattern.fullmatch(c))


def terminal_pattern(name: str):
    """The compiled regular expression of a terminal, as the grammar defines it.

    Raises `KeyError` when the grammar has no terminal of that name.
    """
    return re.compile(_to_regexp(*terminal_specs()[name]))


def _balanced(pattern: str, start: int) -> int:
    """The index of the `)` that closes the group whose body starts at `start` (escapes and
    character classes skipped)."""
    depth, i, in_class = 1, start, False
    while True:
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return i
        i += 1


@functools.lru_cache(maxsize=1)
def control_pattern() -> re.Pattern:
    """A control token of the grammar, or the string delimiter, at the start of a match.

    What follows `<` in a control token, as the TEXT terminal's lookahead says: TEXT stops before
    `<(?:BODY)`, written as a lookahead after its first `<` check (`(?!<(?:BODY))`). So `<|im_start|>`
    or `<image|>` is one like `<turn|>`, and a change to the grammar changes every reader of it (the
    renderers' guard, the block decision, the markers spelled in text)."""
    text = terminal_pattern("TEXT").pattern
    head = "(?!<(?:"
    if head not in text:
        raise AssertionError("the TEXT terminal no longer has the expected shape; update grammar.control_pattern")
    start = text.index(head) + len(head)
    body = text[start:_balanced(text, start)]
    # TEXT stops at the same tokens it cannot start with: the body stands again in its other lookahead
    if text.count("<(?:" + body + ")") < 2:
        raise AssertionError("the TEXT terminal no longer has the expected shape; update grammar.control_pattern")
    return re.compile("<(?:" + body + ")|" + re.escape(STRING_DELIMITER))


def canonical_tables(parser: lark.Lark) -> dict:
    """What a parser's tables mean, independent of how one build happened to number them.

    Lark numbers LALR states and tokens in an order that varies from process to process (it
    follows string hashing), so two builds of one grammar differ as data. Numbering the states
    breadth-first from the start states, transitions in symbol order, makes them comparable: two
    parsers accept the same language the same way exactly when these are equal.
    """
    from lark.parsers.lalr_analysis import Shift

    table = parser.parser.parser.parser.parse_table

    def rule_key(rule):
        o = rule.options
        return (rule.origin.name, tuple(s.name for s in rule.expansion), rule.alias, rule.order,
                o.keep_all_tokens, o.expand1, o.priority, o.template_source, tuple(o.empty_indices))

    number = {}
    queue = []
    for start in sorted(table.start_states):
        state = table.start_states[start]
        if state not in number:
            number[state] = len(number)
            queue.append(state)
    rows = []
    for state in queue:  # grows while it is walked: a breadth-first walk
        row = []
        for symbol in sorted(table.states[state]):
            kind, arg = table.states[state][symbol]
            if kind is Shift:
                if arg not in number:
                    number[arg] = len(number)
                    queue.append(arg)
                row.append((symbol, "shift", number[arg]))
            else:
                row.append((symbol, "reduce", rule_key(arg)))
        rows.append(tuple(row))
    return {
        "states": tuple(rows),
        "start_states": {s: number[i] for s, i in table.start_states.items()},
        "end_states": {s: number[i] for s, i in table.end_states.items()},
        "terminals": sorted((t.name, t.pattern.type, t.pattern.value, tuple(sorted(t.pattern.flags)), t.priority)
                            for t in parser.terminals),
        "ignore": sorted(parser.lexer_conf.ignore),
    }


def stale_tables() -> list[str]:
    """The stored parsers that are missing or differ from what the grammar builds (empty: current)."""
    import lark

    tables = stored_tables()
    if tables is None:
        return sorted(STORED_STARTS)
    return [kind for kind, starts in STORED_STARTS.items()
            if canonical_tables(load_lark_from_dict(tables[kind]["data"], tables[kind]["memo"]))
            != canonical_tables(build(starts, cache=False))]


def main(argv: list[str] | None = None) -> int:
    """`python -c 'from gemma4_lark import grammar; grammar.main()' [--check]`: regenerate the
    stored tables beside this module when they are stale (`make tables`), or only check that they
    are current (exit 1 if not)."""
    args = sys.argv[1:] if argv is None else argv
    if args not in ([], ["--check"]):
        print("usage: grammar.main([--check])", file=sys.stderr)
        return 2
    if args == ["--check"]:
        stale = stale_tables()
        if stale:
            print(f"{tables_path()} is stale ({', '.join(stale)}): run `make tables`", file=sys.stderr)
            return 1
        if stale_terminals():
            print(f"{terminals_path()} is stale: run `make tables`", file=sys.stderr)
            return 1
        return 0
    # Lark's numbering varies from build to build: rewrite the file only when its meaning changed.
    if stale_tables():
        tables_path().write_text(encode_tables(generate_tables()), encoding="utf-8")
        stored_tables.cache_clear()
    if stale_terminals():
        terminals_path().write_text(encode_terminals(generate_terminals()), encoding="utf-8")
        terminal_specs.cache_clear()
    return 0


def stale_terminals() -> bool:
    """Whether `terminals.json` is missing or differs from what the installed Lark compiles."""
    try:
        return json.loads(terminals_path().read_text(encoding="utf-8")) != generate_terminals()
    except (FileNotFoundError, ValueError):
        return True
