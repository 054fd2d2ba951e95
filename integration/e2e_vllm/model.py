"""A tiny random-weight Gemma 4 text model and its tokenizer, written into a folder vLLM serves.

The weights are random (seeded): the model writes noise, and the request's grammar (the library's
output-scope export) turns that noise into random but valid Gemma 4. The tokenizer is byte-level
BPE with no merges (one token per byte) plus every marker of the format as a special token, so the
markers are single tokens as in Gemma's own tokenizer; its chat template is the official one.
Runs in vLLM's venv (torch, transformers, tokenizers). Nothing here is committed: the folder goes
under .cache/.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Callable, Sequence

from gemma4_lark import tokens

# Gemma's own numbering of its first four tokens; the format's other markers follow.
FIRST = ("<pad>", tokens.EOS, tokens.BOS, "<unk>")
# The turn ends at either: <turn|> closes the model's turn, <eos> ends the sequence.
STOP = (tokens.EOS, tokens.TURN_CLOSE)
# What the folder's `build.json` records: a folder built from other settings is built again.
SETTINGS = {"layers": ["sliding_attention", "full_attention"], "hidden": 64, "head_dim": 64, "heads": 1,
            "kv_heads": 1, "intermediate": 128, "max_positions": 2048, "sliding_window": 512, "seed": 0, "per_layer_input": 0}


def special_tokens() -> list[str]:
    return list(FIRST) + [t for t in tokens.CONTROL_TOKENS if t not in FIRST]


def build_tokenizer(template: str):
    """A `PreTrainedTokenizerFast`: the special tokens (ids 0...), then the 256 byte symbols."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    specials = special_tokens()
    vocab = {token: i for i, token in enumerate(specials)}
    for symbol in sorted(pre_tokenizers.ByteLevel.alphabet()):
        vocab[symbol] = len(vocab)
    backend = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    backend.decoder = decoders.ByteLevel()
    backend.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in specials])
    return PreTrainedTokenizerFast(tokenizer_object=backend, bos_token=tokens.BOS, eos_token=tokens.EOS,
                                   pad_token="<pad>", unk_token="<unk>", chat_template=template)


def build(folder: Path, template: str) -> Path:
    """Write the model and tokenizer into `folder` (unless it already holds this build)."""
    stamp = folder / "build.json"
    wanted = dict(SETTINGS, template_sha256=hashlib.sha256(template.encode()).hexdigest())
    if stamp.exists() and json.loads(stamp.read_text(encoding="utf-8")) == wanted:
        return folder
    import torch
    from transformers import Gemma4ForCausalLM, Gemma4TextConfig, GenerationConfig

    folder.mkdir(parents=True, exist_ok=True)
    tokenizer = build_tokenizer(template)
    tokenizer.save_pretrained(folder)
    vocab = tokenizer.get_vocab()
    stop_ids = [vocab[t] for t in STOP]
    s = SETTINGS
    config = Gemma4TextConfig(
        vocab_size=len(vocab), hidden_size=s["hidden"], intermediate_size=s["intermediate"],
        num_hidden_layers=len(s["layers"]), layer_types=list(s["layers"]), num_attention_heads=s["heads"],
        num_key_value_heads=s["kv_heads"], head_dim=s["head_dim"], global_head_dim=s["head_dim"],
        sliding_window=s["sliding_window"], max_position_embeddings=s["max_positions"],
        pad_token_id=vocab["<pad>"], bos_token_id=vocab[tokens.BOS], eos_token_id=stop_ids,
        hidden_size_per_layer_input=s["per_layer_input"], vocab_size_per_layer_input=len(vocab), dtype="float32")
    torch.manual_seed(s["seed"])
    model = Gemma4ForCausalLM(config).to(torch.float32)
    model.save_pretrained(folder, safe_serialization=True)
    GenerationConfig(bos_token_id=vocab[tokens.BOS], eos_token_id=stop_ids,
                     pad_token_id=vocab["<pad>"]).save_pretrained(folder)
    stamp.write_text(json.dumps(wanted), encoding="utf-8")
    return folder


def decoder(folder: Path) -> Callable[[Sequence[int], Sequence[int]], str]:
    """`decode(prompt_ids, output_ids)`: the output's text as vLLM's parsers got it, special tokens
    kept. vLLM detokenizes incrementally with tokenizers' `DecodeStream` (primed with the prompt),
    which holds back bytes that do not yet form a character and leaves out the stop token that
    ended the output: an output cut inside a character never sends that character's bytes. The
    same stream is run here, then the stop token's text is put back (a stop marker: it is no
    content, and parse_output reads it as the turn's end)."""
    from tokenizers import Tokenizer
    from tokenizers.decoders import DecodeStream

    backend = Tokenizer.from_file(str(folder / "tokenizer.json"))
    stop = {backend.token_to_id(t): t for t in STOP}

    def decode(prompt_ids: Sequence[int], output_ids: Sequence[int]) -> str:
        ids = list(output_ids)
        last = stop.get(ids[-1]) if ids else None
        if last is not None:
            ids.pop()
        stream = DecodeStream(ids=list(prompt_ids), skip_special_tokens=False)
        text = "".join(stream.step(backend, i) or "" for i in ids)
        return text + (last or "")

    return decode


def deltas(folder: Path) -> Callable[[Sequence[int], Sequence[int]], list[tuple[str, list[int]]]]:
    """`deltas(prompt_ids, output_ids)`: the (text, token ids) of each step as vLLM hands them to a
    streaming parser: one token a step, its text from the same `DecodeStream` (empty while a
    character is incomplete), and the stop token that ended the output as its id alone (its text
    is left out of the output). The streamed reference reads these by token id, as the plugin does."""
    from tokenizers import Tokenizer
    from tokenizers.decoders import DecodeStream

    backend = Tokenizer.from_file(str(folder / "tokenizer.json"))
    stop = {backend.token_to_id(t) for t in STOP}

    def steps(prompt_ids: Sequence[int], output_ids: Sequence[int]) -> list[tuple[str, list[int]]]:
        ids = list(output_ids)
        last = ids.pop() if ids and ids[-1] in stop else None
        stream = DecodeStream(ids=list(prompt_ids), skip_special_tokens=False)
        out = [(stream.step(backend, i) or "", [i]) for i in ids]
        return out + ([("", [last])] if last is not None else [])

    return steps


def tokenizer(folder: Path):
    """The model's tokenizer (tokenizers' own object: `token_to_id` and `decode`, which
    `StreamParser.for_tokenizer` takes)."""
    from tokenizers import Tokenizer

    return Tokenizer.from_file(str(folder / "tokenizer.json"))


def prompt_text(folder: Path) -> Callable[[Sequence[int]], str]:
    """The prompt's token ids as text, special tokens kept."""
    from tokenizers import Tokenizer

    backend = Tokenizer.from_file(str(folder / "tokenizer.json"))
    return lambda ids: backend.decode(list(ids), skip_special_tokens=False)


def vocab(folder: Path) -> dict[str, int]:
    from tokenizers import Tokenizer

    return Tokenizer.from_file(str(folder / "tokenizer.json")).get_vocab(with_added_tokens=True)
