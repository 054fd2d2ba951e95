"""Emitting a tool's rules: an object's members in their fixed order (a chain of one rule per
member, or a balanced tree of them), "at least one of these", a bare key that is none of the
declared ones, an array's prefixes; and the grammar of the rules a start rule uses, without those
that derive no finite text."""

from __future__ import annotations

from typing import Mapping, Sequence

from ..tools import Tool
from . import ir
from ._errors import NoValue
from ._lexical import Pieces, class_inside, literal_texts, shared_pieces


class Emitting:
    """The reader's writing of rules. Mixed into `_read.ToolCompiler`, whose `rules`, `pieces`,
    `prefix`, `count`, `balanced` and `tool` it uses."""

    tool: Tool
    rules: dict[str, ir.Expr]
    pieces: Pieces
    prefix: str
    count: int
    balanced: bool

    def new_rule(self, kind: str) -> str:
        self.count += 1
        return f"{self.prefix}{kind}{self.count}"

    def as_rule(self, expr: ir.Expr) -> ir.Expr:
        """`expr` as a reference: a value after a key is a rule of its own, so that no piece of
        an object (`,key:value`) is regular text a printer could make one lexeme."""
        if isinstance(expr, ir.Ref):
            return expr
        name = self.new_rule("value")
        self.rules[name] = expr
        return ir.Ref(name)

    def _rule_for(self, label: str, expr: ir.Expr) -> ir.Expr:
        name = self.new_rule(label)
        self.rules[name] = expr
        return ir.Ref(name)

    def _prefixes(self, items: list) -> ir.Expr:
        """The non-empty prefixes of `items`, comma-separated, as a balanced tree of rules: a
        range's prefixes are its left half's, or its left half whole and then its right half's.
        log2(n) deep, where the nested optional tail `a (, b (, c)?)?` nested n deep in one
        expression: llguidance refused 30 levels, and the printers recursed past Python's limit at
        a few hundred."""
        comma = self.pieces.comma
        whole: dict = {(j, j + 1): item for j, item in enumerate(items)}
        prefix: dict = dict(whole)
        for lo, mid, hi in _tree_ranges(len(items)):
            whole[(lo, hi)] = self._rule_for("items", ir.seq(whole[(lo, mid)], comma, whole[(mid, hi)]))
            prefix[(lo, hi)] = self._rule_for("prefix", ir.choice(prefix[(lo, mid)], ir.seq(whole[(lo, mid)], comma,
                                                                                          prefix[(mid, hi)])))
        return prefix[(0, len(items))]

    def members(self, name: str, members: list, extra: ir.Expr | None) -> ir.Expr:
        """An object's members in their fixed order, each optional one present or skipped.
        `from_j`: the members from j on, the first of them being j or a later one (j may be
        skipped when optional), as text that starts with that member's key. Each is one of:
        member j alone (when nothing after it is required), or member j and a comma, optional
        when j is, then `from_{j+1}`. Extra members may follow any member, or come first.

        So each rule refers to the next one once (linear size), and no rule starts with a
        comma: a printer may make a rule without special tokens one lexeme, and a lexeme `,b:1`
        beside a lexeme `,` is a choice a greedy lexer (llguidance) makes too early."""
        p = self.pieces
        n = len(members)
        if self.balanced:
            tree = MemberTree(self.rules, p.comma, [is_required for _, is_required, _ in members])
            root = tree.build(f"{name}_part", self._written(members, extra)).get((0, n))
            return self._object_body(root, any(is_required for _, is_required, _ in members), extra)
        each_written = self._written(members, extra)
        later_required = [False] * (n + 1)
        for j in range(n - 1, -1, -1):
            later_required[j] = later_required[j + 1] or members[j][1]
        names = [f"{name}_from{j}" for j in range(n)]
        for j in range(n - 1, -1, -1):
            is_required, written = members[j][1], each_written[j]
            if j + 1 == n:
                self.rules[names[j]] = written
                continue
            then = ir.seq(written, p.comma)
            go_on = ir.seq(then if is_required else ir.Repeat(then, 0, 1), ir.Ref(names[j + 1]))
            if is_required and not later_required[j + 1]:
                go_on = ir.seq(written, ir.Repeat(ir.seq(p.comma, ir.Ref(names[j + 1])), 0, 1))
            self.rules[names[j]] = go_on if later_required[j + 1] or is_required else ir.choice(written, go_on)
        return self._object_body(ir.Ref(names[0]) if n else None, later_required[0], extra)

    def _object_body(self, members: ir.Expr | None, required: bool, extra: ir.Expr | None) -> ir.Expr:
        """Between the braces: the members (`members`: their rule, None when there are none), or
        extra members first and then them; empty when nothing is `required`."""
        options: list[ir.Expr] = [members] if members is not None else []
        if extra is not None:
            extras = self._extras(extra)
            after = ir.seq(self.pieces.comma, members) if members is not None else None
            options.append(ir.seq(extra, *extras, *([after if required else ir.Repeat(after, 0, 1)] if after else [])))
        if not options:
            return ir.Seq(())
        body = ir.choice(*options)
        return body if required else ir.Repeat(body, 0, 1)

    def at_least_one(self, name: str, members: list, extra: ir.Expr | None, keys: frozenset, where: str) -> ir.Expr:
        """The members (no extra ones) with at least one of `keys` present. `need_j`: the
        members from j on while none of `keys` is written yet, so one of them must come: beside
        the chain `members` made (`from_j`, taken once one of them is written), a second one of
        the same size: linear, where an option per key copying the object was quadratic.
        (`balanced`: the same over the tree `members` made, `MemberTree.build_need`.)"""
        if self.balanced:
            return self._at_least_one_balanced(name, members, extra, keys, where)
        p = self.pieces
        n = len(members)
        later_required = [False] * (n + 1)
        for j in range(n - 1, -1, -1):
            later_required[j] = later_required[j + 1] or members[j][1]
        last = max((j for j, m in enumerate(members) if m[0] in keys), default=-1)
        if last < 0:
            raise NoValue(f"tool {self.tool.name!r}: {where}: none of the arguments one of which is required can be written")
        need = [f"{name}_need{j}" for j in range(n)]
        for j in range(last, -1, -1):
            key, is_required, member = members[j]
            options: list[ir.Expr] = []
            if key in keys:  # written: the rest is the ordinary chain
                if j + 1 == n:
                    options.append(member)
                else:
                    after = ir.seq(p.comma, ir.Ref(f"{name}_from{j + 1}"))
                    options.append(ir.seq(member, after if later_required[j + 1] else ir.Repeat(after, 0, 1)))
            elif j < last:
                options.append(ir.seq(member, p.comma, ir.Ref(need[j + 1])))
            if not is_required and j < last:
                options.append(ir.Ref(need[j + 1]))
            self.rules[need[j]] = ir.choice(*options)
        return ir.Ref(need[0])

    def _at_least_one_balanced(self, name: str, members: list, extra: ir.Expr | None, keys: frozenset,
                               where: str) -> ir.Expr:
        """`at_least_one` over the balanced tree: per range, `need` (one of `keys` among its
        written members) and `none` (none of them) beside `part`. The members before the first
        of `keys`, and that member, are written without extra members, as in the chain."""
        bare = [member for _, _, member in members]
        tree = MemberTree(self.rules, self.pieces.comma, [is_required for _, is_required, _ in members])
        parts = tree.build(f"{name}_part", self._written(members, extra))  # (the rules `members` made)
        nones = tree.build(f"{name}_none", [None if key in keys else bare[j] for j, (key, _, _) in enumerate(members)])
        needs = tree.build_need(f"{name}_need", [bare[j] if key in keys else None for j, (key, _, _) in enumerate(members)],
                                nones, parts)
        root = needs.get((0, len(members)))
        if root is None:
            raise NoValue(f"tool {self.tool.name!r}: {where}: none of the arguments one of which is required can be written")
        return root

    def _written(self, members: list, extra: ir.Expr | None) -> list:
        """Each member as written, with the extra members that may follow it."""
        extras = self._extras(extra)
        return [ir.seq(member, *extras) for _, _, member in members]

    def _extras(self, extra: ir.Expr | None) -> list:
        """What may follow a member: any number of extra members (`extra`: their schema's
        member), or nothing when the object takes none."""
        return [ir.Repeat(ir.seq(self.pieces.comma, extra))] if extra is not None else []

    def bare_key_except(self, declared: Sequence[str]) -> str:
        """A rule for a bare key (KEY) that is none of `declared`: a trie of the declared keys,
        where leaving the trie, or stopping on a node that is no declared key, is allowed. Each
        node's rule takes what may follow its prefix, never empty (an empty rest is optional)."""
        chars = self.pieces.key_chars
        trie: dict = {}
        for key in declared:
            node = trie
            for char in key:
                node = node.setdefault(char, {})
            node[None] = True
        base = self.new_rule("key")
        any_tail = ir.Repeat(ir.CharClass(class_inside(chars)))
        pending = [(trie, base)]
        nodes = 0
        while pending:
            node, name = pending.pop()
            children = sorted(c for c in node if c is not None)
            options: list[ir.Expr] = []
            others = chars - {ord(c) for c in children}
            if others:
                options.append(ir.seq(ir.CharClass(class_inside(others)), any_tail))
            for char in children:
                nodes += 1
                child = f"{base}_{nodes}"  # numbered, not named by its path: names stay short
                pending.append((node[char], child))
                # after the child's character the key may stop unless that makes a declared key
                options.append(ir.seq(ir.Literal(char), ir.Ref(child) if None in node[char] else ir.Repeat(ir.Ref(child), 0, 1)))
            self.rules[name] = ir.choice(*options)
        return base


