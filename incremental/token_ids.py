"""A delta's text and token ids as one text in which only the markers' special tokens are markers.

An engine hands a parser each delta's text and its token ids. The ids are the truth about
structure: a marker is the special token of a control token (`gemma4_lark.tokens.CONTROL_TOKENS`),
never the same characters written with ordinary tokens (a model quoting a page that holds
`<|tool_call>call:f{}<tool_call|>`). The text is the truth about content, except where it lacks
what the ids hold: a special token a server skipped (`skip_special_tokens=True`), or a delta whose
text is empty (speculative decoding: vLLM #49254, llama.cpp #25072).

`TokenMarkers.align(text, ids)` returns the delta's text as reconstructed, and where in it each
marker's special token stands (docs/streaming.md#token-ids says the rule).
"""

from __future__ import annotations

import weakref
from typing import Any, Mapping, Sequence

from gemma4_lark import tokens

__all__ = ["TokenMarkers"]

# Per tokenizer, its markers: a server makes a parser per response, and reads the ids once.
_READ: "weakref.WeakKeyDictionary[Any, TokenMarkers]" = weakref.WeakKeyDictionary()

# How many ids' own texts are kept (a vocabulary has some 262,000; a stream uses few of them).
_MAX_PIECES = 1 << 16

# Without these a tokenizer is not Gemma 4's: no call could ever be recognised by id.
_REQUIRED = (tokens.TOOL_CALL_OPEN, tokens.TOOL_CALL_CLOSE, tokens.STRING_DELIMITER)


