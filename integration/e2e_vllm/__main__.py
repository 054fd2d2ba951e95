"""`make e2e-vllm`: a real vLLM OpenAI server, the library's plugin against parse_output (docs/serving.md).

    python -m e2e_vllm --cache DIR      (from integration/, in the venv vLLM is installed in)

Builds the tiny random model (model.py), then for each parser pair (ours, `gemma4-lark`, and vLLM's
built-in `gemma4`) starts a server (server.py), sends every request of requests.json streamed and
not (cases.py, client.py), and compares each response with `parse_output` of its raw output
(check.py). Prints the side-by-side table (table.py). Exits 1 when our plugin disagrees on any
field of any response, when any request to its server fails (HTTP error) or the run's time bound
is hit; 2 when the official template is missing. vLLM's built-in parser is only reported.
"""

from __future__ import annotations

import argparse
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from . import check, model, table
from .cases import Case, load
from .client import Observed, send
from .server import Server, ServerError

REPO = Path(__file__).resolve().parents[2]
TEMPLATE = REPO.parent / "shared" / "data" / "gemma4-templates" / "gemma4-e2b-2026-07.jinja"
OURS, BUILTIN = "gemma4-lark", "gemma4"
# The output-scope grammar must hold from the first token: with thinking on, vLLM would otherwise
# start it only when the reasoning parser says the thought is over (docs/constrained-decoding.md).
STRUCTURED_OUTPUTS = '{"backend": "guidance", "enable_in_reasoning": true}'


def run_server(python: str, folder: Path, parser: str, cases: list[Case], log: Path, deadline: float,
               request_timeout: float) -> tuple[list[tuple[Case, bool, Observed]], Server, float]:
    """Every case, non-streamed and streamed, against one server; the server stopped at the end."""
    import openai

    results: list[tuple[Case, bool, Observed]] = []
    with Server(python, folder, parser, log, structured_outputs=STRUCTURED_OUTPUTS) as server:
        print(f"  {parser}: server up in {server.start_seconds:.1f} s", flush=True)
        client = openai.OpenAI(base_url=server.url, api_key="none", timeout=request_timeout, max_retries=0)
        started = time.monotonic()
        jobs = [(case, stream) for case in cases for stream in (False, True)]

        def one(job: tuple[Case, bool]) -> tuple[Case, bool, Observed]:
            case, stream = job
            if time.monotonic() > deadline:
                return case, stream, Observed(error="not sent: the run's time bound was reached")
            observed = send(client, case, stream)
            server.sample()
            return case, stream, observed

        with ThreadPoolExecutor(max_workers=4) as pool:  # the server's --max-num-seqs
            results = list(pool.map(one, jobs))
        seconds = time.monotonic() - started
        server.sample()
        if not server.alive():
            raise ServerError(f"the {parser} server died during the run; its log: {log}")
    return results, server, seconds


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="e2e_vllm", description=__doc__.splitlines()[0])
    ap.add_argument("--cache", type=Path, required=True, help="where the model and the logs go")
    ap.add_argument("--template", type=Path, default=TEMPLATE)
    ap.add_argument("--parsers", default=f"{OURS},{BUILTIN}", help="parser pairs to run, comma-separated")
    ap.add_argument("--time-bound", type=float, default=1200.0, help="seconds for all requests of all servers")
    ap.add_argument("--request-timeout", type=float, default=180.0)
    ap.add_argument("--table", type=Path, help="also write the table (Markdown) here")
    args = ap.parse_args(argv)

    if not args.template.is_file():
        print(f"e2e_vllm: the official chat template is missing: {args.template}\n"
              "  it is read from ../shared/data relative to the repository (the project's shared test data)",
              file=sys.stderr)
        return 2
    started = time.monotonic()
    args.cache = args.cache.resolve()
    args.cache.mkdir(parents=True, exist_ok=True)
    folder = model.build(args.cache / "model", args.template.read_text(encoding="utf-8"))
    decode, prompt_text = model.decoder(folder), model.prompt_text(folder)
    steps_of, tokenizer = model.deltas(folder), model.tokenizer(folder)
    cases = load(model.vocab(folder))
    print(f"e2e_vllm: {len(cases)} cases x streamed and not, model in {folder}", flush=True)
    deadline = time.monotonic() + args.time_bound
    runs: dict[str, list[table.Row]] = {}
    figures: dict[str, dict[str, float]] = {}
    for parser in args.parsers.split(","):
        try:
            results, server, seconds = run_server(sys.executable, folder, parser, cases,
                                                  args.cache / f"server-{parser}.log", deadline, args.request_timeout)
        except ServerError as error:
            print(f"e2e_vllm: FAILED: {error}", file=sys.stderr)
            return 1
        rows = []
        for case, stream, observed in results:
            raw = decode(observed.prompt_token_ids, observed.token_ids)
            steps = steps_of(observed.prompt_token_ids, observed.token_ids) if stream else None
            want = None if observed.error is not None else check.expected(
                case, raw, prompt_text(observed.prompt_token_ids), steps, tokenizer)
            rows.append(table.Row(case, stream, observed, raw, want))
        runs[parser] = rows
        figures[parser] = {"start": server.start_seconds, "requests": seconds, "rss": server.peak_rss}
    table.dump(runs, args.cache / "responses.jsonl")
    failed = table.report(runs, figures, OURS, time.monotonic() - started, args.table)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
