"""A conformance target with one planted bug (tests/unit/test_conformance_run.py): this project's parser,
as `gemma4-lark conformance serve` runs it, wrong in one way.

    python planted.py BUG     BUG: none, calls, arguments, text, accepts-invalid, crash, raises, timeout, protocol
                              (raises: the answer {"error": ...}, a crash the target survives)
"""

import json
import os
import sys
import time

from gemma4_incremental import StreamParser, collect
from gemma4_incremental.conformance import expected_answer
from gemma4_incremental.openai import to_openai_message


def lenient(request):
    """Recovers what the grammar rejects (a block closed by <turn|>, ...): accepts invalid blocks."""
    parser = StreamParser(strict=False)
    out = collect(parser.feed(request["text"]) + parser.flush())
    return {"calls": [{"name": c.name, "arguments": c.arguments} for c in out.calls],
            "text": to_openai_message(out)["content"] or ""}


def ints_as_strings(value):
    if isinstance(value, dict):
        return {k: ints_as_strings(v) for k, v in value.items()}
    if isinstance(value, list):
        return [ints_as_strings(v) for v in value]
    return str(value) if type(value) is int else value


def answer(bug, request):
    text = request["text"]
    if bug == "crash" and "<|image|>" in text:
        os._exit(3)
    if bug == "raises" and "<|image|>" in text:
        return json.dumps({"error": "ValueError: planted"}) + "\n"
    if bug == "timeout" and "a]b" in text:
        time.sleep(3600)
    if bug == "protocol" and "None" in text:
        return "OK, parsed\n"
    result = expected_answer(request)
    if bug == "accepts-invalid":
        recovered = lenient(request)
        if len(recovered["calls"]) > len(result["calls"]):
            result = recovered
    if bug == "calls" and len(result["calls"]) >= 2:
        result["calls"] = result["calls"][:-1]  # the last of parallel calls dropped
    if bug == "arguments":
        result["calls"] = [{"name": c["name"], "arguments": ints_as_strings(c["arguments"])} for c in result["calls"]]
    if bug == "text":
        result["text"] = result["text"].replace("\n", " ")
    return json.dumps(result) + "\n"


def main():
    bug = sys.argv[1]
    for line in sys.stdin:
        sys.stdout.write(answer(bug, json.loads(line)))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
