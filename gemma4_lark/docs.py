"""The spec pages, generated from the grammar: `gemma4-lark docs [--out docs/spec] [--check]`.

The definitions come from Lark's own grammar loader (names, structure, and the line each starts
on); the prose, examples and counterexamples come from the `//` comment lines right above each
definition. Every example must parse with the rule as start rule and every counterexample must fail,
or generation fails. Output is deterministic (sorted, no timestamps), so `--check` can regenerate
into a temporary folder and compare.
"""

from __future__ import annotations

import filecmp
import io
import pathlib
import sys
import tempfile
from dataclasses import dataclass, field

from lark.load_grammar import GrammarBuilder

from . import grammar
from ._compat import grammar_definitions, sre_constants, sre_parse
from .error_base import Gemma4Error

BLOCK_TOPS = ("call_block", "response_block", "declaration_block")


@dataclass
class Entry:
    name: str
    is_terminal: bool
    line: int
    source: list = field(default_factory=list)      # the definition as written
    prose: list = field(default_factory=list)
    examples: list = field(default_factory=list)
    counterexamples: list = field(default_factory=list)
    tree: object = None

    @property
    def page(self) -> str:
        return f"{self.name}.md"


class DocsError(Gemma4Error):
    """An example that does not parse, a counterexample that does, or a missing example."""


def _unescape(text: str) -> str:
    return text.replace("\\n", "\n")


def load() -> list[Entry]:
    """Every rule and terminal of the grammar, in the order of the file."""
    text = grammar.grammar_text()
    lines = text.splitlines()
    builder = GrammarBuilder()
    builder.load_grammar(text, "gemma4.lark")
    entries = []
    for name, definition in grammar_definitions(builder).items():
        # Lark keeps a rule's defining token, with its line; for a terminal, find its line
        line = getattr(name, "line", None) or next(
            i + 1 for i, text_line in enumerate(lines) if text_line.split(":", 1)[0].split(".", 1)[0] == name)
        index = line - 1
        comments = []
        above = index - 1
        while above >= 0 and lines[above].startswith("//"):
            comments.insert(0, lines[above][2:].strip())
            above -= 1
        source = [lines[index]]
        below = index + 1
        while below < len(lines) and lines[below].strip() and not lines[below].startswith("//") \
                and lines[below][:1] in (" ", "\t", "|"):
            source.append(lines[below])
            below += 1
        entry = Entry(str(name), definition.is_term, line, source, tree=definition.tree)
        for comment in comments:
            if comment.startswith("example:"):
                entry.examples.append(_unescape(comment[len("example:"):].strip()))
            elif comment.startswith("counterexample:"):
                entry.counterexamples.append(_unescape(comment[len("counterexample:"):].strip()))
            else:
                entry.prose.append(comment)
        entries.append(entry)
    return entries


# --- checking examples ------------------------------------------------------------------------------
def _accepts(rule: str, text: str, cache: dict) -> bool:
    from .errors import GemmaSyntaxError
    from .parser import parse

    if rule in grammar.BLOCK_STARTS + grammar.DOCUMENT_STARTS:
        try:
            parse(text, rule)
        except GemmaSyntaxError:
            return False
        return True
    import lark

    if rule not in cache:
        cache[rule] = grammar.build([rule], cache=False)
    try:
        cache[rule].parse(text)
    except lark.exceptions.UnexpectedInput:
        return False
    return True


def check_examples(entries) -> None:
    cache: dict = {}
    problems = []
    for entry in entries:
        for example in entry.examples:
            if not _accepts(entry.name, example, cache):
                problems.append(f"{entry.name}: example does not parse: {example!r}")
        for counter in entry.counterexamples:
            if _accepts(entry.name, counter, cache):
                problems.append(f"{entry.name}: counterexample parses: {counter!r}")
        if entry.name in BLOCK_TOPS and not (entry.examples and entry.counterexamples):
            problems.append(f"{entry.name}: a block rule needs at least one example and one counterexample")
    if problems:
        raise DocsError("\n".join(problems))


