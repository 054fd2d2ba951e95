"""The conformance corpus: the files under `corpus/` are its source of record (no Python table
writes them). `gemma4-lark conformance export DIR` copies them, with their manifest.

    corpus/manifest.json      {"name", "version", "protocol", "counts", "files": {path: sha256}}
    corpus/valid/NAME.gemma   an input the grammar accepts
    corpus/valid/NAME.json    {"start": start rule, "expected": the decoded value as JSON,
                               "request", "answer": when the case is sent to a target}
    corpus/invalid/NAME.gemma an input the grammar rejects
    corpus/invalid/NAME.json  {"start", "line", "column", "pos", "message": a fragment of ours,
                               "request", "answer"}
    corpus/streams/NAME.json  {"text", "options", "events", "request", "answer"}

`request` is the line a target is sent and `answer` what it must say (docs/conformance.md). After
editing a case, run `python -m gemma4_lark.conformance.corpus` to rewrite the manifest's counts and
checksums; bump its version as docs/conformance.md#versioning says.
"""

from __future__ import annotations

import hashlib
import json
import pathlib
import shutil
import sys
from dataclasses import dataclass, field

CORPUS = pathlib.Path(__file__).resolve().with_name("corpus")
MANIFEST = "manifest.json"
KINDS = ("valid", "invalid", "streams")


def _manifest(root: pathlib.Path = CORPUS) -> dict:
    return json.loads((root / MANIFEST).read_text(encoding="utf-8"))


VERSION: str = _manifest()["version"]


@dataclass(frozen=True)
class TargetCase:
    """One line to send a target and the answer it must give."""
    id: str            # "valid/call-weather", "streams/one-call", "generated/7"
    request: dict      # {"text": ..., "options"?: {...}}
    answer: dict       # {"calls": [{"name", "arguments"}], "text": ...}
    source: dict = field(default_factory=dict, compare=False)  # the case file's own fields, for reports


def _files(root: pathlib.Path):
    for kind in KINDS:
        yield from sorted((root / kind).glob("*.gemma"))
        yield from sorted((root / kind).glob("*.json"))


def target_cases(root: pathlib.Path = CORPUS) -> list[TargetCase]:
    """Every corpus case that is sent to a target, in a stable order (valid, invalid, streams)."""
    found = []
    for kind in KINDS:
        for path in sorted((root / kind).glob("*.json")):
            spec = json.loads(path.read_text(encoding="utf-8"))
            if "request" in spec:
                found.append(TargetCase(f"{kind}/{path.stem}", spec["request"], spec["answer"], spec))
    return found


def _digests(root: pathlib.Path) -> dict:
    return {path.relative_to(root).as_posix(): hashlib.sha256(path.read_bytes()).hexdigest() for path in _files(root)}


def _counts(root: pathlib.Path) -> dict:
    counts = {kind: len(list((root / kind).glob("*.json"))) for kind in KINDS}
    counts["sent to targets"] = len(target_cases(root))
    return counts


def write_manifest(root: pathlib.Path = CORPUS) -> dict:
    """Rewrite the manifest's counts and checksums from the files (its name, version and protocol
    are kept)."""
    manifest = _manifest(root)
    manifest["counts"] = _counts(root)
    manifest["files"] = _digests(root)
    (root / MANIFEST).write_text(json.dumps(manifest, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    return manifest


def check_manifest(root: pathlib.Path = CORPUS) -> list[str]:
    """What the manifest says that the files do not (empty: it is current)."""
    manifest = _manifest(root)
    problems = []
    want, have = manifest.get("files", {}), _digests(root)
    for name in sorted(set(want) | set(have)):
        if name not in have:
            problems.append(f"{name}: in the manifest, not on disk")
        elif name not in want:
            problems.append(f"{name}: on disk, not in the manifest")
        elif want[name] != have[name]:
            problems.append(f"{name}: changed since the manifest was written")
    if manifest.get("counts") != _counts(root):
        problems.append(f"counts: the manifest says {manifest.get('counts')}, the files {_counts(root)}")
    return problems


def export(directory) -> dict:
    """Copy the corpus and its manifest under `directory` (its valid/, invalid/ and streams/ are
    replaced); the number of cases of each kind."""
    root = pathlib.Path(directory)
    root.mkdir(parents=True, exist_ok=True)
    for kind in KINDS:
        if (root / kind).exists():
            shutil.rmtree(root / kind)
        shutil.copytree(CORPUS / kind, root / kind)
    shutil.copyfile(CORPUS / MANIFEST, root / MANIFEST)
    return _manifest(root)["counts"]


if __name__ == "__main__":
    problems = check_manifest()
    write_manifest()
    print(f"manifest rewritten ({len(problems)} change(s)); version {VERSION}: bump it if an expectation changed",
          file=sys.stderr)
