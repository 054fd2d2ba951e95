"""LineIndex answers as line_and_column does, for offsets asked in any order."""

from hypothesis import given, strategies as st

from gemma4_lark.diagnostics import LineIndex, line_and_column


@given(st.text(alphabet="ab\n\r", max_size=60), st.lists(st.integers(min_value=0, max_value=60), max_size=12))
def test_line_index_agrees_with_line_and_column(source, offsets):
    index = LineIndex(source)
    for pos in offsets:
        pos = min(pos, len(source))
        assert index.line_and_column(pos) == line_and_column(source, pos)


# --- the one table of codes -----------------------------------------------------------------------
import ast  # noqa: E402
import re  # noqa: E402

from gemma4_lark.diagnostics import CODES, TOOL_CALL_ERROR_CODES, message  # noqa: E402
from conftest import REPO  # noqa: E402

# The calls that write a finding with its code as a literal: Diagnostic(severity, code, ...), the
# decoders' note(code, ...) and the reference's warn(code, ...), the schema reader's
# _diagnostic([severity,] code, ...).
_CODE_ARGUMENT = {"Diagnostic": 1, "note": 0, "warn": 0, "_diagnostic": 0}


def _written_codes() -> dict[str, str]:
    found = {}
    for path in sorted(list((REPO / "gemma4_lark").rglob("*.py")) + list((REPO / "incremental").rglob("*.py"))):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            if isinstance(node.func, ast.Attribute) and getattr(node.func.value, "id", None) == "warnings":
                continue  # warnings.warn(message): Python's, not the reference's warn(code, ...)
            name = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
            at = _CODE_ARGUMENT.get(name)
            if at is not None and len(node.args) > at + 1 and isinstance(node.args[at], ast.Constant) \
                    and node.args[at].value in ("warning", "error"):
                at += 1  # (recovery's _diagnostic takes the severity first)
            if at is not None and len(node.args) > at and isinstance(node.args[at], ast.Constant) \
                    and isinstance(node.args[at].value, str):
                found.setdefault(node.args[at].value, f"{path.name}:{node.lineno}")
    return found


def _documented(page: str, section: str) -> set[str]:
    text = (REPO / page).read_text(encoding="utf-8")
    part = text.split(f"## {section}\n", 1)[1].split("\n## ", 1)[0]
    codes = set()
    for line in part.splitlines():
        if line.startswith("| `"):  # a row: the codes of its first cell
            codes |= set(re.findall(r"`([a-z-]+)`", line.split("|")[1]))
        elif line.startswith("Diagnostic codes this page adds:") or codes and "`" in line and not line.startswith("|"):
            codes |= set(re.findall(r"`([a-z-]+)` \(", line))  # each code with its severity
    return codes


def test_every_code_the_packages_write_is_in_the_table_and_every_code_of_it_is_written():
    written = _written_codes()
    assert set(written) - set(CODES) == set(), {c: written[c] for c in set(written) - set(CODES)}
    assert set(CODES) - set(written) == set()


def test_the_docs_code_tables_are_the_table():
    lenient = {code for code, entry in CODES.items() if entry.page == "docs/leniency.md"}
    assert _documented("docs/leniency.md", "Recoveries") == lenient
    schema = {code for code, entry in CODES.items() if entry.page == "docs/schema.md"}
    documented = _documented("docs/schema.md", "Error codes")
    assert schema <= documented, schema - documented
    assert documented <= schema | TOOL_CALL_ERROR_CODES, documented - schema - TOOL_CALL_ERROR_CODES


def test_a_shared_message_is_written_from_its_template():
    assert message("duplicate-key", "city") == "duplicate key `city`: the last value wins"
    assert message("duplicate-key", "k" * 100) == f"duplicate key `{'k' * 40}`: the last value wins"