# --- railroad diagrams ----------------------------------------------------------------------------
def _diagram(tree, names):
    # Only the spec pages need it: the `docs` extra, imported here rather than with the package. When
    # it is missing, the ModuleNotFoundError goes up; the command line says which extra brings it.
    import railroad

    literals = {name: literal.replace("\n", "\\n") for literal, name in grammar.literal_terminals().items()}

    def build(node):
        kind = getattr(node, "data", None)
        if kind == "expansions":
            items = [build(c) for c in node.children]
            return items[0] if len(items) == 1 else railroad.Choice(0, *items)
        if kind == "expansion":
            items = [build(c) for c in node.children]
            return railroad.Sequence(*items) if items else railroad.Skip()
        if kind == "alias":
            return build(node.children[0])
        if kind == "expr":
            inner, op = build(node.children[0]), str(node.children[1])
            if op == "?":
                return railroad.Optional(inner)
            if op == "*":
                return railroad.ZeroOrMore(inner)
            if op == "+":
                return railroad.OneOrMore(inner)
            return inner
        if kind == "maybe":
            return railroad.Optional(build(node.children[0]))
        if kind == "value":
            symbol = node.children[0]
            name = getattr(symbol, "name", str(symbol))
            if name in names and not name.isupper():
                return railroad.NonTerminal(name, href=f"{name}.md")
            # a fixed-text terminal shows its text, a pattern terminal its name
            return railroad.Terminal(literals.get(name, name), href=f"{name}.md" if name in names else None)
        if kind == "literal":
            return railroad.Terminal(str(node.children[0]))
        raise ValueError(f"unexpected grammar node {node!r}")

    return railroad.Diagram(build(tree))


# Presentation attributes on every element, so the diagrams read the same in renderers that ignore
# the embedded stylesheet (image converters, some viewers); the stylesheet still applies in browsers.
_INLINE_STYLE = {
    "<path ": '<path fill="none" stroke="black" stroke-width="2" ',
    "<rect ": '<rect fill="#e6f4ea" stroke="black" stroke-width="2" ',
    "<text ": '<text font-family="monospace" font-size="14" font-weight="bold" text-anchor="middle" ',
}


# The package's default stylesheet uses hsl() colours, which some converters read as black.
_CSS = """
svg.railroad-diagram { background-color: #f7f4f1; }
svg.railroad-diagram path { stroke-width: 2; stroke: #000000; fill: none; }
svg.railroad-diagram text { font: bold 14px monospace; text-anchor: middle; fill: #000000; }
svg.railroad-diagram rect { stroke-width: 2; stroke: #000000; fill: #e6f4ea; }
svg.railroad-diagram g.non-terminal rect { fill: #e8eefc; }
"""


def _svg(diagram) -> str:
    out = io.StringIO()
    diagram.writeStandalone(out.write, css=_CSS)
    svg = out.getvalue()
    for plain, styled in _INLINE_STYLE.items():
        svg = svg.replace(plain, styled)
    return svg + "\n"


# --- patterns in words --------------------------------------------------------------------------
def _char(code: int) -> str:
    names = {9: "tab", 10: "newline", 13: "carriage return", 32: "space"}
    return names.get(code, f"`{chr(code)}`")


def _set_words(items) -> str:
    negate = False
    parts = []
    for op, av in items:
        if op is sre_constants.NEGATE:
            negate = True
        elif op is sre_constants.LITERAL:
            parts.append(_char(av))
        elif op is sre_constants.RANGE:
            parts.append(f"`{chr(av[0])}`–`{chr(av[1])}`")
        else:
            parts.append(str(op).lower())
    listed = ", ".join(parts)
    return f"any character except {listed}" if negate else f"one of {listed}"


def _words(parsed) -> str:
    out = []
    literal = []

    def flush():
        if literal:
            out.append("`" + "".join(literal).replace("\n", "\\n") + "`")
            literal.clear()

    for op, av in parsed:
        if op is sre_constants.LITERAL:
            literal.append(chr(av))
            continue
        flush()
        if op is sre_constants.IN:
            out.append(_set_words(av))
        elif op is sre_constants.NOT_LITERAL:
            out.append(f"any character except {_char(av)}")
        elif op is sre_constants.ANY:
            out.append("any character")
        elif op in (sre_constants.MAX_REPEAT, sre_constants.MIN_REPEAT, getattr(sre_constants, "POSSESSIVE_REPEAT", None)):
            low, high, sub = av
            inner = _words(sub)
            if (low, high) == (0, 1):
                out.append(f"optionally {inner}")
            elif high is sre_constants.MAXREPEAT:
                out.append(f"{'zero' if low == 0 else 'one' if low == 1 else low} or more of ({inner})")
            else:
                out.append(f"{low} to {high} of ({inner})")
        elif op is sre_constants.SUBPATTERN:
            out.append(_words(av[-1]))
        elif op is getattr(sre_constants, "ATOMIC_GROUP", None):
            out.append(_words(av))
        elif op is sre_constants.BRANCH:
            out.append("either " + " or ".join(f"({_words(b)})" for b in av[1]))
        elif op is sre_constants.ASSERT_NOT:
            out.append(f"(not {'followed' if av[0] > 0 else 'preceded'} by {_words(av[1])})")
        elif op is sre_constants.ASSERT:
            out.append(f"({'followed' if av[0] > 0 else 'preceded'} by {_words(av[1])})")
        else:
            out.append(str(op).lower())
    flush()
    return ", then ".join(out) if out else "nothing"


