"""The hand-written oracle (gemma4_lark.reference) against the grammar's parser, block by block.
Its agreement with `StreamParser(strict=True)`, stream by stream, is
tests/differential/test_reference_vs_stream.py."""

import ast
import importlib
import pathlib
import sys

import pytest
from hypothesis import given, settings, strategies as st

import gemma4_lark as g
from gemma4_lark import fuzz, strategies
from gemma4_lark.errors import GemmaSyntaxError
from gemma4_lark.reference import ReferenceScanner, read_call

from stream_helpers import assert_tiles, run
from conftest import REPO, TESTS

sys.path.insert(0, str(REPO))  # fuzz/ is a tool of the repo
from fuzz import strategies as hostile  # noqa: E402

# The shared vocabulary: what the oracle may take from the package. model.py is data only (the
# plain dataclasses a parse returns, and fast_init, which the events are built with); the error
# base imports nothing (the oracle's refusals are Gemma4Errors as every other module's are), nor
# does _names (how model.py serves its old spellings).
VOCABULARY = {"gemma4_lark.tokens", "gemma4_lark.events", "gemma4_lark.diagnostics", "gemma4_lark.model",
              "gemma4_lark.error_base", "gemma4_lark._names"}


def _imports(module) -> set:
    """The modules `module` imports when it is loaded (absolute names): not those a function
    imports when called (events.py serializes a too-deep value with the renderers' writer)."""
    tree = ast.parse(pathlib.Path(module.__file__).read_text(encoding="utf-8"))
    package = module.__name__.rpartition(".")[0]
    found = set()
    nodes = list(tree.body)
    while nodes:
        node = nodes.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        nodes.extend(ast.iter_child_nodes(node))
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = package + ("." + base if base else "")
            found |= {f"{base}.{a.name}" if not node.module else base for a in node.names}
    return found


def test_reference_is_independent_of_the_grammar():
    """The oracle imports nothing of the production parsing, decoding or streaming code (Lark, the
    grammar, the fast path, the recovery, the stream parser...), directly or through the
    vocabulary it shares; the rest is the standard library."""
    seen, todo = set(), ["gemma4_lark.reference"]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for imported in _imports(importlib.import_module(name)):
            if imported.startswith(("gemma4_lark", "gemma4_incremental", "incremental")):
                assert imported in VOCABULARY, f"{name} imports {imported}"
                todo.append(imported)
            else:
                assert imported.split(".")[0] in sys.stdlib_module_names, f"{name} imports {imported}"


# --- block level: read_call against parse_call -------------------------------------------------
def _strict(block: str, max_depth: int = 512):
    """parse_call's verdict: (name, arguments, repeated keys) or the error's code."""
    duplicates: list = []
    try:
        call = g.parse_call(block, max_depth=max_depth, duplicates=duplicates)
    except GemmaSyntaxError as err:
        return err.code
    return call.name, fuzz.typed(call.arguments), sorted(pos for _, pos in duplicates)


def _oracle(block: str, max_depth: int = 512):
    read = read_call(block, max_depth=max_depth)
    if read.code is not None:
        return read.code
    return read.name, fuzz.typed(read.arguments), [d.pos for d in read.warnings if d.code == "duplicate-key"]


@given(strategies.calls())
def test_read_call_agrees_with_parse_call_on_canonical_calls(name_arguments):
    block = strategies.canonical_call(*name_arguments)
    assert _oracle(block) == _strict(block)


@settings(max_examples=100)
@given(strategies.grammar_text("call_block"))
def test_read_call_agrees_with_parse_call_on_grammar_generated_blocks(block):
    assert _oracle(block) == _strict(block)


@settings(max_examples=150)
@given(hostile.hostile_blocks("call_block"), st.sampled_from([512, 1, 2, 3, 5, 8]))
def test_read_call_accepts_and_refuses_what_parse_call_does(block, max_depth):
    """Attacked blocks: the same verdict (a call, or the code of the refusal: `syntax` or
    `too-deep`), whatever is wrong and wherever."""
    assert _oracle(block, max_depth) == _strict(block, max_depth)


def _corpus_blocks():
    """Every block of the conformance corpus: call blocks as they are, values inside a call."""
    root = TESTS / "conformance"
    for kind in ("valid", "invalid"):
        for path in sorted((root / kind).glob("*.gemma")):
            text = path.read_text(encoding="utf-8")
            if path.name.startswith("call-"):
                yield path.name, text
            yield path.name + " (as a value)", "<|tool_call>call:f{a:" + text + "}<tool_call|>"


@pytest.mark.parametrize("name, block", list(_corpus_blocks()))
def test_read_call_agrees_on_the_conformance_corpus(name, block):
    for max_depth in (512, 2):
        assert _oracle(block, max_depth) == _strict(block, max_depth), name


def test_read_call_reports_what_a_valid_block_carries():
    """FunctionGemma's `<escape>` in a bare word (from its first to its last) and each repeated
    key (where it is written again), as `StreamParser` reports them on a valid block."""
    escapes = "<|tool_call>call:f{a:x<escape>y<escape> z,b:[<escape>]}<tool_call|>"
    read = read_call(escapes)
    assert read.arguments == {"a": "x<escape>y<escape> z", "b": ["<escape>"]}
    first, last, alone = escapes.find("<escape>"), escapes.find("<escape> z"), escapes.rfind("<escape>")
    assert [(d.code, d.pos, d.end) for d in read.warnings] == [
        ("functiongemma-escape", first, last + 8), ("functiongemma-escape", alone, alone + 8)]
    repeated = '<|tool_call>call:f{<|"|>a<|"|>:1,a:2,b:{a:1,a:[]},a:3}<tool_call|>'
    read = read_call(repeated)
    assert read.arguments == {"a": 3, "b": {"a": []}}
    assert [d.pos for d in read.warnings] == [repeated.find("a:2"), repeated.find("a:[]"), repeated.find("a:3")]
    assert {d.code for d in read.warnings} == {"duplicate-key"}


def test_read_call_never_recurses():
    block = "<|tool_call>call:f{a:" + "[" * 5000 + "]" * 5000 + "}<tool_call|>"
    assert read_call(block).code == "too-deep"
    nested: list = []
    for _ in range(4999):
        nested = [nested]
    assert fuzz.typed(read_call(block, max_depth=6000).arguments) == fuzz.typed({"a": nested})


# --- the scanner alone ----------------------------------------------------------------------------
def test_the_reference_reads_strictly_only():
    with pytest.raises(ValueError, match="strict"):
        ReferenceScanner(strict=False)
    scanner = ReferenceScanner()
    with pytest.raises(TypeError):
        scanner.feed(b"bytes")
    scanner.flush()
    with pytest.raises(RuntimeError):
        scanner.feed("more")


@given(st.text(alphabet=st.sampled_from(list('<|>"{}[],:tolcaTURNreshponsenbv_\n ')), max_size=60))
def test_marker_alphabet_soup_tiles(text):
    assert_tiles(run([text], ReferenceScanner), text)
    assert_tiles(run(list(text), ReferenceScanner), text)
