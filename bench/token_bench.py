"""Markers by token id (issue 18): the cost per delta of `feed(text, token_ids=ids)` against
`feed(text)` on the same deltas. Prints figures; asserts nothing. Target: token mode no more than
1.5x text mode per delta.

Usage: python bench/token_bench.py [--quick]

The output: prose, thoughts and calls (about 5% of its tokens are markers), tokenized as a model
writes it (every control token one special id, other text in pieces of 1-4 characters), streamed
one token per delta as an engine does, then in deltas of 4 tokens (speculative decoding), and
once more with every other delta's text missing. Each figure is the best of nine runs in one
process (CPU time, runs interleaved); the ratio compares runs made side by side.
"""

from __future__ import annotations

import random
import sys
import time

from gemma4_incremental import StreamParser
from gemma4_incremental.openai import OpenAIStream
from gemma4_lark import tokens

QUICK = "--quick" in sys.argv
D = tokens.STRING_DELIMITER
WORDS = ("the model reads a file and then writes a short answer with some numbers 42 and "
         "symbols like a < b, {braces} and [brackets] that are not blocks").split()


class Tokenizer:
    """Control tokens one id each; other text in pieces of up to 4 characters, each an id."""

    def __init__(self):
        self.vocab = {m: i for i, m in enumerate(tokens.CONTROL_TOKENS)}
        self.special = frozenset(self.vocab.values())
        self.text_of = {i: m for m, i in self.vocab.items()}

    def convert_tokens_to_ids(self, token):
        return self.vocab.get(token, -1)

    def decode(self, ids, skip_special_tokens=False):
        return "".join(self.text_of[i] for i in ids if not (skip_special_tokens and i in self.special))

    def encode(self, text, rng):
        ids, i = [], 0
        while i < len(text):
            marker = next((m for m in tokens.CONTROL_TOKENS if text.startswith(m, i)), None) if text[i] == "<" else None
            piece = marker or text[i:i + rng.randint(1, 4)].split("<")[0] or "<"
            if piece not in self.vocab:
                self.vocab[piece] = len(self.vocab)
                self.text_of[self.vocab[piece]] = piece
            ids.append(self.vocab[piece])
            i += len(piece)
        return ids


def output(rng: random.Random, size: int) -> str:
    def prose(n):
        return " ".join(rng.choice(WORDS) for _ in range(n))
    parts, total, n = [], 0, 0
    while total < size:
        r = rng.random()
        if r < 0.2:
            piece = "<|channel>thought\n" + prose(40) + "<channel|>"
        elif r < 0.6:
            piece = (f"<|tool_call>call:write_file{{path:{D}src/{n}.py{D},content:{D}{prose(30)}{D},"
                     f"mode:overwrite,n:{n},opts:{{dry:false,tags:[a,b]}}}}<tool_call|>")
            n += 1
        else:
            piece = prose(120) + "\n"
        parts.append(piece)
        total += len(piece)
    return "".join(parts)


def run(deltas, tokenizer, by_id: bool, openai: bool) -> float:
    parser = StreamParser.for_tokenizer(tokenizer) if by_id else StreamParser()
    target = OpenAIStream(parser) if openai else parser
    feed = target.feed
    start = time.process_time()  # CPU time: the machine is shared
    if by_id:
        for text, ids in deltas:
            feed(text, token_ids=ids)
    else:
        for text, _ in deltas:
            feed(text)
    target.flush()
    return time.process_time() - start


def main() -> None:
    rng = random.Random(18)
    tokenizer = Tokenizer()
    text = output(rng, 100_000 if QUICK else 400_000)
    ids = tokenizer.encode(text, rng)
    markers = sum(i in tokenizer.special for i in ids)
    print(f"output: {len(text):,} characters, {len(ids):,} tokens, {markers:,} of them markers")
    for label, size, missing in (("1 token per delta", 1, False), ("4 tokens per delta", 4, False),
                                 ("4 per delta, every other text missing", 4, True)):
        steps = [ids[i:i + size] for i in range(0, len(ids), size)]
        deltas = [("" if missing and n % 2 else tokenizer.decode(s), s) for n, s in enumerate(steps)]
        # text mode reads the whole text (it cannot know text that is missing)
        text_deltas = [(tokenizer.decode(s), s) for s in steps]
        for openai in (False, True):
            by_text = by_id = float("inf")
            for _ in range(9):  # side by side, the best of each
                by_text = min(by_text, run(text_deltas, tokenizer, False, openai))
                by_id = min(by_id, run(deltas, tokenizer, True, openai))
            where = "OpenAIStream" if openai else "StreamParser"
            print(f"{label:>40}, {where}: text {by_text / len(deltas) * 1e6:6.2f} µs/delta,"
                  f" token ids {by_id / len(deltas) * 1e6:6.2f} µs/delta, ratio {by_id / by_text:.2f}x")


if __name__ == "__main__":
    main()
