"""llguidance's matcher over the llguidance export: the reference the GBNF export is held to.
Same vocabulary as llama_matcher.py (tests/constrain_helpers.py's byte-level tokenizer).

llama.cpp's sampler reads every token by its text, special tokens spelled out (the vocabulary's
piece cache is built with `special = true`), so wherever a grammar has text a special token
matches as that text; the grammar's token elements (`<|tool_call>`) match it by id. llguidance
never reads a special token as text. `verdict_reading_specials_as_text` is llguidance's verdict
under llama.cpp's reading: the token sequence is accepted when some spelling of it, each special
token kept or written as its bytes, is."""

from __future__ import annotations

import llguidance as llg
from constrain_helpers import FIRST_SPECIAL, ByteTokenizer, tokenizer
from verdict import Verdict

VOCAB = ByteTokenizer()
EOG = VOCAB.eos_token_id
SEARCH_BUDGET = 4096  # spellings tried per string before giving up (an undecided verdict)


class LlgMatcher:
    def __init__(self, lark: str):
        self._matcher = llg.LLMatcher(tokenizer(), lark, log_level=0)
        assert not self._matcher.is_error(), self._matcher.get_error()

    def verdict(self, ids: list[int]) -> Verdict:
        self._matcher.reset()
        taken = self._matcher.try_consume_tokens(ids)
        return Verdict(taken, taken == len(ids) and self._matcher.is_accepting())

    def verdict_reading_specials_as_text(self, ids: list[int]) -> Verdict | None:
        """The verdict when each special token may also be read as its text, as llama.cpp's
        sampler reads it: a depth-first search over the spellings, the token tried first. TAKEN
        is the furthest any spelling gets; None when SEARCH_BUDGET spellings did not decide."""
        self._matcher.reset()
        pending = [(self._matcher.deep_copy(), 0)]
        furthest = 0
        for _ in range(SEARCH_BUDGET):
            if not pending:
                return Verdict(furthest, False)
            m, i = pending.pop()
            j = i  # the run of plain tokens up to the next special one
            while j < len(ids) and not FIRST_SPECIAL <= ids[j] < EOG:
                j += 1
            taken = m.try_consume_tokens(ids[i:j]) if j > i else 0
            furthest = max(furthest, i + taken)
            if i + taken < j:
                continue
            if j == len(ids):
                if m.is_accepting():
                    return Verdict(len(ids), True)
                continue
            for spelling in (list(VOCAB.tokens[ids[j]]), [ids[j]]):  # a stack: the token is tried first
                after = m.deep_copy()
                if after.try_consume_tokens(spelling) == len(spelling):
                    furthest = max(furthest, j + 1)
                    pending.append((after, j + 1))
        return None

    # --- a walk under the mask (walks.py) ---------------------------------------------------
    def reset(self) -> None:
        self._matcher.reset()

    def allowed(self) -> list[int]:
        """The tokens the mask lets through now; EOG among them when the grammar may end."""
        mask = self._matcher.compute_bitmask()
        n = tokenizer().vocab_size
        out = [i for i in range(n) if mask[i // 8] >> (i % 8) & 1]
        if self._matcher.is_accepting() and EOG not in out:
            out.append(EOG)
        return out

    def take(self, token: int) -> None:
        assert self._matcher.consume_token(token), self._matcher.get_error()
