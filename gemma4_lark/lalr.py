"""A lean driver for the LALR tables Lark builds from the grammar.

Lark's own loop is general (line counting, eight-field tokens, parse-tree wrappers, interactive
parsing); a 130-character block costs about 100 µs in it here. This driver runs the very same
tables and contextual-lexer patterns with only what a parse needs: a position, the state stack and
the value stack. It knows nothing of the grammar itself: what a rule or a terminal turns into is
asked of a builder object, by name, exactly as a Lark inline transformer would be:

* a rule calls the builder's method named after the rule's alias or name, with the rule's children
  (terminals whose names start with `_` left out, rules whose names start with `_` spliced in, and a
  `?rule` with one child replaced by that child), the conventions of Lark's parse-tree builder;
* a terminal calls the builder's method of the terminal's name, if it has one, with its text and
  position; other terminals stand for themselves as plain strings;
* a rule's method with the attribute `children_list` set receives the children as one list, its
  own to keep or change, rather than as arguments: a list of n items then costs no copy.

It only ever accepts: on input it cannot take, it hands the input to Lark's own parser, whose
exception (position, expected terminals, parser state) is what error messages are made from.

`parse_with_lark` is the plain path the driver restates: Lark's own LALR parser (its lexer, its
loop, its parse-tree builder's rules for `_rule`, `?rule` and filtered terminals) calling the same
builder as an inline transformer. It runs instead of the driver when the accelerators are off
(`gemma4_lark.accelerators`), and tests/differential/test_lean_driver.py checks that both build the same
values, and fail at the same place, on input generated from the grammar.
"""

from __future__ import annotations

import lark
from lark.lexer import LexerState, LexerThread, LineCounter, PatternRE
from lark.parsers.lalr_analysis import Shift

from ._compat import lalr_parser_loop, parse_tree_callbacks, scanner_regex_count
from .possessive import lexer_pattern
from .error_base import Gemma4Error

try:
    from lark.utils import TextSlice  # lark >= 1.3: the lexer reads a TextSlice
except ImportError:  # lark 1.2 (vLLM pins 1.2.2) lexes a str from the line counter's position
    TextSlice = None


def _discard(_children):
    return None


def _keyword_type(scanner):
    """The function that tells which keyword terminal (if any) a whole token's text is.

    Lark turns a match of a pattern terminal (BARE_WORD, KEY, NAME) into a keyword (TRUE, NULL...)
    with a scanner of the keywords. Lark 1.3 gives that scanner `fullmatch`; lark 1.2 has only
    `match` with a `$` appended, which also matches before a final newline. The keywords' own
    patterns, compiled here once as one full-match alternation, give 1.3's answer on both.
    """
    fullmatch = getattr(scanner, "fullmatch", None)
    if fullmatch is not None:
        return fullmatch
    pattern = "|".join(f"(?P<{t.name}>{t.pattern.to_regexp()})" for t in scanner.terminals)
    whole = scanner.re_.compile(pattern, scanner.g_regex_flags).fullmatch

    def keyword_type(text):
        m = whole(text)
        return None if m is None else m.lastgroup

    return keyword_type


class _InlineBuilder:
    """`builder` as Lark's parse-tree builder calls a transformer: a rule's method with the rule's
    children as one list (the driver's conventions, above, are Lark's own)."""

    def __init__(self, builder):
        self._builder = builder

    def __getattr__(self, name: str):
        if name.startswith("_"):  # an inlined `_rule` (or `__default__`): Lark's tree, spliced by its parent
            raise AttributeError(name)
        method = getattr(self._builder, name)  # (none: Lark's tree, as for a rule the driver expands)
        if getattr(method, "children_list", False):
            return method
        return lambda children: method(*children)


def _lark_callbacks(parser: lark.Lark, builder) -> dict:
    """The callbacks with which Lark's own parser loop builds `builder`'s values: per rule, the
    builder's method wrapped by Lark's parse-tree builder; per terminal, the builder's method with
    the token's text and position, or the text as a plain str (what the driver shifts).

    The text is the token's `value`: the str the lexer matched, as the driver has it (`str(token)`
    would copy it, even a 1-character one that Python otherwise shares: 50 bytes an item more)."""
    callbacks = parse_tree_callbacks(parser, _InlineBuilder(builder))
    for terminal in parser.terminals:
        method = getattr(builder, terminal.name, None) if terminal.name.isupper() else None
        if method is None:
            callbacks[terminal.name] = _text
        else:
            callbacks[terminal.name] = lambda token, method=method: method(token.value, token.start_pos)
    return callbacks


