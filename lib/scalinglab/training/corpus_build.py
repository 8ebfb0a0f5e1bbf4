"""Rebuilding the training corpus from the public Gutenberg repository (``python -m
scalinglab.training.corpus_build``).

Reading. The corpus ``gutenberg-top-authors`` is 8 training shards and one
validation shard of xz-compressed JSON lines, one whole book per line
(``{"id", "ebook", "title", "author", "source_path", "git_blob", "raw_sha256",
"text"}``), registered in ``registry/corpus.toml``. :func:`books` yields the
records of a split after the registry has checked each shard's sha256.

Rebuilding. The shards are our own derived files. :func:`build` makes them
again from a git snapshot of the public repository ``rcdm-uga/Gutenberg_Text``
at :data:`SOURCE_COMMIT`, byte-identically for the same Python 3.11 and xz 5.4::

    git clone --mirror https://github.com/rcdm-uga/Gutenberg_Text gt.git
    python -m scalinglab.training.corpus_build build gt.git a0b16d35a9851168ce9ac649851c17b7ab08d48e out/

The steps (the mirror's PROVENANCE.md gives the numbers): list the ``.txt``
blobs at the commit; strip the Project Gutenberg header, footer, credits and
every paragraph naming PG; rejoin hard-wrapped prose; drop books without a
start marker, non-English books and books under 2,000 words; drop near
duplicates by sampled 8-word shingles; shuffle with a fixed seed and split
into val and train shards by bytes; write ``manifest.tsv`` with every blob's fate.
"""

from __future__ import annotations

import collections
import hashlib
import json
import random
import re
import subprocess
import unicodedata
from dataclasses import dataclass
from pathlib import Path

from scalinglab.errors import UserError
from scalinglab.training.corpus import CORPUS, N_TRAIN_SHARDS, SOURCE_COMMIT, SOURCE_REPO, SPLITS  # noqa: F401

# --- rebuilding from the public repository -------------------------------------------------

START = re.compile(r"^\s*\*+\s*START OF (THE|THIS) PROJECT GUTENBERG|^\s*\*?\s*END\s*\*?\s*THE SMALL PRINT", re.I)
END = re.compile(r"^\s*\*+\s*END OF (THE|THIS) PROJECT GUTENBERG|^\s*End of (the |this )?Project Gutenberg"
                 r"|^\s*\*+\s*END OF THE PROJECT|^\s*End of The Project Gutenberg", re.I)
PG_PARAGRAPH = re.compile(r"project gutenberg|gutenberg\.org|gutenberg\.net|pgdp\.net|distributed proofread", re.I)
PRODUCED_BY = re.compile(r"^\s*(produced by|e-?text prepared by|this e-?text was prepared by|transcribed (from|by)"
                         r"|prepared by|scanned by|proofread by)", re.I)
HEADER_FIELDS = {k: re.compile(r"^%s:\s*(.*)$" % k, re.I) for k in ("Title", "Author", "Language")}
EBOOK_NUMBER = re.compile(r"\[(?:E-?Book|Etext)\s*#\s*(\d+)\]", re.I)
ITALIC = re.compile(r"(?<![\w_])_([^_\n]{1,200}?)_(?![\w_])")
STOP_WORDS = frozenset(
    "the and of to a in that is was he it his with i as for had you not be her on at by which have or from this "
    "him but all she they were my are me one their so an said them we who would been will no when there if more "
    "out up into do any your what has man could other than our some very time upon about may its only now like "
    "little then can should made did us such great before must two these see know over much down after first mr "
    "good men own never most old shall day where those came come himself way work life without go make well "
    "through being long say might how am too even under".split())
MIN_WORDS = 2000
MIN_ENGLISH = 0.30
NEAR_DUP_SHARE = 0.5
VAL_BOOK_WORDS = (15_000, 150_000)


@dataclass(frozen=True)
class BuildOptions:
    """Sizes of the staged corpus; the defaults made the registered shards."""

    train_bytes: int = 198_000_000
    val_bytes: int = 8_000_000
    shards: int = N_TRAIN_SHARDS
    seed: int = 20241129


def list_blobs(git_dir: Path | str, commit: str) -> dict[str, list[str]]:
    """Every .txt blob at the commit with all the paths it appears under."""
    out = subprocess.run(["git", "--git-dir", str(git_dir), "ls-tree", "-r", "-l", "-z", commit],
                         capture_output=True)
    if out.returncode:
        raise UserError(f"git ls-tree {commit} in {git_dir} failed: {out.stderr.decode().strip()}")
    paths: dict[str, list[str]] = collections.defaultdict(list)
    for row in out.stdout.split(b"\0"):
        if not row:
            continue
        meta, path = row.split(b"\t", 1)
        _, _, sha, size = meta.split()
        path = path.decode("utf-8", "surrogateescape")
        if path.endswith(".txt") and size != b"BAD":
            paths[sha.decode()].append(path)
    return paths


