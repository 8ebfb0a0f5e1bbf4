"""Builds the Memo-Trap probe set from the text a sweep profile trains on.

Run as ``python -m scalinglab.inverse_scaling.memo_probes_build`` (``--help`` for the options).

The counted text is exactly what the profile's token cache holds, ``corpus.books("train",
max_bytes=profile.train_bytes)``, so a phrase's count is its count in the models' training data. The
``never`` bin draws from a training shard no book of which is counted (by default the last, which the
``cpu``, ``cpu-ladder``, ``cpu-inverse`` and ``gpu-quick`` profiles never read), and the control bins
avoid phrases of the whole validation split. Prints a JSON summary (options, sizes, the shards read, the file's sha256).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

from scalinglab.errors import UserError
from scalinglab.inverse_scaling.memo_probes import ProbeOptions, build_probes

DEFAULT_OUT = "data/probes/memo_probes.jsonl"
DEFAULT_OPTIONS = ProbeOptions()


def counted_shards(max_bytes: int | None) -> dict[str, int]:
    """Books read from each training shard by ``corpus.books("train", max_bytes=...)`` (same stopping rule)."""
    from scalinglab import data
    from scalinglab.training import corpus

    out: dict[str, int] = {}
    seen = 0
    for name in corpus.shard_names("train"):
        for book in corpus.read_jsonl(data.locate(name)):
            out[name] = out.get(name, 0) + 1
            seen += len(book["text"].encode())
            if max_bytes is not None and seen >= max_bytes:
                return out
    return out


def _take_bytes(books, max_bytes: int):
    seen = 0
    for book in books:
        yield book
        seen += len(book["text"].encode())
        if seen >= max_bytes:
            return


def build(profile: str = "cpu-inverse", heldout_shard: str = "gutenberg-train-07", heldout_bytes: int = 5_000_000,
          opts: ProbeOptions = DEFAULT_OPTIONS, out: Path | str = DEFAULT_OUT, progress: bool = True) -> dict:
    """Build, write ``out`` and return the summary."""
    from scalinglab import data
    from scalinglab.training import corpus
    from scalinglab.training.sweep.plan import get_profile

    prof = get_profile(profile)
    shards = counted_shards(prof.train_bytes)
    if heldout_shard in shards:
        raise UserError(f"held-out shard {heldout_shard} is read by profile {profile} ({prof.train_bytes} bytes): "
                        "choose a later shard")
    train_ids = {b["id"] for b in corpus.books("train", max_bytes=prof.train_bytes)}
    held_books = list(_take_bytes(corpus.read_jsonl(data.locate(heldout_shard)), heldout_bytes))
    overlap = train_ids & {b["id"] for b in held_books}
    if overlap:
        raise UserError(f"held-out books also in the counted text: {sorted(overlap)[:3]}")
    probes = build_probes((b["text"] for b in corpus.books("train", max_bytes=prof.train_bytes)),
                          (b["text"] for b in held_books), (b["text"] for b in corpus.books("val")),
                          opts, progress=progress)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    probes.write(out)
    return dict(probes.to_dict(), profile=profile, train_bytes=prof.train_bytes, counted_shards=shards,
                heldout_shard=heldout_shard, heldout_bytes=heldout_bytes, heldout_books=len(held_books),
                val_shards=corpus.shard_names("val"), out=str(out), items=len(probes.items),
                file_bytes=out.stat().st_size, sha256=hashlib.sha256(out.read_bytes()).hexdigest())


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m scalinglab.inverse_scaling.memo_probes_build", description=__doc__)
    p.add_argument("--profile", default="cpu-inverse", help="sweep profile whose training text is counted")
    p.add_argument("--heldout-shard", default="gutenberg-train-07", help="registry name of the never-bin source")
    p.add_argument("--heldout-bytes", type=int, default=5_000_000)
    p.add_argument("--n", type=int, default=ProbeOptions.n, help="words per phrase (prefix + ending)")
    p.add_argument("--per-bin", type=int, default=ProbeOptions.per_bin)
    p.add_argument("--seed", type=int, default=ProbeOptions.seed)
    p.add_argument("--max-bigram-ratio", type=float, default=None,
                   help="keep only items whose distractor's bigram count after the prefix's last word is within "
                        "this factor of the ending's (default: no limit)")
    p.add_argument("--out", default=DEFAULT_OUT)
    a = p.parse_args(argv)
    try:
        summary = build(a.profile, a.heldout_shard, a.heldout_bytes,
                        ProbeOptions(n=a.n, per_bin=a.per_bin, seed=a.seed, max_bigram_ratio=a.max_bigram_ratio), a.out)
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(summary, indent=1, default=str))
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