def commas(items: list, comma: ir.Expr) -> list:
    """`items` with a comma between each two."""
    out: list = []
    for item in items:
        if out:
            out.append(comma)
        out.append(item)
    return out


def _tree_ranges(n: int) -> list:
    """Every inner range (lo, mid, hi) of a balanced binary tree over n leaves (a leaf is the
    range (j, j + 1)), children before parents; iterative."""
    out: list = []
    stack = [(0, n, False)]
    while stack:
        lo, hi, done = stack.pop()
        if hi - lo < 2:
            continue
        mid = (lo + hi) // 2
        if done:
            out.append((lo, mid, hi))
        else:
            stack += [(lo, hi, True), (mid, hi, False), (lo, mid, False)]
    return out


class MemberTree:
    """An object's members (in order, each required or not) as a balanced tree of rules over
    their index ranges, for an engine whose compiler recurses through rules: llguidance's
    overflowed its stack (a segfault) on the chain of one rule per member at about 2,700
    members, 1,024 on a thread of 2 MB. `build` gives, per range, the rule of its members
    written: at least one, every required one, in order, separated by commas, from the leaves'
    expressions (None: that member cannot be written there). A node joins its halves: both
    when both hold a required member, else each optional as the other allows. Each node is one
    rule (a leaf is its expression), so the rules are linear in the members and nest log2(n)
    deep; none starts with a comma. A left half is followed by a comma and may end in one and a
    member: a printer must not make it one lexeme (the llguidance printer never folds
    structure, `ir.Grammar.structure`; llguidance's own GBNF reader would, which is why the
    GBNF export keeps the chain)."""

    def __init__(self, rules: dict, comma: ir.Expr, required: list):
        self.rules, self.comma = rules, comma
        self.ranges = _tree_ranges(len(required))
        self.any_required: dict = {(j, j + 1): is_required for j, is_required in enumerate(required)}
        for lo, mid, hi in self.ranges:
            self.any_required[(lo, hi)] = self.any_required[(lo, mid)] or self.any_required[(mid, hi)]

    def build(self, prefix: str, leaves: list) -> dict:
        """Every range's expression (a rule reference, or a leaf's), or None where the range
        cannot be written as it must: the whole's is at `(0, n)`."""
        found: dict = {(j, j + 1): leaf for j, leaf in enumerate(leaves)}
        for number, (lo, mid, hi) in enumerate(self.ranges):
            found[(lo, hi)] = self._rule(f"{prefix}{number}", self._join(
                found[(lo, mid)], self.any_required[(lo, mid)], found[(mid, hi)], self.any_required[(mid, hi)]))
        return found

    def build_need(self, prefix: str, leaves: list, nones: dict, parts: dict) -> dict:
        """`build` for ranges that must hold one of some members (`leaves`: those members, None
        elsewhere): the first of them in one half, the members before it as `nones` has them
        (`build` of the other members), the members after it as `parts` has them."""
        found: dict = {(j, j + 1): leaf for j, leaf in enumerate(leaves)}
        for number, (lo, mid, hi) in enumerate(self.ranges):
            left_required, right_required = self.any_required[(lo, mid)], self.any_required[(mid, hi)]
            options = []
            if found[(lo, mid)] is not None:  # the first of them on the left, then the right half
                options.append(self._join(found[(lo, mid)], True, parts[(mid, hi)], right_required))
            if found[(mid, hi)] is not None:  # none of them on the left
                options.append(self._join(nones[(lo, mid)], left_required, found[(mid, hi)], True))
            options = [option for option in options if option is not None]
            found[(lo, hi)] = self._rule(f"{prefix}{number}", ir.choice(*options) if options else None)
        return found

    def _rule(self, name: str, expr):
        if expr is None:
            return None
        self.rules[name] = expr
        return ir.Ref(name)

    def _join(self, left, left_required: bool, right, right_required: bool):
        """Two adjacent ranges written (at least one member, every required one), from each
        one's expression (None: nothing of it can be written)."""
        comma = self.comma
        if left is None:
            return None if left_required else right
        if right is None:
            return None if right_required else left
        if left_required and right_required:
            return ir.seq(left, comma, right)
        if left_required:
            return ir.seq(left, ir.Repeat(ir.seq(comma, right), 0, 1))
        if right_required:
            return ir.seq(ir.Repeat(ir.seq(left, comma), 0, 1), right)
        return ir.choice(ir.seq(left, ir.Repeat(ir.seq(comma, right), 0, 1)), right)