def read_blobs(git_dir: Path | str, shas) -> dict[str, bytes]:
    """Raw bytes of each blob; blobs missing from a partial clone are skipped."""
    cat = subprocess.Popen(["git", "--git-dir", str(git_dir), "cat-file", "--batch"],
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    raw = {}
    for sha in sorted(shas):
        cat.stdin.write((sha + "\n").encode())
        cat.stdin.flush()
        header = cat.stdout.readline().split()
        if header[1] == b"missing":
            continue
        raw[sha] = cat.stdout.read(int(header[2]))
        cat.stdout.read(1)
    cat.stdin.close()
    cat.wait()
    return raw


def _unwrap(paragraph: list[str]) -> list[str]:
    """Join a hard-wrapped prose paragraph into one line; verse, plays and indented text keep their breaks."""
    if len(paragraph) < 2:
        return paragraph
    lengths = sorted(len(line) for line in paragraph[:-1])
    indented = sum(1 for line in paragraph if line.startswith(("  ", "\t"))) > len(paragraph) // 2
    if lengths[len(lengths) // 2] >= 55 and not indented:
        return [" ".join(line.strip() for line in paragraph)]
    return paragraph


def _header_fields(lines: list[str]) -> dict:
    meta: dict = {}
    for line in lines[:400]:
        for key, pattern in HEADER_FIELDS.items():
            m = pattern.match(line.strip())
            if m and key not in meta:  # (sic) keys are stored lower-case, so the last match wins, as in the shards
                meta[key.lower()] = m.group(1).strip()
        m = EBOOK_NUMBER.search(line)
        if m and "ebook" not in meta:
            meta["ebook"] = int(m.group(1))
    return meta


def clean(text: str) -> tuple[str | None, dict, str | None]:
    """(cleaned body, header fields, drop reason): the body is None when the book has no start marker."""
    text = unicodedata.normalize("NFC", text.replace("\r\n", "\n").replace("\r", "\n").replace("\ufeff", ""))
    lines = text.split("\n")
    meta = _header_fields(lines)
    starts = [i for i, line in enumerate(lines[:2000]) if START.search(line)]
    if not starts:
        return None, meta, "no_start_marker"
    s = max(starts) + 1
    ends = [i for i, line in enumerate(lines) if i > s and END.search(line)]
    body = lines[s:ends[0] if ends else len(lines)]
    paragraphs, cur = [], []
    for line in body:
        if line.strip():
            cur.append(line.rstrip())
        elif cur:
            paragraphs.append(cur)
            cur = []
    if cur:
        paragraphs.append(cur)
    out = []
    for i, par in enumerate(paragraphs):
        if PG_PARAGRAPH.search(" ".join(par)) or (i < 15 and PRODUCED_BY.match(par[0])):
            continue
        out.append("\n".join(ITALIC.sub(r"\1", line) for line in _unwrap(par)))
    return "\n\n".join(out).strip() + "\n", meta, None


def english_score(text: str) -> float:
    """Share of the first 200k characters' words that are common English stop words."""
    words = re.findall(r"[a-z]+", text[:200000].lower())
    return sum(1 for w in words if w in STOP_WORDS) / len(words) if words else 0.0


def shingles(text: str, k: int = 8, mod: int = 32) -> set[int]:
    """Hashes of the text's k-word shingles, sampled by hash mod ``mod`` (so the sample is content-defined)."""
    words = re.findall(r"[a-z0-9]+", text.lower())
    out = set()
    for i in range(max(0, len(words) - k + 1)):
        v = int.from_bytes(hashlib.blake2b(" ".join(words[i:i + k]).encode(), digest_size=8).digest(), "little")
        if v % mod == 0:
            out.add(v)
    return out


def clean_books(raw: dict[str, bytes], paths: dict[str, list[str]]) -> tuple[list[dict], dict[str, str]]:
    """One record per blob (drop reason where it goes) and the cleaned text of those that stay."""
    records, text = [], {}
    for sha in sorted(raw):
        rec = dict(blob=sha, sha256=hashlib.sha256(raw[sha]).hexdigest(), raw_bytes=len(raw[sha]),
                   paths=sorted(paths[sha]))
        body, meta, why = clean(raw[sha].decode("utf-8", errors="replace"))
        rec.update(meta)
        if why:
            rec["drop"] = why
        else:
            rec["en_score"] = round(english_score(body), 3)
            if "english" not in meta.get("language", "English").lower() or rec["en_score"] < MIN_ENGLISH:
                rec["drop"] = "not_english"
            rec["words"] = len(body.split())
            if rec["words"] < MIN_WORDS:
                rec.setdefault("drop", "too_short")
            text[sha] = body
        records.append(rec)
    return records, text


def drop_near_duplicates(records: list[dict], text: dict[str, str]) -> None:
    """Largest first, mark a book ``near_dup_of:<blob>`` when half its shingles sit in one larger kept book."""
    index: dict[int, set[str]] = collections.defaultdict(set)
    for rec in sorted([r for r in records if "drop" not in r], key=lambda r: -len(text[r["blob"]])):
        sample = shingles(text[rec["blob"]])
        best = collections.Counter(o for h in sample for o in index.get(h, ())).most_common(1)
        if sample and best and best[0][1] / len(sample) >= NEAR_DUP_SHARE:
            rec["drop"] = "near_dup_of:" + best[0][0][:12]
            continue
        for h in sample:
            index[h].add(rec["blob"])


def split_books(records: list[dict], text: dict[str, str], opts: BuildOptions) -> tuple[list[dict], list[list[dict]]]:
    """Seeded shuffle, then mid-length books fill val and the rest fill train, cut into shards by bytes."""
    kept = sorted([r for r in records if "drop" not in r], key=lambda r: r["blob"])
    random.Random(opts.seed).shuffle(kept)
    val, train, val_bytes, train_bytes = [], [], 0, 0
    lo, hi = VAL_BOOK_WORDS
    for rec in kept:
        n = len(text[rec["blob"]].encode())
        if val_bytes < opts.val_bytes and lo <= rec["words"] <= hi:
            val.append(rec)
            val_bytes += n
            rec["split"] = "val"
        elif train_bytes < opts.train_bytes:
            train.append(rec)
            train_bytes += n
        else:
            rec["split"] = "not_staged"
    per_shard, acc = train_bytes / opts.shards, 0
    shards: list[list[dict]] = [[] for _ in range(opts.shards)]
    for rec in train:
        i = min(int(acc // per_shard), opts.shards - 1)
        shards[i].append(rec)
        rec["split"] = f"train_{i:02d}"
        acc += len(text[rec["blob"]].encode())
    return val, shards


def write_shard(path: Path, records: list[dict], text: dict[str, str]) -> Path:
    """JSON lines, then ``xz -9e -T1`` (single-threaded, so the bytes are reproducible)."""
    with open(path, "w", encoding="utf-8") as fh:
        for r in records:
            fh.write(json.dumps({"id": r["blob"][:12], "ebook": r.get("ebook"), "title": r.get("title"),
                                 "author": r.get("author"), "source_path": r["paths"][0], "git_blob": r["blob"],
                                 "raw_sha256": r["sha256"], "text": text[r["blob"]]}, ensure_ascii=False) + "\n")
    subprocess.run(["xz", "-9e", "-T1", "-f", str(path)], check=True)
    return path.with_name(path.name + ".xz")


def write_manifest(path: Path, records: list[dict], text: dict[str, str]) -> None:
    """Every blob with its fate; GPT-2 token counts for staged books when the tokenizer is installed."""
    try:
        from scalinglab.training.tokenizer import gpt2_encoding

        enc = gpt2_encoding()
        for r in records:
            if r.get("split"):
                r["gpt2_tokens"] = len(enc.encode_ordinary(text[r["blob"]]))
    except ImportError:
        pass
    columns = ("blob", "sha256", "raw_bytes", "ebook", "author", "title", "words", "gpt2_tokens")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("git_blob\traw_sha256\traw_bytes\tebook\tauthor\ttitle\twords\tgpt2_tokens\tsplit_or_drop\tpaths\n")
        for r in records:
            cells = [r.get(c, "") for c in columns] + [r.get("split") or r.get("drop", ""), " | ".join(r["paths"])]
            fh.write("\t".join(str(x).replace("\t", " ").replace("\n", " ").replace("\r", " ") for x in cells) + "\n")


def build(git_dir: Path | str, commit: str, out_dir: Path | str, opts: BuildOptions = BuildOptions()) -> dict:
    """Rebuild the staged corpus from a git snapshot into ``out_dir``; returns counts per split."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = list_blobs(git_dir, commit)
    records, text = clean_books(read_blobs(git_dir, paths), paths)
    drop_near_duplicates(records, text)
    val, shards = split_books(records, text, opts)
    write_shard(out_dir / "val.jsonl", val, text)
    for i, shard in enumerate(shards):
        write_shard(out_dir / f"train_{i:02d}.jsonl", shard, text)
    write_manifest(out_dir / "manifest.tsv", records, text)
    return collections.Counter((r.get("split") or r["drop"]).split(":")[0] for r in records)


def main(argv: list[str] | None = None) -> int:
    import argparse

    p = argparse.ArgumentParser(prog="python -m scalinglab.training.corpus", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="action", required=True)
    b = sub.add_parser("build", help="rebuild the shards from a git snapshot of the source repository")
    b.add_argument("git_dir", help="git directory of a clone of " + SOURCE_REPO)
    b.add_argument("commit", nargs="?", default=SOURCE_COMMIT)
    b.add_argument("out_dir")
    defaults = BuildOptions()
    for field in ("train_bytes", "val_bytes", "shards", "seed"):
        b.add_argument("--" + field.replace("_", "-"), type=int, default=getattr(defaults, field))
    a = p.parse_args(argv)
    opts = BuildOptions(a.train_bytes, a.val_bytes, a.shards, a.seed)
    counts = build(a.git_dir, a.commit, a.out_dir, opts)
    print(json.dumps(dict(sorted(counts.items()))))
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
