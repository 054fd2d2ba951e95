"""The conformance kit: a corpus of cases as data files, the JSONL protocol a parser under test
speaks, and generated and mutated cases (docs/conformance.md is the spec, for implementations in
any language).

    corpus     the corpus files under corpus/ (the source of record), their manifest, the export
    protocol   the request and answer lines, and the category of a disagreement
    generate   seeded canonical model outputs and mutations of them
    summary    the terminal summary of a run: categories, kinds of failure, failing cases

The runner (`gemma4-lark conformance run`) lives in `gemma4_incremental.conformance`: the answers it
expects for generated cases come from the streaming parser, which this package does not import.
"""

from .corpus import CORPUS, VERSION, TargetCase, check_manifest, export, target_cases, write_manifest
from .protocol import CATEGORIES, PROTOCOL_VERSION, categorize

__all__ = ["CATEGORIES", "CORPUS", "PROTOCOL_VERSION", "TargetCase", "VERSION", "categorize", "check_manifest", "export",
           "target_cases", "write_manifest"]
