"""`make integration-llamacpp`: the GBNF exports, run by llama.cpp's own grammar matcher, accept
exactly what llguidance accepts on the same strings (docs/constrained-decoding.md).

    python integration/llamacpp/check.py DRIVER [--seed N] [--tool-lists N] [--examples N]
                                               [--tool-examples N] [--walks N]

For each export (exports.py), generic and specialised to random tool lists, llguidance runs the
llguidance export and llama.cpp the GBNF export on every string of strings.py and on random walks
under each engine's mask (walks.py): both must accept the same strings, and refuse the others
at the same token. Prints the counts by source and every disagreement; exits 1 on any.
"""

from __future__ import annotations

import argparse
import collections
import pathlib
import random
import sys
import time
from dataclasses import dataclass

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "tests"))

from constrain_helpers import ByteTokenizer, encode  # noqa: E402
from draw import examples  # noqa: E402
from exports import Export, generic, specialised, tool_lists  # noqa: E402
from llama_matcher import LlamaMatcher  # noqa: E402
from llg_matcher import LlgMatcher  # noqa: E402
from strings import accept_lists, corpus_lists, with_mutants, wrong_in_one_place  # noqa: E402
from utf8 import overlong  # noqa: E402
from walks import walk  # noqa: E402


@dataclass(frozen=True)
class Case:
    source: str
    ids: tuple[int, ...]


@dataclass(frozen=True)
class Disagreement:
    export: str
    source: str
    text: str
    llguidance: str
    llama_cpp: str


class Tally:
    """Strings checked, by source, and how they came out."""

    def __init__(self):
        self.counts: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
        self.disagreements: list[Disagreement] = []
        self.with_nul = 0
        self.overlong = 0

    def total(self) -> int:
        return sum(c["checked"] for c in self.counts.values())


TOKENS = ByteTokenizer().tokens


def data(ids) -> bytes:
    return b"".join(TOKENS[t] for t in ids)


def shown(ids) -> str:
    """The text of `ids` for a report (a walk under llama.cpp's mask may write bytes that are no UTF-8)."""
    return data(ids).decode("utf-8", errors="backslashreplace")


def cases_from_text(source: str, texts) -> list[Case]:
    return [Case(source, tuple(encode(t)[0])) for t in texts]


