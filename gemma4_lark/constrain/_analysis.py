"""What an `ir.Grammar`'s rules are, as the printers and the greedy-lexing check both need to know:
what each rule refers to, which rules are regular (a printer may make them one lexeme), which the
start rule reaches, and the strongly connected components of the references."""

from __future__ import annotations

from .ir import Choice, Expr, Grammar, Ref, Repeat, Seq, Special


def refs(expr: Expr):
    """Every rule name `expr` refers to."""
    if isinstance(expr, Ref):
        yield expr.name
    elif isinstance(expr, (Seq, Choice)):
        for item in (expr.items if isinstance(expr, Seq) else expr.options):
            yield from refs(item)
    elif isinstance(expr, Repeat):
        yield from refs(expr.item)


def has_special(expr: Expr) -> bool:
    if isinstance(expr, Special):
        return True
    if isinstance(expr, (Seq, Choice)):
        return any(has_special(e) for e in (expr.items if isinstance(expr, Seq) else expr.options))
    if isinstance(expr, Repeat):
        return has_special(expr.item)
    return False


def regular_rules(grammar: Grammar) -> frozenset[str]:
    """The rules whose language a regular expression can write: no special token, and no rule on
    any path of references from them refers back to itself (nor to a rule that is not regular).

    Linear in the size of the grammar: the strongly connected components of the references
    (Tarjan's, iterative), each verdict found once. A rule in a cycle is not regular; a rule
    outside one is regular when its body has no special token and every rule it refers to is."""
    missing = [n for body in grammar.rules.values() for n in refs(body) if n not in grammar.rules]
    if missing:
        raise ValueError(f"rule {missing[0]!r} is referred to but not defined")
    edges = {name: list(dict.fromkeys(refs(body))) for name, body in grammar.rules.items()}
    verdict: dict[str, bool] = {}
    for component in strong_components(edges):  # each after every component it reaches: children decided
        cyclic = len(component) > 1 or component[0] in edges[component[0]]
        for member in component:
            verdict[member] = (not cyclic and not has_special(grammar.rules[member])
                               and all(verdict[t] for t in edges[member]))
    return frozenset(name for name in grammar.rules if verdict[name])


def reachable(grammar: Grammar) -> list[str]:
    """The rules the start rule reaches, start first, then in order of first reference."""
    order, seen = [], set()
    stack = [grammar.start]
    while stack:
        name = stack.pop(0)
        if name in seen:
            continue
        seen.add(name)
        order.append(name)
        stack.extend(n for n in refs(grammar.rules[name]) if n not in seen)
    return order


# --- greedy lexing (llguidance) ------------------------------------------------------------------
# llguidance's lexer is greedy: where two lexemes may start, it follows the longer as long as the
# text continues it, and never goes back. So a lexeme `,` beside a lexeme `,th:1` refuses `,ta:`:
# after `,t` only `,th:1` is alive, and `a` kills it. Folding a regular rule into one lexeme can
# create such a pair; `greedy_safe` finds them and undoes the folding, and splits a literal that

def strong_components(edges: dict[str, list[str]]) -> list[list[str]]:
    """The strongly connected components of `edges`, each after every component it reaches
    (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    for root in edges:
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            name, i = work.pop()
            if i == 0:
                index[name] = low[name] = len(index)
                stack.append(name)
                on_stack.add(name)
            if i < len(edges[name]):
                work.append((name, i + 1))
                target = edges[name][i]
                if target not in index:
                    work.append((target, 0))
                continue
            for target in edges[name]:  # every child is done: take the lowest reachable index
                if target in on_stack:
                    low[name] = min(low[name], low[target])
            if low[name] == index[name]:
                out.append(_pop_component(name, stack, on_stack))
    return out


def _pop_component(root: str, stack: list[str], on_stack: set[str]) -> list[str]:
    """The component whose first-visited rule is `root`: the stack down to it, taken off."""
    component = []
    while True:
        member = stack.pop()
        on_stack.discard(member)
        component.append(member)
        if member == root:
            return component

