"""llguidance's matcher over the llguidance export: the reference the GBNF export is held to.
Same vocabulary as llama_matcher.py (tests/constrain_helpers.py's byte-level tokenizer)."""

from __future__ import annotations

import llguidance as llg
from constrain_helpers import ByteTokenizer, tokenizer
from verdict import Verdict

EOG = ByteTokenizer().eos_token_id


class LlgMatcher:
    def __init__(self, lark: str):
        self._matcher = llg.LLMatcher(tokenizer(), lark, log_level=0)
        assert not self._matcher.is_error(), self._matcher.get_error()

    def verdict(self, ids: list[int]) -> Verdict:
        self._matcher.reset()
        taken = self._matcher.try_consume_tokens(ids)
        return Verdict(taken, taken == len(ids) and self._matcher.is_accepting())

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
