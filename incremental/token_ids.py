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
from gemma4_lark.family import WrongModelFamilyError

__all__ = ["TokenMarkers"]

# Per tokenizer, its markers: a server makes a parser per response, and reads the ids once.
_READ: "weakref.WeakKeyDictionary[Any, TokenMarkers]" = weakref.WeakKeyDictionary()

# How many ids' own texts are kept (a vocabulary has some 262,000; a stream uses few of them).
_MAX_PIECES = 1 << 16

# What a decoding has for bytes that are no complete character: an engine's detokenizer holds
# text back while it ends in it.
_REPLACEMENT = "\ufffd"

# A character is at most 4 bytes and an id stands for at least one: whether a text ends inside a
# character shows in the decoding of its last 4 ids.
_CHARACTER_IDS = 4

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
        `WrongModelFamilyError` (a ValueError) when it has no single token for `<|tool_call>`,
        `<tool_call|>` or `<|"|>`."""
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
            raise WrongModelFamilyError(f"the tokenizer has no single token for {', '.join(missing)}: not a Gemma 4"
                                        " tokenizer")
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
              carry: Sequence[int] = ()) -> tuple[str, tuple[int, ...], Sequence[int]]:
        """(the delta's text as reconstructed, the offsets in it where a marker's special token
        starts, the ids to carry to the next delta). A delta with no marker id is its text as it
        is, with no marker in it, whatever it spells (the common case: no decoding). A delta with
        no text has its ids decoded, but for those an engine's detokenizer holds back: the ids
        after the text so far last ended in a complete character other than U+FFFD (one not
        complete yet, or a real U+FFFD it cannot tell from one), markers included (a detokenizer
        that skips them holds them too). Those are carried (`carry`: what the last call returned,
        given back with the next delta; a list is extended in place), and go with the next delta:
        decoded with its ids if it has no text either, else aligned with them (the engine's text
        then holds their text). A delta with text is aligned with its ids but those held at its
        end, a marker among which is carried. Raises nothing the tokenizer does not."""
        if text:
            if carry:
                ids = list(carry) + list(ids)
            if self.ids.isdisjoint(ids):
                return text, (), ()
        elif not ids:
            return "", (), carry
        else:
            return self._without_text(ids, carry)
        marks = self._walk(text, ids)
        if marks is not None:
            return text, marks, ()
        # The ids an engine's detokenizer holds back at the end of the delta (those after its text
        # last ended in a complete character other than U+FFFD) are not in its text: the rest is
        # aligned with it, and their text is the next delta's.
        upto = self._complete((), ids, markers_written=True)
        if 0 < upto < len(ids) and not text.endswith(self.decode(ids[upto:], skip_special_tokens=False)):
            ids = ids[:upto]
        # One that skips markers holds them with those ids (the text, markers left out, ends in
        # U+FFFD before them): they go with the next delta, which places them after that text.
        if ids[-1] in self.by_id and not text.endswith(self.by_id[ids[-1]]):
            upto = self._complete((), ids)
            if 0 < upto < len(ids):
                return (*self._placed(text, ids[:upto]), list(ids[upto:]))
        return (*self._placed(text, ids), ())

    def decoded(self, ids: Sequence[int]) -> tuple[str, tuple[int, ...]]:
        """(the text of `ids`, where a marker starts in it), as a delta with no text has it, held
        ids and all. Raises nothing the tokenizer does not."""
        return self._decoded(self._segments(ids)) if ids else ("", ())

    def markers_in(self, carry: Sequence[int]) -> tuple[str, tuple[int, ...]]:
        """What a stream's end makes of the ids still carried: their markers, one after the other,
        and where each starts (their other ids are text the engine never sent: a character the
        output did not complete). Raises nothing."""
        return _joined([(self.by_id[token], self.by_id[token]) for token in carry if token in self.by_id])

    # --- helpers --------------------------------------------------------------------------------
    def _placed(self, text: str, ids: Sequence[int]) -> tuple[str, tuple[int, ...]]:
        """align() of a delta with text whose ids are not its text, id by id (rule 3 of
        docs/streaming.md#token-ids)."""
        segments = self._segments(ids)
        # Forward: each run of ordinary ids as its text, each marker id as its text, as long as the
        # delta's text agrees; a marker whose text is not there was skipped and is put back.
        ahead: list[tuple[str | None, str]] = []
        at, k = 0, 0
        while k < len(segments):
            marker, run = segments[k]
            if marker is not None:
                if text.startswith(marker, at) and not self._skipped(segments, k, text, at):
                    at += len(marker)
                ahead.append((marker, marker))
            else:
                piece = self._run_at(run, text, at)
                if piece is None:
                    break
                ahead.append((None, piece))
                at += len(piece)
            k += 1
        if k == len(segments) and at == len(text):
            return _joined(ahead)
        # Backward from the end, the same: an engine's detokenizer releases the text it held back
        # at the start of a later delta, before the text of that delta's ids. When every id is
        # placed so, the text before them is that late text.
        stop, end, behind = self._walk_back(segments, 0, text, 0)
        if stop == 0:
            return _joined([(None, text[:end])] + behind[::-1])
        if k == len(segments):  # text after all of the ids' (released late, at the end)
            return _joined(ahead + [(None, text[at:])])
        # Else from the end down to where the forward walk stopped. The ids in between cannot be
        # placed in the text: what is left of it is content as it stands (a delta with text is
        # never decoded into more: text a server left out on purpose, such as a thought before a
        # marker it forwards, would come twice), and the markers among those ids follow it.
        stop, end, behind = self._walk_back(segments, k, text, at)
        between = [(marker, marker) for marker, _ in segments[k:stop] if marker is not None]
        return _joined(ahead + [(None, text[at:end])] + between + behind[::-1])

    def _walk_back(self, segments, k: int, text: str, at: int):
        """(the first segment placed, where its text starts, the segments placed as (marker, text)
        from the last) walking from the end of `text` back to `at` and of `segments` back to `k`.
        The first run may lack the U+FFFD of a character an engine released before it, and a
        leading space (a detokenizer that writes one the ids' text has not, or the reverse)."""
        behind: list[tuple[str | None, str]] = []
        end, stop = len(text), len(segments)
        while stop > k:
            marker, run = segments[stop - 1]
            if marker is not None:
                if text.endswith(marker, at, end):
                    end -= len(marker)
                behind.append((marker, marker))
            else:
                piece = self._run_before(run, text, at, end, stop == 1)
                if piece is None:
                    break
                behind.append((None, piece))
                end -= len(piece)
            stop -= 1
        return stop, end, behind

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
            if _REPLACEMENT in piece:
                return self.decode(run, skip_special_tokens=False)
            texts.append(piece)
        return "".join(texts)

    def _without_text(self, ids: Sequence[int], carry: Sequence[int]) -> tuple[str, tuple[int, ...], Sequence[int]]:
        """align() of a delta with no text: its ids decoded after those carried, but for those an
        engine's detokenizer holds back at the end (`_complete`)."""
        if len(carry) < _CHARACTER_IDS:  # (the usual: nothing held, or a part of one character)
            segments = self._segments(list(carry) + list(ids) if carry else ids)
            decoded, marks = self._decoded(segments)
            end = len(decoded)
            for marker, _ in reversed(segments):  # (the text before the markers at the end)
                if marker is None:
                    break
                end -= len(marker)
            if not decoded.endswith(_REPLACEMENT, 0, end):
                return decoded, marks, ()
        upto = self._complete(carry, ids)
        if not upto:  # nothing complete yet: the engine holds all of it too
            held = carry if type(carry) is list else list(carry)
            held.extend(ids)
            return "", (), held
        decoded, marks = self._decoded(self._segments(list(carry) + list(ids[:upto])))
        return decoded, marks, list(ids[upto:])

    def _complete(self, carry: Sequence[int], ids: Sequence[int], markers_written: bool = False) -> int:
        """The most of `ids` after which the text of `carry` and them, markers left out (or
        written: `markers_written`), does not end in U+FFFD (an engine's detokenizer releases the
        text up to there and holds the rest back), or 0. The carried ids start where the text was
        complete, and it was not after any of them. A character never spans a marker, and is at
        most `_CHARACTER_IDS` ids: each test decodes that many at most, so a long held run costs
        linear time."""
        by_id, decode = self.by_id, self.decode
        upto = len(ids)
        while upto:
            if ids[upto - 1] in by_id:
                if markers_written:
                    return upto
                upto -= 1  # as complete as the text before it
                continue
            window = list(ids[max(0, upto - _CHARACTER_IDS):upto])
            if len(window) < _CHARACTER_IDS:
                window[:0] = carry[max(0, len(carry) - _CHARACTER_IDS + len(window)):]
            for k in range(len(window) - 1, -1, -1):
                if window[k] in by_id:
                    del window[:k + 1]
                    break
            if not decode(window, skip_special_tokens=False).endswith(_REPLACEMENT):
                break
            upto -= 1
        else:
            if carry:
                return 0
        while upto < len(ids) and ids[upto] in by_id:  # the markers right after it
            upto += 1
        return upto

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

    def _run_before(self, run: list[int], text: str, at: int, end: int, first: bool = False) -> str | None:
        for piece in self._texts(run):
            if text.endswith(piece, at, end):
                return piece
        if first:  # (`_walk_back` says what the start of a delta may lack)
            for piece in self._texts(run):
                piece = piece.lstrip(" " + _REPLACEMENT)
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


def _joined(pieces: list[tuple[str | None, str]]) -> tuple[str, tuple[int, ...]]:
    """The text of a delta's pieces, (marker or None, its text), and where its markers start."""
    marks = []
    size = 0
    for marker, piece in pieces:
        if marker is not None:
            marks.append(size)
        size += len(piece)
    return "".join(piece for _, piece in pieces), tuple(marks)
