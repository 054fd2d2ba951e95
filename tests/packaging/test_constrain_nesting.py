"""No function of `gemma4_lark/constrain/` nests its blocks more than 4 deep (issue 31): a fifth
level is where a loop's body stops fitting in a reader's head, and a helper with a name says
what that body does.

Depth counts the compound statements around a statement inside one function (`if`, `for`,
`while`, `with`, `try`, `match`); an `elif` is its `if`'s level, as the reader sees it; a function
defined inside another is measured on its own."""

import ast
import pathlib

import gemma4_lark

MAX_DEPTH = 4
_BLOCKS = (ast.If, ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.Try, ast.Match)
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


def _bodies(node: ast.AST):
    """The statement lists directly under a compound statement (an `elif`'s own, as its
    `if`'s)."""
    if isinstance(node, ast.Try) or type(node).__name__ == "TryStar":
        yield node.body
        for handler in node.handlers:
            yield handler.body
        yield node.orelse
        yield node.finalbody
    elif isinstance(node, ast.If):
        yield node.body
        while len(node.orelse) == 1 and isinstance(node.orelse[0], ast.If):  # elif
            node = node.orelse[0]
            yield node.body
        yield node.orelse
    elif isinstance(node, ast.Match):
        for case in node.cases:
            yield case.body
    else:
        yield node.body
        yield getattr(node, "orelse", [])


def nesting_depth(function: ast.AST) -> int:
    """How deep `function`'s blocks nest (0: straight-line code), nested functions apart."""
    deepest = 0
    stack = [(statement, 1) for statement in function.body]
    while stack:
        node, depth = stack.pop()
        if not isinstance(node, _BLOCKS):
            continue
        deepest = max(deepest, depth)
        stack.extend((statement, depth + 1) for body in _bodies(node) for statement in body)
    return deepest


def functions(root: pathlib.Path):
    """(place, depth, lines) of every function and method under `root`."""
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, _FUNCTIONS):
                yield (f"{path.relative_to(root.parent)}:{node.lineno} {node.name}", nesting_depth(node),
                       node.end_lineno - node.lineno + 1)


def test_no_constrain_function_nests_more_than_four_deep():
    root = pathlib.Path(gemma4_lark.__file__).parent / "constrain"
    deep = [f"{place} nests {depth} deep" for place, depth, _ in functions(root) if depth > MAX_DEPTH]
    assert not deep, "\n".join(deep)


def test_the_measure_sees_depth():
    sample = ast.parse(
        "def f(xs):\n"
        "    for x in xs:\n"            # 1
        "        if x:\n"               # 2
        "            pass\n"
        "        elif x > 1:\n"         # 2 (an elif is its if's level)
        "            while x:\n"        # 3
        "                try:\n"        # 4
        "                    with x:\n"  # 5
        "                        pass\n"
        "                except E:\n"
        "                    pass\n"
        "    def g():\n"                # measured on its own
        "        if 1:\n"
        "            pass\n"
    )
    f = sample.body[0]
    assert nesting_depth(f) == 5
    assert nesting_depth(f.body[1]) == 1