class TokenMarkers:
    """The control tokens of a tokenizer's vocabulary, each by its id (`by_id`), and the tokenizer's
    `decode` for the ids whose text a delta lacks."""

    __slots__ = ("by_id", "ids", "decode", "_pieces")

    def __init__(self, by_id: dict[int, str], decode: Any):
        self.by_id = by_id
        self.ids = frozenset(by_id)
        self.decode = decode
        self._pieces: dict[int, str] = dict(by_id)  # each id's own text, as decoded alone

    @classmethod
    def of(cls, tokenizer: Any) -> "TokenMarkers":
        """`from_tokenizer`, read once per tokenizer (while it lives). Raises what that raises."""
        try:
            return _READ[tokenizer]
        except KeyError:
            pass
        except TypeError:  # a tokenizer that cannot be weakly referenced: read each time
            return cls.from_tokenizer(tokenizer)
        markers = _READ[tokenizer] = cls.from_tokenizer(tokenizer)
        return markers

    @classmethod
    def from_tokenizer(cls, tokenizer: Any) -> "TokenMarkers":
        """Reads each control token's id once: `convert_tokens_to_ids(token)` (Hugging Face's; a
        `tokenizers.Tokenizer`'s `token_to_id` too) and `decode(ids, skip_special_tokens=False)`.
        A token counts when it is one id that decodes to itself (a vocabulary without it maps it to
        its unknown token, or to None). Raises TypeError when the tokenizer lacks the methods,
        ValueError when it has no single token for `<|tool_call>`, `<tool_call|>` or `<|"|>`."""
        convert = getattr(tokenizer, "convert_tokens_to_ids", None) or getattr(tokenizer, "token_to_id", None)
        decode = getattr(tokenizer, "decode", None)
        if not callable(convert) or not callable(decode):
            raise TypeError(f"the tokenizer ({type(tokenizer).__name__}) needs convert_tokens_to_ids(token) and"
                            " decode(ids, skip_special_tokens=False)")
        by_id: dict[int, str] = {}
        for marker in tokens.CONTROL_TOKENS:
            token_id = convert(marker)
            if type(token_id) is int and decode([token_id], skip_special_tokens=False) == marker:
                by_id[token_id] = marker
        missing = [m for m in _REQUIRED if m not in by_id.values()]
        if missing:
            raise ValueError(f"the tokenizer has no single token for {', '.join(missing)}: not a Gemma 4 tokenizer")
        return cls(by_id, decode)

    @classmethod
    def from_vocab(cls, vocab: Mapping[str, int], decode: Any = None) -> "TokenMarkers":
        """The control tokens a vocabulary (`tokenizer.get_vocab()`: token text to id) holds, for
        the checks that read ids only (`integrations.base.MarkerIds`, a reasoning parser's). With
        no `decode`, `align` cannot read a delta that has ids and no text. Raises nothing."""
        return cls({vocab[m]: m for m in tokens.CONTROL_TOKENS if type(vocab.get(m)) is int}, decode)

    def id_of(self, marker: str) -> int | None:
        """The id of `marker`'s special token, or None when the vocabulary has none."""
        return next((token for token, text in self.by_id.items() if text == marker), None)

    def align(self, text: str, ids: Sequence[int],
              carry: Sequence[int] = ()) -> tuple[str, tuple[int, ...], tuple[int, ...]]:
        """(the delta's text as reconstructed, the offsets in it where a marker's special token
        starts, the ids to carry to the next delta). A delta with no marker id is its text as it
        is, with no marker in it, whatever it spells (the common case: no decoding). A delta with
        no text has its ids decoded, but for the bytes of a character not yet complete at its
        end: their ids are carried (`carry`, given back with the next delta) and decoded with the
        next delta's ids if that one has no text either; a delta with text has them in it.
        Raises nothing the tokenizer does not."""
        if text:
            if self.ids.isdisjoint(ids):
                return text, (), ()
        elif not ids:
            return "", (), tuple(carry)
        else:
            # every id's text is missing (speculative decoding), or an engine holds back a split
            # character: the ids' text, decoded
            segments = self._segments(list(carry) + list(ids) if carry else ids)
            held: tuple[int, ...] = ()
            decoded, marks = self._decoded(segments)
            if segments[-1][0] is None and decoded.endswith("\ufffd"):
                run = segments[-1][1]
                cut = self._incomplete(run)
                if cut:
                    held = tuple(run[-cut:])
                    del run[-cut:]
                    decoded, marks = self._decoded(segments)
            return decoded, marks, held
        marks = self._walk(text, ids)
        if marks is not None:
            return text, marks, ()
        segments = self._segments(ids)
        out: list[str] = []
        marks: list[int] = []
        size = 0
        # Forward: each run of ordinary ids as its text, each marker id as its text, as long as the
        # delta's text agrees; a marker whose text is not there was skipped and is put back.
        at, k = 0, 0
        while k < len(segments):
            marker, run = segments[k]
            if marker is not None:
                if text.startswith(marker, at) and not self._skipped(segments, k, text, at):
                    at += len(marker)
                marks.append(size)
                out.append(marker)
                size += len(marker)
            else:
                piece = self._run_at(run, text, at)
                if piece is None:
                    break
                out.append(piece)
                at += len(piece)
                size += len(piece)
            k += 1
        if k == len(segments):
            if at < len(text):  # text the engine released late (a character whose bytes were split)
                out.append(text[at:])
            return "".join(out), tuple(marks), ()
        # Backward from the end, the same: an engine that holds back part of a character makes the
        # text differ from the ids' only at its ends.
        tail: list[tuple[str | None, str]] = []
        end, stop = len(text), len(segments)
        while stop > k:
            marker, run = segments[stop - 1]
            if marker is not None:
                if text.endswith(marker, at, end):
                    end -= len(marker)
                tail.append((marker, marker))
            else:
                piece = self._run_before(run, text, at, end)
                if piece is None:
                    break
                tail.append((None, piece))
                end -= len(piece)
            stop -= 1
        # The ids in between cannot be placed in the text: what is left of it is content as it
        # stands (a delta with text is never decoded into more: text a server left out on purpose,
        # such as a thought before a marker it forwards, would come twice), and the markers among
        # those ids follow it.
        middle = text[at:end]
        out.append(middle)
        size += len(middle)
        for marker, _ in segments[k:stop]:
            if marker is not None:
                marks.append(size)
                out.append(marker)
                size += len(marker)
        for marker, piece in reversed(tail):
            if marker is not None:
                marks.append(size)
            out.append(piece)
            size += len(piece)
        return "".join(out), tuple(marks), ()

    # --- helpers --------------------------------------------------------------------------------
    def _walk(self, text: str, ids: Sequence[int]) -> tuple[int, ...] | None:
        """Where the markers are when the delta's text is its ids' texts, each id decoded alone,
        one after the other (the common delta with a marker); None when it is not."""
        pieces, by_id, decode = self._pieces, self.by_id, self.decode
        marks = []
        at = 0
        for token in ids:
            piece = pieces.get(token)
            if piece is None:
                piece = decode([token], skip_special_tokens=False)
                if len(pieces) < _MAX_PIECES:
                    pieces[token] = piece
            if not text.startswith(piece, at):
                return None
            if token in by_id:
                marks.append(at)
            at += len(piece)
        return tuple(marks) if at == len(text) else None

    def _segments(self, ids: Sequence[int]) -> list[tuple[str | None, list[int]]]:
        """The ids as (marker, []) for each marker id and (None, run) for each run of others."""
        by_id = self.by_id
        segments: list[tuple[str | None, list[int]]] = []
        run: list[int] = []
        for token in ids:
            marker = by_id.get(token)
            if marker is None:
                run.append(token)
                continue
            if run:
                segments.append((None, run))
                run = []
            segments.append((marker, []))
        if run:
            segments.append((None, run))
        return segments

    def _decoded(self, segments) -> tuple[str, tuple[int, ...]]:
        out: list[str] = []
        marks: list[int] = []
        size = 0
        for marker, run in segments:
            piece = marker if marker is not None else self._run_text(run)
            if marker is not None:
                marks.append(size)
            out.append(piece)
            size += len(piece)
        return "".join(out), tuple(marks)

    def _run_text(self, run: list[int]) -> str:
        """The run's text: its ids' own texts joined, unless one is part of a character (U+FFFD):
        then the run decoded whole."""
        pieces = self._pieces
        texts = []
        for token in run:
            piece = pieces.get(token)
            if piece is None:
                piece = self.decode([token], skip_special_tokens=False)
                if len(pieces) < _MAX_PIECES:
                    pieces[token] = piece
            if "\ufffd" in piece:
                return self.decode(run, skip_special_tokens=False)
            texts.append(piece)
        return "".join(texts)

    def _incomplete(self, run: list[int]) -> int:
        """How many ids at the end of `run`, whose text ends in U+FFFD, are the first bytes of a
        character not complete yet, at most 3 (a character is at most 4 bytes); 0 if none."""
        decode = self.decode
        for cut in range(1, min(3, len(run)) + 1):
            if not decode(run[:-cut], skip_special_tokens=False).endswith("\ufffd"):
                return cut
        return 0

    def _texts(self, run: list[int]):
        """The run's text, with the special tokens that are not markers and without (a server that
        skips special tokens drops those too)."""
        kept = self.decode(run, skip_special_tokens=False)
        yield kept
        skipped = self.decode(run, skip_special_tokens=True)
        if skipped != kept:
            yield skipped

    def _run_at(self, run: list[int], text: str, at: int) -> str | None:
        for piece in self._texts(run):
            if text.startswith(piece, at):
                return piece
        return None

    def _run_before(self, run: list[int], text: str, at: int, end: int) -> str | None:
        for piece in self._texts(run):
            if text.endswith(piece, at, end):
                return piece
        return None

    def _skipped(self, segments, k: int, text: str, at: int) -> bool:
        """Whether the marker of segments[k], though the text at `at` spells it, was skipped: the
        run after it is only there when the marker's characters are its own (ordinary tokens that
        spell the marker right after the skipped special token)."""
        if k + 1 >= len(segments) or segments[k + 1][0] is not None:
            return False
        run = segments[k + 1][1]
        return self._run_at(run, text, at + len(segments[k][0])) is None and self._run_at(run, text, at) is not None
