"""The run's report: agreement with parse_output per parser pair, side by side, and the figures.

Two tables: the agreement counts per field (streamed and not, each parser pair a column pair), and
one line per request saying, for each parser pair, which fields differ. Our plugin's every
disagreement is printed in full (the raw output, what differs); the built-in parser's are counted.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from . import check
from .cases import Case
from .client import Observed


@dataclass
class Row:
    case: Case
    stream: bool
    observed: Observed
    raw: str
    want: check.Expected | None

    @property
    def diffs(self) -> dict[str, str]:
        if self.observed.error is not None:
            return {"error": self.observed.error}
        return check.differences(self.want, self.observed)


def _mode(stream: bool) -> str:
    return "streamed" if stream else "not streamed"


def summary(runs: dict[str, list[Row]]) -> list[str]:
    columns = [(parser, stream) for parser in runs for stream in (False, True)]
    head = "| | " + " | ".join(f"`{p}` {_mode(s)}" for p, s in columns) + " |"
    lines = [head, "|---" * (len(columns) + 1) + "|"]

    def cell(parser: str, stream: bool, test) -> str:
        rows = [r for r in runs[parser] if r.stream == stream]
        return f"{sum(1 for r in rows if test(r))}/{len(rows)}"

    answered = lambda r: r.observed.error is None  # noqa: E731
    for name in check.FIELDS:
        label = {"calls": "calls (names, in order)", "arguments": "argument JSON text",
                 "content": "content", "reasoning": "reasoning"}[name]
        lines.append(f"| {label} | " + " | ".join(
            cell(p, s, lambda r, n=name: answered(r) and n not in r.diffs) for p, s in columns) + " |")
    lines.append("| **all four** | " + " | ".join(cell(p, s, lambda r: not r.diffs) for p, s in columns) + " |")
    lines.append("| HTTP errors | " + " | ".join(
        str(sum(1 for r in runs[p] if r.stream == s and not answered(r))) for p, s in columns) + " |")

    def marks(parser: str, stream: bool) -> str:
        carried = owed = 0
        for r in runs[parser]:
            if r.stream == stream and r.want is not None:
                c, o = check.marks_carried(r.want, r.observed)
                carried, owed = carried + c, owed + o
        return f"{carried}/{owed}"

    lines.append("| recovered calls with `recovered` and `diagnostics` | " + " | ".join(
        marks(p, s) for p, s in columns) + " |")
    return lines


def per_request(runs: dict[str, list[Row]]) -> list[str]:
    parsers = list(runs)
    head = "| request | " + " | ".join(f"`{p}` {_mode(s)}" for p in parsers for s in (False, True)) + " |"
    lines = [head, "|---" * (2 * len(parsers) + 1) + "|"]
    first = runs[parsers[0]]
    for i in range(0, len(first), 2):
        cells = []
        for p in parsers:
            for row in runs[p][i:i + 2]:
                cells.append("ok" if not row.diffs else ", ".join(row.diffs))
        lines.append(f"| {first[i].case.name} | " + " | ".join(cells) + " |")
    return lines


def same_raw(runs: dict[str, list[Row]]) -> str:
    parsers = list(runs)
    if len(parsers) < 2:
        return ""
    pairs = list(zip(runs[parsers[0]], runs[parsers[1]]))
    same = sum(1 for a, b in pairs if a.observed.token_ids == b.observed.token_ids)
    return f"raw outputs identical across the two servers (same seeds): {same}/{len(pairs)}"


def quoted_calls(runs: dict[str, list[Row]]) -> list[str]:
    """What each parser made of the request whose answer quotes a call with ordinary tokens: by
    token id the quote is content and one call (get_weather) is made; read by text, the quote is a
    call too (add_note)."""
    lines = []
    for parser, rows in runs.items():
        for row in rows:
            if "grammar quoted-call" in row.case.name and row.observed.error is None:
                names = [c["name"] for c in row.observed.calls]
                lines.append(f"quoted call, `{parser}` {_mode(row.stream)}: calls {names}")
    return lines


def dump(runs: dict[str, list[Row]], path: Path) -> None:
    """Every response, one JSON line each: the request, the raw output, what the client got, what differs."""
    with open(path, "w", encoding="utf-8") as out:
        for parser, rows in runs.items():
            for row in rows:
                got = row.observed
                out.write(json.dumps({
                    "parser": parser, "request": row.case.name, "streamed": row.stream, "raw": row.raw,
                    "finish_reason": got.finish_reason, "content": got.content, "reasoning": got.reasoning,
                    "calls": got.calls, "void": got.void, "error": got.error, "differs": row.diffs,
                    "tool_call_deltas": got.tool_call_deltas},
                    ensure_ascii=False) + "\n")


def report(runs: dict[str, list[Row]], figures: dict[str, dict[str, float]], ours: str, total: float,
           out: Path | None) -> bool:
    """Print everything; True when our plugin failed (a disagreement, an error, a request not sent)."""
    failed = False
    for row in runs.get(ours, ()):
        if row.diffs:
            failed = True
            print(f"\nDISAGREES: {ours} {_mode(row.stream)} {row.case.name}")
            for name, text in row.diffs.items():
                print(f"  {name}: {text}")
            print(f"  raw: {json.dumps(row.raw, ensure_ascii=False)}")
    lines = ["", *summary(runs), "", *per_request(runs), "", *quoted_calls(runs), ""]
    if same_raw(runs):
        lines.append(same_raw(runs))
    for parser, f in figures.items():
        lines.append(f"{parser}: server start {f['start']:.1f} s, requests {f['requests']:.1f} s,"
                     f" peak RSS {f['rss'] / 2**30:.2f} GiB")
    lines.append(f"total {total:.0f} s")
    text = "\n".join(lines)
    print(text)
    if out is not None:
        out.write_text(text + "\n", encoding="utf-8")
    print(f"\ne2e_vllm: {'FAILED' if failed else 'ok'}: {ours} agreed with parse_output on "
          f"{sum(1 for r in runs.get(ours, ()) if not r.diffs)}/{len(runs.get(ours, ()))} responses")
    return failed