def grammar_of(rules: Mapping[str, ir.Expr], start: str) -> ir.Grammar:
    """The grammar of the rules `start` uses, its `structure` named (the rules that write the
    format's punctuation, `{ } [ ] , :`, themselves), and all of them `marks_apart`: each mark
    is a literal of its own (`marks_apart`), and every other literal a scalar, a key or a
    string's text. tests/properties/test_constrain_greedy.py checks that llguidance's greedy-lexer check
    finds nothing to undo in them, over random schemas."""
    used = _reachable(rules, start)
    punctuation = shared_pieces().punctuation_chars
    return ir.Grammar(start, used, structure=frozenset(
        name for name, body in used.items() if any(not punctuation.isdisjoint(text) for text in literal_texts(body))),
        marks_apart=frozenset(used))


def _reachable(rules: Mapping[str, ir.Expr], start: str) -> dict[str, ir.Expr]:
    """The rules `start` uses, in a stable order (start first)."""
    seen: dict[str, ir.Expr] = {}
    stack = [start]
    while stack:
        name = stack.pop()
        if name in seen:
            continue
        seen[name] = rules[name]
        refs: list[str] = []
        _refs(rules[name], refs)
        stack.extend(reversed(refs))
    return seen


def _refs(expr: ir.Expr, out: list[str]) -> None:
    stack = [expr]
    while stack:
        e = stack.pop()
        if isinstance(e, ir.Ref):
            out.append(e.name)
        elif isinstance(e, ir.Seq):
            stack.extend(reversed(e.items))
        elif isinstance(e, ir.Choice):
            stack.extend(reversed(e.options))
        elif isinstance(e, ir.Repeat):
            stack.append(e.item)