def string_cases(export: Export, n: int, seed: int) -> list[Case]:
    """Accept lists with their mutants, reject lists and the corpus, for this export's scope and
    tools: `n` accept-list strings per source, and `n // 2` draws of calls wrong in one place."""
    cases = []
    for source, strategy in accept_lists(export.scope, export.tools).items():
        drawn = examples(with_mutants(strategy), n, seed)
        cases += cases_from_text(source, [text for text, _ in drawn])
        cases += cases_from_text(source + ": mutated", [m for _, mutants in drawn for m in mutants])
    if export.tools is None:
        for source, texts in corpus_lists(export.scope).items():
            cases += cases_from_text(source, texts)
    else:
        drawn = examples(wrong_in_one_place(export.tools), max(1, n // 2), seed)
        cases += cases_from_text("calls wrong in one place", [t for texts in drawn for t in texts])
    return cases


def walk_cases(llg: LlgMatcher, llama: LlamaMatcher, n: int, seed: int) -> list[Case]:
    rng = random.Random(seed)
    cases = []
    for name, engine in (("llguidance", llg), ("llama.cpp", llama)):
        for _ in range(n):
            ids = walk(engine, rng)
            if ids is not None:
                cases.append(Case(f"random walks under {name}'s mask", tuple(ids)))
    return cases


def compare(export: Export, llg: LlgMatcher, llama: LlamaMatcher, cases: list[Case], tally: Tally) -> None:
    seen = set()
    for case in cases:
        if case.ids in seen:
            continue
        seen.add(case.ids)
        if 0 in case.ids:
            # llama.cpp's sampler refuses every token whose text starts with NUL (it ends C strings)
            tally.with_nul += 1
            continue
        if overlong(data(case.ids)):
            tally.overlong += 1
            continue
        ids = list(case.ids)
        theirs = llama.verdict(ids)
        plain = llg.verdict(ids)
        # where llguidance, reading tokens as they are, differs: read special tokens as llama.cpp does
        ours = plain if plain == theirs else llg.verdict_reading_specials_as_text(ids)
        counts = tally.counts[case.source]
        counts["checked"] += 1
        if ours is not None:
            counts["accepted" if ours.complete else "refused"] += 1
            counts["as text"] += ours != plain
        if ours != theirs:
            counts["disagreements"] += 1
            described = "undecided" if ours is None else ours.describe(len(ids))
            tally.disagreements.append(Disagreement(export.label, case.source, shown(ids),
                                                    described, theirs.describe(len(ids))))


_DRAWN: dict[tuple, list[Case]] = {}


def drawn_cases(export: Export, args) -> list[Case]:
    """string_cases, drawn once for the exports that share a scope and tools (the turns' switches
    change the grammar, not the strings worth asking about)."""
    key = (export.scope, id(export.tools))
    if key not in _DRAWN:
        n = args.examples if export.tools is None else args.tool_examples
        _DRAWN[key] = string_cases(export, n, args.seed)
    return _DRAWN[key]


def check_export(export: Export, llama: LlamaMatcher, args, tally: Tally) -> None:
    llg = LlgMatcher(export.text("llguidance"))
    llama.load(export.text("gbnf"))
    compare(export, llg, llama, drawn_cases(export, args) + walk_cases(llg, llama, args.walks, args.seed), tally)


def canary(llama: LlamaMatcher, args) -> int:
    """The comparison finds a real difference: a GBNF call export that refuses the digit 7."""
    export = generic()[0]
    llg = LlgMatcher(export.text("llguidance"))
    llama.load(export.text("gbnf").replace("[0-9]", "[0-68-9]"))
    tally = Tally()
    compare(export, llg, llama, cases_from_text("canary", ["<|tool_call>call:f{a:7}<tool_call|>"])
            + string_cases(export, 20, args.seed), tally)
    return len(tally.disagreements)


def report(tally: Tally, exports: int, seconds: float) -> None:
    width = max(len(s) for s in tally.counts)
    columns = ("checked", "accepted", "refused", "as text", "disagreements")
    print(f"{'source':<{width}}" + "".join(f" {c:>13}" for c in columns))
    for source in sorted(tally.counts):
        print(f"{source:<{width}}" + "".join(f" {tally.counts[source][c]:>13}" for c in columns))
    print("(as text: accepted, or refused further on, once a special token is read as its text, as llama.cpp reads it)")
    for d in tally.disagreements[:50]:
        print(f"DISAGREE [{d.export}] {d.source}: llguidance {d.llguidance}, llama.cpp {d.llama_cpp}: {d.text!r}")
    print(f"not compared: {tally.with_nul} strings holding NUL (llama.cpp never samples it), "
          f"{tally.overlong} walks writing overlong UTF-8 (llama.cpp reads it as the code point: utf8.py)")
    print(f"{tally.total()} strings checked over {exports} exports in {seconds:.0f} s; "
          f"{len(tally.disagreements)} disagreements")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("driver")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tool-lists", type=int, default=50, help="random tool lists, four exports each")
    parser.add_argument("--examples", type=int, default=200, help="accept-list strings per source, generic exports")
    parser.add_argument("--tool-examples", type=int, default=40, help="accept-list strings per source, tool exports")
    parser.add_argument("--walks", type=int, default=30, help="random walks per engine and export")
    args = parser.parse_args()

    started = time.monotonic()
    llama = LlamaMatcher(args.driver)
    try:
        found = canary(llama, args)
        if not found:
            print("the canary (a GBNF export refusing the digit 7) found no disagreement: the check is broken")
            return 1
        print(f"canary: a GBNF export refusing the digit 7 disagrees on {found} strings, as it must")
        exports = generic() + [e for tools in tool_lists(args.tool_lists, args.seed) for e in specialised(tools)]
        tally = Tally()
        for i, export in enumerate(exports):
            check_export(export, llama, args, tally)
            print(f"[{i + 1}/{len(exports)}] {export.label}: {tally.total()} strings so far", file=sys.stderr)
    finally:
        llama.close()
    report(tally, len(exports), time.monotonic() - started)
    return 1 if tally.disagreements else 0


if __name__ == "__main__":
    raise SystemExit(main())
