"""A fake tokenizer for the token-id tests: every control token one special id, a few
multi-character pieces, any other character one id of its own; and the deltas an engine would
send from its ids."""

from gemma4_lark import tokens


class FakeTokenizer:
    """Every control token one special id; a few multi-character pieces; any other character one
    id of its own (added as it is first met). `convert_tokens_to_ids` and `decode` as Hugging
    Face's: an unknown token is the unknown id, `skip_special_tokens` drops the control tokens."""

    PIECES = ("call:", "thought", "get_weather", "Paris", "city", "tool", "<|", "|>", "ca", "ll")
    UNKNOWN = 0

    def __init__(self):
        self.vocab = {"<unk>": self.UNKNOWN}
        for marker in tokens.CONTROL_TOKENS:
            self.vocab[marker] = len(self.vocab)
        self.special = frozenset(self.vocab[m] for m in tokens.CONTROL_TOKENS)
        for piece in self.PIECES:
            self.vocab[piece] = len(self.vocab)
        self.text_of = {i: t for t, i in self.vocab.items()}
        self.lookups = 0

    def convert_tokens_to_ids(self, token):
        self.lookups += 1
        return self.vocab.get(token, self.UNKNOWN)

    def decode(self, ids, skip_special_tokens=False):
        return "".join(self.text_of[i] for i in ids if not (skip_special_tokens and i in self.special))

    def _id(self, text):
        if text not in self.vocab:
            self.vocab[text] = len(self.vocab)
            self.text_of[self.vocab[text]] = text
        return self.vocab[text]

    def encode(self, text):
        """As a model writes `text`: each control token its special id, else the longest piece."""
        ids, i = [], 0
        by_length = sorted((t for t in self.vocab if len(t) > 1 and t != "<unk>"), key=len, reverse=True)
        while i < len(text):
            piece = next((t for t in by_length if text.startswith(t, i)), text[i])
            ids.append(self._id(piece))
            i += len(piece)
        return ids

    def spell(self, text):
        """`text` written with ordinary tokens only: a marker's characters, never its special token."""
        ids, i = [], 0
        pieces = sorted((p for p in self.PIECES), key=len, reverse=True)
        while i < len(text):
            piece = next((p for p in pieces if text.startswith(p, i)), text[i])
            ids.append(self._id(piece))
            i += len(piece)
        return ids


TOK = FakeTokenizer()  # one shared vocabulary: ids met in one test keep their meaning in the next


def deltas(ids, size, text_of=lambda chunk: TOK.decode(chunk)):
    """(text, ids) deltas of `size` ids each, each text made by `text_of`."""
    steps = [ids[i:i + size] for i in range(0, len(ids), size)] or [[]]
    return [(text_of(step), step) for step in steps]
