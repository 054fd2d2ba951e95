"""llama.cpp's grammar matcher, through the driver (driver.cpp) compiled against the llama.cpp
that llama-cpp-python vendors: the GBNF export as llama.cpp's own reader and sampler take it.

The vocabulary is the byte-level one of the llguidance tests (tests/constrain_helpers.py): a
token per byte, a special token per Gemma marker, then the engine's end of generation (EOG).
"""

from __future__ import annotations

import subprocess

from constrain_helpers import ByteTokenizer
from verdict import Verdict

VOCAB = ByteTokenizer()
EOG = VOCAB.eos_token_id


class GrammarRefused(Exception):
    """llama.cpp's reader did not take the grammar (its message went to stderr)."""


class LlamaMatcher:
    """One driver process; `load` a grammar, then check token sequences or walk under its mask."""

    def __init__(self, driver: str):
        specials = [t.decode() for t in VOCAB.tokens[256:]]
        self._process = subprocess.Popen([driver, *specials], stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def _ask(self, request: bytes) -> str:
        assert self._process.stdin and self._process.stdout
        self._process.stdin.write(request)
        self._process.stdin.flush()
        answer = self._process.stdout.readline()
        if not answer:
            raise RuntimeError(f"the llama.cpp driver stopped (exit {self._process.wait()})")
        return answer.decode().rstrip("\n")

    def load(self, gbnf: str) -> None:
        data = gbnf.encode()
        if self._ask(b"grammar %d\n" % len(data) + data) != "ok":
            raise GrammarRefused(gbnf[:200])

    def verdict(self, ids: list[int]) -> Verdict:
        taken, complete = self._ask(f"check {len(ids)} {' '.join(map(str, ids))}\n".encode()).split()
        return Verdict(int(taken), complete == "1")

    # --- a walk under the mask (walks.py) ---------------------------------------------------
    def reset(self) -> None:
        assert self._ask(b"reset\n") == "ok"

    def allowed(self) -> list[int]:
        """The tokens the sampler's mask lets through now; EOG among them when the grammar may end."""
        return [int(t) for t in self._ask(b"mask\n").split()]

    def take(self, token: int) -> None:
        answer = self._ask(f"take {token}\n".encode())
        assert answer == "ok", (token, answer)

    def close(self) -> None:
        if self._process.stdin:
            self._process.stdin.close()
        self._process.wait()
