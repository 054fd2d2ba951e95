"""Conformance targets that misbehave in ways a parser should not break the kit with
(tests/attacks/test_conformance_hostile.py). Each answers as this project's parser would, except:

    python hostile.py surrogate        the text ends in a lone surrogate escape (an emoji cut in half)
    python hostile.py overflow         the first call's arguments hold 1e999
    python hostile.py stderr MB        writes MB megabytes to standard error, then exits
    python hostile.py echo             the text is the request's text, written in 4 KB pieces
    python hostile.py flood            an answer line that never ends
    python hostile.py once MARKER      answers one request (no call, no text), then hangs; started
                                       again, hangs at once (it starts fast: no parser is imported)
    python hostile.py twice            every answer written twice, in one write
    python hostile.py twice-later      every answer written, flushed, then written again a moment later
"""

import json
import os
import sys
import time


def expected_answer(request):
    from gemma4_incremental.conformance import expected_answer

    return expected_answer(request)


def main():
    mode = sys.argv[1]
    if mode == "once" and os.path.exists(sys.argv[2]):
        time.sleep(3600)
    for line in sys.stdin:
        request = json.loads(line)
        if mode == "once":
            print('{"calls": [], "text": ""}', flush=True)
            open(sys.argv[2], "w").close()
            time.sleep(3600)
        if mode == "stderr":
            chunk = b"x" * (1 << 20)
            for _ in range(int(sys.argv[2])):
                os.write(2, chunk)
            os.write(2, b"\nlast words\n")
            sys.exit(4)
        if mode == "flood":
            while True:
                os.write(1, b"x" * 65536)
        if mode == "echo":
            text = json.dumps({"calls": [], "text": request["text"]}) + "\n"
            for i in range(0, len(text), 4096):
                sys.stdout.write(text[i:i + 4096])
                sys.stdout.flush()
            continue
        answer = expected_answer(request)
        out = json.dumps(answer)
        if mode == "surrogate":
            out = out[:-2] + '\\ud83d"}'
        elif mode == "overflow" and answer["calls"]:
            answer["calls"][0]["arguments"] = {"n": 0}
            out = json.dumps(answer).replace('{"n": 0}', '{"n": 1e999}', 1)
        if mode == "twice":
            sys.stdout.write(out + "\n" + out + "\n")
        elif mode == "twice-later":
            sys.stdout.write(out + "\n")
            sys.stdout.flush()
            time.sleep(0.1)
            sys.stdout.write(out + "\n")
        else:
            sys.stdout.write(out + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