def pattern_in_words(entry: Entry) -> str:
    literal = entry.tree.children[0].children[0].children[0]
    token = literal.children[0]
    if token.type == "STRING":
        return f"exactly the text `{token[1:-1].encode().decode('unicode_escape')}`".replace("\n", "\\n")
    body = str(token)
    pattern = body[1:body.rindex("/")]
    return _words(sre_parse.parse(pattern))


# --- pages -----------------------------------------------------------------------------------------
def _code(lines) -> str:
    return "```\n" + "\n".join(lines) + "\n```\n"


def _page(entry: Entry, has_diagram: bool) -> str:
    kind = "Terminal" if entry.is_terminal else "Rule"
    parts = [f"# {kind} `{entry.name}`\n", " ".join(entry.prose) + "\n" if entry.prose else "",
             f"Defined at `grammar/gemma4.lark` line {entry.line}:\n", _code(entry.source)]
    if entry.is_terminal:
        parts.append(f"**Pattern, in words:** {pattern_in_words(entry)}.\n")
    if has_diagram:
        parts.append(f"![railroad diagram of {entry.name}](diagrams/{entry.name}.svg)\n")
    if entry.examples:
        parts.append("**Examples** (each parses with this rule as start rule):\n")
        parts += [_code([e.replace("\n", "\\n")]) for e in entry.examples]
    if entry.counterexamples:
        parts.append("**Counterexamples** (each is rejected):\n")
        parts += [_code([c.replace("\n", "\\n")]) for c in entry.counterexamples]
    parts.append("[All rules and terminals](index.md)\n")
    return "\n".join(p for p in parts if p)


def _index(entries) -> str:
    starts = grammar.BLOCK_STARTS + grammar.DOCUMENT_STARTS
    lines = ["# The Gemma 4 tool-calling grammar\n",
             "Generated from `grammar/gemma4.lark` by `gemma4-lark docs`; do not edit by hand.",
             "Each page shows a definition as written, its description, a railroad diagram (rules)",
             "or its pattern in words (terminals), and examples checked against the parser.\n",
             "## Start rules\n"]
    for name in starts:
        entry = next(e for e in entries if e.name == name)
        lines.append(f"- [`{name}`]({entry.page}): {' '.join(entry.prose)[:160]}")
    lines.append("\n## Rules\n")
    for entry in entries:
        if not entry.is_terminal and entry.name not in starts:
            lines.append(f"- [`{entry.name}`]({entry.page}): {' '.join(entry.prose)[:160]}")
    lines.append("\n## Terminals\n")
    for entry in entries:
        if entry.is_terminal:
            lines.append(f"- [`{entry.name}`]({entry.page}): {' '.join(entry.prose)[:160]}")
    return "\n".join(lines) + "\n"


def generate(out: str | pathlib.Path) -> list[pathlib.Path]:
    """Write the spec pages under `out`; the files written."""
    entries = load()
    check_examples(entries)
    out = pathlib.Path(out)
    (out / "diagrams").mkdir(parents=True, exist_ok=True)
    names = {e.name for e in entries}
    written = []
    for entry in entries:
        has_diagram = not entry.is_terminal
        if has_diagram:
            path = out / "diagrams" / f"{entry.name}.svg"
            path.write_text(_svg(_diagram(entry.tree, names)), encoding="utf-8")
            written.append(path)
        path = out / entry.page
        path.write_text(_page(entry, has_diagram), encoding="utf-8")
        written.append(path)
    path = out / "index.md"
    path.write_text(_index(entries), encoding="utf-8")
    written.append(path)
    return written


def stale(out: str | pathlib.Path) -> list[str]:
    """The files under `out` that differ from a fresh generation (missing, changed or extra)."""
    out = pathlib.Path(out)
    with tempfile.TemporaryDirectory() as tmp:
        fresh = pathlib.Path(tmp)
        generate(fresh)
        expected = {p.relative_to(fresh) for p in fresh.rglob("*") if p.is_file()}
        actual = {p.relative_to(out) for p in out.rglob("*") if p.is_file()} if out.exists() else set()
        problems = sorted(str(p) for p in expected ^ actual)
        for rel in sorted(expected & actual):
            if not filecmp.cmp(fresh / rel, out / rel, shallow=False):
                problems.append(str(rel))
    return sorted(problems)


def main(out: str, check: bool) -> int:
    if check:
        problems = stale(out)
        for problem in problems:
            print(f"stale: {out}/{problem}", file=sys.stderr)
        if problems:
            print("regenerate with: gemma4-lark docs --out " + out, file=sys.stderr)
        return 1 if problems else 0
    try:
        written = generate(out)
    except DocsError as err:
        print(f"gemma4-lark docs: {err}", file=sys.stderr)
        return 1
    print(f"wrote {len(written)} files to {out}")
    return 0

