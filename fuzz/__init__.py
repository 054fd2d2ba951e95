"""Property campaigns over every public entry point (`make fuzz`; a short one runs in `make test`).

Not part of the installed package: like `bench/`, a tool of this repository.

    strategies   hostile inputs: grammar-derived and canonical text, then mutated (markers spliced
                 in, partial markers, truncation, huge digit runs, deep nesting, CRLF, BOM,
                 non-ASCII); random chunkings and parser options; messages and tools for the
                 renderers; command lines
    properties   the properties, one function each, and the table of campaigns (entry point,
                 strategy, property)
    linear       doubling checks: time and memory at n and 2n of the same input shape
    corpus       the known hostile inputs (corpus.jsonl), one campaign's example each
    runner       a campaign under a budget of examples and seconds, failures shrunk and deduplicated
    __main__     the deep campaign: `python -m fuzz` (budget from FUZZ_EXAMPLES / FUZZ_SECONDS)
    atheris_target  one campaign under atheris (FUZZ_ENGINE=atheris)

The differential campaign of `gemma4-lark fuzz` lives in `gemma4_lark.fuzz`; its strategies
(`gemma4_lark.strategies`) are reused here rather than written again.
"""