def _text(token) -> str:
    return token.value


class _Rejected(Gemma4Error):
    """The driver cannot take the input; Lark will say why."""


def _reducer(rule, builder):
    """The function that turns a rule's children (a list) into its value."""
    kept = [
        (i, not sym.is_term and sym.name.startswith("_"))
        for i, sym in enumerate(rule.expansion)
        if not (sym.is_term and sym.filter_out)
    ]
    name = rule.alias or rule.origin.name
    spliced = name.startswith("_")
    if spliced:
        build = list  # the children of an inlined `_rule`: its parent splices them in
    else:
        method = getattr(builder, name, None)
        expand1 = rule.options.expand1 and not rule.alias
        if method is None and not (expand1 and len(kept) == 1):
            raise TypeError(f"{type(builder).__name__} has no method for rule {name!r}")
        if method is None:
            def build(children):
                return children[0]
        elif getattr(method, "children_list", False):
            build = method
        elif expand1:
            def build(children, method=method):
                return children[0] if len(children) == 1 else method(*children)
        else:
            def build(children, method=method):
                return method(*children)
    if len(kept) == len(rule.expansion) and not any(splice for _, splice in kept):
        return build
    first_splice = next((k for k, (_, splice) in enumerate(kept) if splice), None)
    if first_splice == 0 or (first_splice is not None and not spliced):
        # Lark writes a repetition `x*` as the left-recursive `_star: x | _star x`. Copying the
        # list so far at every step would make n items cost O(n^2) time, and copying it into the
        # parent once more costs memory: the spliced child's list is this parse's own (nothing
        # else holds it), so it grows in place. (A named rule is reduced once per instance, so
        # the few children before the splice are inserted in front at O(n) once.)
        head = [i for i, _ in kept[:first_splice]]
        splice_at, rest = kept[first_splice][0], kept[first_splice + 1:]

        def reduce_in_place(children):
            values = children[splice_at]
            if head:
                values[0:0] = [children[i] for i in head]
            for i, splice in rest:
                if splice:
                    values.extend(children[i])
                else:
                    values.append(children[i])
            return values if spliced else build(values)

        return reduce_in_place

    def reduce(children):
        values = []
        for i, splice in kept:
            if splice:
                values.extend(children[i])
            else:
                values.append(children[i])
        return build(values)

    return reduce


def _compile_state(scanner, compiled: dict):
    """A lexer state's alternation of terminals, as Lark's scanner has it (the same terminals in
    the same order, so the same one wins), each pattern in its lexer form (`possessive`): the
    same matches, faster where the grammar's pattern is a lazy run up to a literal."""
    parts = []
    for term in scanner.terminals:
        pattern = term.pattern
        regexp = pattern.to_regexp()
        if isinstance(pattern, PatternRE):
            regexp = PatternRE(lexer_pattern(pattern.value, pattern.flags), pattern.flags).to_regexp()
        parts.append(f"(?P<{term.name}>{regexp})")
    alternation = "|".join(parts)
    if alternation not in compiled:
        compiled[alternation] = scanner.re_.compile(alternation, scanner.g_regex_flags)
    return compiled[alternation]