def productive_rules(rules: Mapping[str, ir.Expr]) -> set[str]:
    """The rules that derive some finite text: a fixpoint, each rule looked at again only when a
    rule it refers to turns out productive."""
    users: dict[str, list[str]] = {}
    for name, body in rules.items():
        found: list[str] = []
        _refs(body, found)
        for target in set(found):
            users.setdefault(target, []).append(name)
    productive: set[str] = set()
    pending = list(rules)
    while pending:
        name = pending.pop()
        if name in productive or not _derives(rules[name], productive):
            continue
        productive.add(name)
        pending.extend(u for u in users.get(name, ()) if u not in productive)
    return productive


def _derives(expr: ir.Expr, productive: set[str]) -> bool:
    if isinstance(expr, ir.Ref):
        return expr.name in productive
    if isinstance(expr, ir.Seq):
        return all(_derives(i, productive) for i in expr.items)
    if isinstance(expr, ir.Choice):
        return any(_derives(o, productive) for o in expr.options)
    if isinstance(expr, ir.Repeat):
        return expr.min == 0 or _derives(expr.item, productive)
    return True


def pruned(rules: Mapping[str, ir.Expr], productive: set[str]) -> dict[str, ir.Expr]:
    """The productive rules, without the options and repetitions that lead to no finite text."""
    if len(productive) == len(rules):
        return dict(rules)  # the usual case: nothing to prune
    def prune(expr: ir.Expr) -> ir.Expr:
        if isinstance(expr, ir.Seq):
            return ir.Seq(tuple(prune(i) for i in expr.items))
        if isinstance(expr, ir.Choice):
            return ir.choice(*(prune(o) for o in expr.options if _derives(o, productive)))
        if isinstance(expr, ir.Repeat):
            return ir.Repeat(prune(expr.item), expr.min, expr.max) if _derives(expr.item, productive) else ir.Seq(())
        return expr
    return {name: prune(body) for name, body in rules.items() if name in productive}

