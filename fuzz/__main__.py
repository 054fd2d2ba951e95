"""The deep campaign: `python -m fuzz` (what `make fuzz` runs).

Budget: FUZZ_SECONDS (total, default 600) shared equally by the campaigns, after the corpus and the
doubling checks; FUZZ_EXAMPLES (per campaign, default unlimited: time decides); FUZZ_SEED.
FUZZ_LINEAR=0 skips the doubling checks. FUZZ_ENGINE=atheris drives the same properties with atheris (coverage-guided, libFuzzer), one
process per campaign, when atheris is installed (`pip install -e '.[fuzz]'`).
Prints one line per campaign (examples, seconds, findings), every finding with its shrunk example,
and the doubling table. Exit 1 when anything failed.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

from . import corpus, linear, runner
from .properties import CAMPAIGNS, Campaign

# The deep doubling checks start at n=START_N and double n until one run takes MIN_SECONDS (or
# the text would pass MAX_CHARS), then time n, 2n, 4n.
START_N = 250
MIN_SECONDS = 0.05
MAX_CHARS = 1 << 20
MEMORY_N = 100_000


def _env(name: str, default: float) -> float:
    return float(os.environ.get(name, default))


def _print_finding(f) -> None:
    print(f"  FAIL  {f.campaign}  [{f.entry_point}]  at {f.where}")
    print("        " + f.error.splitlines()[0][:300])
    for line in f.example.splitlines()[:40]:
        print("        | " + line[:300])
    sys.stdout.flush()


def run_corpus() -> int:
    failed = 0
    print("corpus (known hostile inputs):")
    for row in corpus.rows():
        c = next(c for c in CAMPAIGNS if c.name == row["campaign"])
        try:
            c.check(corpus.example(c, row["example"]))
            status = "ok"
        except Exception as exc:  # noqa: BLE001 - any failure is reported, none stops the campaign
            status = f"FAIL {type(exc).__name__}: {str(exc).splitlines()[0][:120]}"
            failed += 1
        print(f"  {row['id']:40} {status}")
    return failed


def run_linear(repeat: int = 2) -> int:
    failed = 0
    print(f"\ndoubling checks: time at n, 2n, 4n (best of {repeat}), ratio t(4n)/t(n) (linear 4, quadratic 16; "
          f"limit {linear.MAX_TIME_RATIO})")
    for shape, entry in linear.pairs():
        figures = linear.time_doubling(shape, entry, START_N, repeat, MIN_SECONDS, MAX_CHARS)
        n = figures.n
        bad = figures.ratio > linear.MAX_TIME_RATIO
        failed += bad
        print(f"  {'FAIL' if bad else 'ok':4} {shape:18} {entry:28} n={n:<6} "
              + " ".join(f"{s * 1000:9.1f}ms" for s in figures.seconds) + f"  x{figures.ratio:.1f}", flush=True)
    print(f"\npeak memory streaming in 1-char chunks (tracemalloc), n={MEMORY_N} and 2n; limit "
          f"{linear.MEMORY_FACTOR}x the block + {linear.MEMORY_CONSTANT >> 20} MiB, and x{linear.MAX_MEMORY_RATIO} per doubling")
    for shape in linear.MEMORY_SHAPES:
        figures = linear.memory_doubling(shape, MEMORY_N)
        bad = (figures.ratio > linear.MAX_MEMORY_RATIO
               or figures.peaks[0] > linear.MEMORY_FACTOR * figures.block_bytes + linear.MEMORY_CONSTANT)
        failed += bad
        print(f"  {'FAIL' if bad else 'ok':4} {shape:18} peak {figures.peaks[0] / 2**20:7.1f} MiB, "
              f"{figures.peaks[1] / 2**20:7.1f} MiB  ({figures.per_block:.0f}x the block, x{figures.ratio:.2f} per doubling)",
              flush=True)
    return failed


def run_hypothesis(campaigns, seconds: float, examples: int, seed: int) -> list:
    print(f"\ncampaigns (hypothesis; {seconds:.0f} s each, at most {examples} examples):")
    all_findings = []
    for c in campaigns:
        figures = runner.run(c, examples=int(examples * c.weight) or 1, seconds=seconds, seed=seed)
        print(f"  {c.name:58} {figures.examples:7} ex {figures.seconds:6.1f} s  {len(figures.findings)} finding(s)",
              flush=True)
        for f in figures.findings:
            _print_finding(f)
        all_findings += figures.findings
    return all_findings


def run_atheris(campaigns: list[Campaign], seconds: float) -> list:
    """Each campaign in its own process under libFuzzer. Counts are libFuzzer's runs: short inputs
    that hypothesis cannot turn into an example count as runs too."""
    artifacts = tempfile.mkdtemp(prefix="gemma4-lark-fuzz-")
    print(f"\ncampaigns (atheris; {seconds:.0f} s each; crash inputs in {artifacts}):")
    failures = []
    for c in campaigns:
        start = time.monotonic()
        done = subprocess.run([sys.executable, "-m", "fuzz.atheris_target", c.name, f"-max_total_time={int(seconds)}",
                               "-rss_limit_mb=4096", f"-artifact_prefix={artifacts}/{c.name}-"],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace")
        output = done.stdout  # libFuzzer's log and the Python traceback, in order
        runs = re.findall(r"Done (\d+) runs|^#(\d+)\s", output, re.M)
        count = max((int(a or b) for a, b in runs), default=0)
        crashed = done.returncode != 0
        print(f"  {c.name:58} {count:7} runs {time.monotonic() - start:6.1f} s  {'FAIL' if crashed else 'ok'}",
              flush=True)
        if crashed:
            report = output[output.rfind("Traceback"):]
            end = re.search(r"^==\d+==", report, re.M)
            report = report[:end.start()] if end else report
            for line in report.strip().splitlines()[-6:]:
                print("        " + line[:300])
            saved = re.findall(r"Test unit written to (\S+)", output)
            if saved:
                print(f"        replay: python -m fuzz.atheris_target '{c.name}' {saved[-1]}")
            failures.append(c.name)
    return failures


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m fuzz", description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=_env("FUZZ_SECONDS", 600), help="total budget (FUZZ_SECONDS)")
    ap.add_argument("--examples", type=int, default=int(_env("FUZZ_EXAMPLES", 10**9)),
                    help="examples per campaign at most (FUZZ_EXAMPLES)")
    ap.add_argument("--seed", type=int, default=int(_env("FUZZ_SEED", 0)))
    ap.add_argument("--engine", choices=["hypothesis", "atheris"], default=os.environ.get("FUZZ_ENGINE", "hypothesis"))
    ap.add_argument("--only", metavar="TEXT", default="", help="only the campaigns whose name contains TEXT")
    ap.add_argument("--no-linear", action="store_true", default=os.environ.get("FUZZ_LINEAR", "1") == "0",
                    help="skip the doubling checks (FUZZ_LINEAR=0)")
    args = ap.parse_args(argv)

    start = time.monotonic()
    failed = run_corpus()
    if not args.no_linear:
        failed += run_linear()
    campaigns = [c for c in CAMPAIGNS if args.only in c.name]
    left = max(args.seconds - (time.monotonic() - start), len(campaigns))
    per_campaign = left / max(len(campaigns), 1)
    if args.engine == "atheris":
        failed += len(run_atheris(campaigns, per_campaign))
    else:
        failed += len(run_hypothesis(campaigns, per_campaign, args.examples, args.seed))
    print(f"\n{time.monotonic() - start:.0f} s in all; {failed} failure(s)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