class LeanLALR:
    """Parse with the tables of `parser` (a `lark.Lark` built with lexer="contextual"), building
    values with `builder`."""

    def __init__(self, parser: lark.Lark, builder):
        self.lark = parser
        self.builder = builder
        frontend = parser.parser
        table = frontend.parser.parser.parse_table
        self.start_states = table.start_states
        self.end_states = table.end_states
        # The action table with everything a step needs resolved in advance:
        # shift -> (None, next state, the terminal's builder method or None);
        # reduce -> (number of children, the rule's reducer, the rule's name).
        reducers = {}
        # States are numbered 0..n-1; lists index faster than dicts.
        actions = [None] * len(table.states)
        for state, row in table.states.items():
            actions[state] = entries = {}
            for symbol, (kind, arg) in row.items():
                if kind is Shift:
                    entries[symbol] = (None, arg, getattr(builder, symbol, None) if symbol.isupper() else None)
                else:
                    if arg not in reducers:
                        reducers[arg] = _reducer(arg, builder)
                    entries[symbol] = (len(arg.expansion), reducers[arg], arg.origin.name)
        self.actions = actions
        lark_parser = frontend.parser.parser
        self._checker = lalr_parser_loop(lark_parser.parse_table, dict.fromkeys(lark_parser.callbacks, _discard))
        self._lark_builder = None  # Lark's parser with the builder's callbacks: built when first asked for
        # Per parser state: the compiled alternation of the terminals the lexer accepts there,
        # the types it ignores, and the keywords that a pattern match may turn out to be.
        self.lexers = [None] * len(table.states)
        compiled: dict = {}  # alternation -> compiled regex, shared by the states that have the same one
        for state, basic in frontend.lexer.lexers.items():
            scanner = basic.scanner  # built on first access
            if scanner_regex_count(scanner) != 1:  # pragma: no cover - the grammar's patterns fit one regex
                raise RuntimeError("a lexer state needs more than one regex; use Lark's parser")
            keywords = {type_: _keyword_type(retype.scanner) for type_, retype in basic.callback.items()}
            self.lexers[state] = (_compile_state(scanner, compiled).match, basic.ignore_types, keywords)

    def parse(self, text: str, start: str, pos: int = 0):
        """The value of `text[pos:]` as the start rule `start`, without copying the text.

        Positions given to the builder and in Lark's exceptions are offsets into `text`.
        """
        try:
            return self._run(text, start, pos)
        except _Rejected:
            # Lark's parser, run only to find where and why the input fails, so it builds
            # nothing (a tree of a 4 MB block costs hundreds of bytes a character)
            self._lark_parse(self._checker, text, start, pos)  # raises the precise UnexpectedInput
            raise AssertionError(f"Lark accepts what the lean driver rejected: {text[pos:pos + 200]!r}") from None

    def parse_with_lark(self, text: str, start: str, pos: int = 0):
        """`parse`, by Lark's own LALR parser: the same value, or the same exception (Lark's
        `UnexpectedInput`, or what the builder raises), at the same positions; slower. The plain
        path, which the driver is tested against."""
        if self._lark_builder is None:
            self._lark_builder = lalr_parser_loop(self._checker.parse_table, _lark_callbacks(self.lark, self.builder))
        return self._lark_parse(self._lark_builder, text, start, pos)

    def _lark_parse(self, loop, text: str, start: str, pos: int):  # loop: _compat.lalr_parser_loop's
        # Lark's parser loop reading the text in place from `pos`: handed no lexer state, Lark
        # would count the lines before `pos` (or we would copy the rest of the text) on every call.
        line_counter = LineCounter("\n")
        line_counter.char_pos = pos
        view = text if TextSlice is None else TextSlice(text, pos, len(text))
        thread = LexerThread(self.lark.parser.lexer, LexerState(view, line_counter))
        return loop.parse(thread, start)

    def _run(self, text: str, start: str, pos: int):
        actions = self.actions
        lexers = self.lexers
        end_state = self.end_states[start]
        state = self.start_states[start]
        state_stack = [state]
        value_stack = []
        length = len(text)
        while True:
            if pos < length:
                match, ignore, keywords = lexers[state]
                m = match(text, pos)
                if m is None:
                    raise _Rejected
                type_ = m.lastgroup
                end = m.end()
                if type_ in ignore:
                    pos = end
                    continue
                value = m.group()
                if type_ in keywords:
                    type_ = keywords[type_](value) or type_
                token_pos = pos
                pos = end
            else:
                type_ = "$END"
                value = ""
                token_pos = pos
            while True:
                action = actions[state].get(type_)
                if action is None:
                    raise _Rejected
                size, arg, callback = action
                if size is None:  # shift
                    state = arg
                    state_stack.append(state)
                    value_stack.append(value if callback is None else callback(value, token_pos))
                    break
                if size == 1:
                    children = [value_stack.pop()]
                    state_stack.pop()
                elif size:
                    children = value_stack[-size:]
                    del state_stack[-size:]
                    del value_stack[-size:]
                else:
                    children = []
                result = arg(children)
                state = actions[state_stack[-1]][callback][1]
                state_stack.append(state)
                value_stack.append(result)
                if type_ == "$END" and state == end_state:
                    return result
