"""The training corpus: cleaned English Project Gutenberg books, read from the registered shards.

The corpus ``gutenberg-top-authors`` is 8 training shards and one validation shard of xz-compressed
JSON lines, one whole book per line (``{"id", "ebook", "title", "author", "source_path", "git_blob",
"raw_sha256", "text"}``), registered in ``data/registry/corpus.toml``. :func:`books` yields the records
of a split after the registry has checked each shard's sha256. ``corpus_build`` rebuilds the shards.
"""

from __future__ import annotations

import json
import lzma
from collections.abc import Iterator
from pathlib import Path

from scalinglab.errors import UserError

CORPUS = "gutenberg-top-authors"
SOURCE_REPO = "https://github.com/rcdm-uga/Gutenberg_Text"
SOURCE_COMMIT = "a0b16d35a9851168ce9ac649851c17b7ab08d48e"
N_TRAIN_SHARDS = 8
SPLITS = ("train", "val")


def shard_names(split: str) -> list[str]:
    """Registry names of a split's shards, in order."""
    if split == "train":
        return [f"gutenberg-train-{i:02d}" for i in range(N_TRAIN_SHARDS)]
    if split == "val":
        return ["gutenberg-val"]
    raise UserError(f"corpus split must be one of {', '.join(SPLITS)}, not {split!r}")


def read_jsonl(path: Path | str) -> Iterator[dict]:
    """Records of one JSON-lines file, plain or .xz-compressed."""
    path = Path(path)
    opener = lzma.open if path.suffix == ".xz" else open
    with opener(path, "rt", encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                yield json.loads(line)
            except json.JSONDecodeError as exc:
                raise UserError(f"{path}: line {lineno} is not JSON ({exc.msg})") from None


def books(split: str = "train", *, max_bytes: int | None = None) -> Iterator[dict]:
    """The split's book records in shard order, stopping once ``max_bytes`` of text are out."""
    from scalinglab import data

    seen = 0
    for name in shard_names(split):
        for book in read_jsonl(data.locate(name)):
            yield book
            seen += len(book["text"].encode())
            if max_bytes is not None and seen >= max_bytes:
                return
