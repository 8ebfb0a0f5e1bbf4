"""Memo-Trap-style probes from our own corpus: phrases the ladder saw often, rarely or never, to end otherwise.

Memo Trap (Inverse Scaling Prize, round 2) asks a model to end a famous phrase with another word:
``Write a quote that ends in the word "early": Better late than`` with classes ``[" early", " never"]``.
Larger models, with a stronger memory of the phrase, prefer the memorised ending more often. Here the
phrases come from the text the ladder trains on, so each item carries how often its phrase was seen.
A phrase is written in its commonest cased spelling in the text it comes from, the distractor in its
commonest spelling in training.

Counting. Text is split into *segments*: runs of words (letters, with inner apostrophes) separated only by
spaces or tabs; any other character (punctuation, digits, a line break, a quote mark) ends a segment, so a
phrase is a word sequence that occurs verbatim apart from case and spacing. Words are lowercased for
counting. An n-gram's count is the number of segment positions where it occurs. Counting is vectorised:
each n-gram of word ids gets a 64-bit hash, hashes are sorted, and equal runs are counted; every run is then
checked word by word, so a hash collision raises instead of merging two phrases (counts are exact). Memory
is a few arrays of 8 bytes per word (~0.3 GB for 5M words).

Items (:func:`build_probes`). A phrase ``w1 .. wn`` gives the prompt
``Write a phrase that ends in the word "x": w1 .. w(n-1)`` and classes ``[" x", " wn"]``, answer 0: the
distractor ``x`` is right, the phrase's own ending ``wn`` is the trap. Items are binned by the phrase's
count in the counted (training) text: ``never`` phrases come from held-out text (training shards the
ladder does not read), the other bins from the training text itself. In the trap bins (``common`` and
above) ``wn`` is the most common continuation of ``w1 .. w(n-1)`` (strictly, and at least ``min_share``
of the prefix's occurrences) and the phrase occurs in at least ``min_books`` books (not one book's
refrain). The distractor ``x`` is a common word (``min_word_count``) that follows ``w(n-1)`` somewhere in
the training text but never follows the whole prefix, is not in the prefix, and is picked (seeded, per
phrase) among the ``distractor_pool`` words whose bigram count after ``w(n-1)`` is closest to that of
``wn``. That match is close in the control bins but not in the trap bins, where the usual continuation is
usually the commonest word after ``w(n-1)`` too; so each item records the counts the analysis needs as
covariates (phrase, prefix, bigram and unigram counts, its count in the validation text). Control bins
(``never``, ``rare``) exclude phrases that occur in the validation text.
"""

from __future__ import annotations

import json
import math
import random
import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from scalinglab.errors import DataError, UserError
from scalinglab.serialization import to_jsonable

TEMPLATE = 'Write a phrase that ends in the word "{x}": {prefix}'
# A boundary: anything but a word character, space, tab or apostrophe; digits and underscores; an apostrophe
# not between two letters (a quote mark). Line breaks are boundaries too (verse keeps them in training text).
_BOUNDARY = re.compile(r"[^\w \t'’]|[\d_]|(?<![^\W\d_])['’]|['’](?![^\W\d_])")
_MASK = (1 << 64) - 1
# Odd 64-bit multipliers for the n-gram hash (fixed: the hash must not depend on the process).
_MULT = np.array([0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9, 0xD6E8FEB86659FD93,
                  0xFF51AFD7ED558CCD, 0xC4CEB9FE1A85EC53, 0x94D049BB133111EB, 0xBF58476D1CE4E5B9],
                 dtype=np.uint64)
BOUNDARY_ID = 0  # word id 0 separates segments; no n-gram contains it


def segments(text: str) -> list[list[str]]:
    """The text's segments, each a list of words (case kept)."""
    return [words for part in _BOUNDARY.split(text) if (words := part.split())]


class Vocabulary:
    """Word ids shared by every text of one build (id 0 is the segment boundary)."""

    def __init__(self) -> None:
        self.ids: dict[str, int] = {"": BOUNDARY_ID}
        self.words: list[str] = [""]
        self._lower: list[int] = [BOUNDARY_ID]

    def id(self, word: str) -> int:
        i = self.ids.get(word)
        if i is None:
            low = word.lower()
            lid = self.ids.get(low) if low != word else None
            i = self.ids[word] = len(self.words)
            self.words.append(word)
            if low == word:
                self._lower.append(i)
            else:
                if lid is None:
                    lid = self.id(low)
                self._lower.append(lid)
        return i

    def lower(self) -> np.ndarray:
        """Each id's lowercase id."""
        return np.asarray(self._lower, dtype=np.int64)


@dataclass
class Tokens:
    """A text as one array of word ids (case kept), with the book each position belongs to."""

    ids: np.ndarray
    doc: np.ndarray
    n_words: int
    n_docs: int
    n_bytes: int


def tokenize(texts: Iterable[str], vocab: Vocabulary, progress: str | None = None) -> Tokens:
    """Word ids of the texts (one document each), segments separated by ``BOUNDARY_ID``."""
    ids: list[int] = []
    doc: list[int] = []
    n_bytes = n_docs = 0
    it = texts
    if progress:
        from tqdm.auto import tqdm

        it = tqdm(texts, desc=progress, unit=" books", leave=False)
    vid = vocab.id
    for d, text in enumerate(it):
        n_docs += 1
        n_bytes += len(text.encode())
        start = len(ids)
        for seg in segments(text):
            ids.extend(vid(w) for w in seg)
            ids.append(BOUNDARY_ID)
        doc.extend([d] * (len(ids) - start))
    arr = np.asarray(ids, dtype=np.int64)
    return Tokens(arr, np.asarray(doc, dtype=np.int32), int((arr != BOUNDARY_ID).sum()), n_docs, n_bytes)


def _windows(lower_ids: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(start positions, hashes) of every n-gram that contains no boundary."""
    m = lower_ids.size - n + 1
    if m <= 0:
        return np.zeros(0, np.int64), np.zeros(0, np.uint64)
    ok = np.ones(m, dtype=bool)
    h = np.zeros(m, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for j in range(n):
            col = lower_ids[j:j + m]
            ok &= col != BOUNDARY_ID
            h = (h ^ col.astype(np.uint64)) * _MULT[j]
            h ^= h >> np.uint64(29)
    pos = np.flatnonzero(ok)
    return pos, h[pos]


@dataclass
class NgramCounts:
    """Exact counts of the lowercased n-grams of one text, sorted by hash."""

    n: int
    hashes: np.ndarray   # unique, sorted
    counts: np.ndarray
    first: np.ndarray    # position of the first occurrence in the Tokens
    books: np.ndarray    # how many documents contain it

    def lookup(self, hashes: np.ndarray) -> np.ndarray:
        """Counts of the given n-gram hashes (0 where absent)."""
        hashes = np.asarray(hashes, dtype=np.uint64)
        if self.hashes.size == 0:
            return np.zeros(hashes.shape, dtype=np.int64)
        i = np.minimum(np.searchsorted(self.hashes, hashes), self.hashes.size - 1)
        return np.where(self.hashes[i] == hashes, self.counts[i], 0)


def ngram_hash(lower_ids) -> np.uint64:
    """The hash ``count_ngrams`` gives the n-gram of these lowercase ids."""
    arr = np.asarray(lower_ids, dtype=np.int64)
    return _windows(arr, arr.size)[1][0]


def count_ngrams(tokens: Tokens, lower: np.ndarray, n: int) -> NgramCounts:
    """Exact counts of every lowercased n-gram (n >= 1) of ``tokens``; a hash collision raises."""
    if n < 1 or n > len(_MULT):
        raise UserError(f"n-gram length must be between 1 and {len(_MULT)}, not {n}")
    low = lower[tokens.ids]
    pos, h = _windows(low, n)
    order = np.argsort(h, kind="stable")
    h, pos = h[order], pos[order]
    start = np.flatnonzero(np.r_[True, h[1:] != h[:-1]]) if h.size else np.zeros(0, np.int64)
    run = np.repeat(np.arange(start.size), np.diff(np.r_[start, h.size]))
    for j in range(n):  # every occurrence must spell the same words as its run's first
        if np.any(low[pos + j] != low[pos[start][run] + j]):
            raise DataError(f"64-bit hash collision among {n}-grams; counts would merge two phrases")
    counts = np.diff(np.r_[start, h.size])
    doc = tokens.doc[pos]
    # books: distinct (hash, doc) pairs per hash; within a run sort by doc
    o2 = np.lexsort((doc, run))
    new = np.r_[True, (run[o2][1:] != run[o2][:-1]) | (doc[o2][1:] != doc[o2][:-1])]
    books = np.bincount(run[o2], weights=new, minlength=start.size).astype(np.int64)
    return NgramCounts(n, h[start], counts.astype(np.int64), pos[start], books)


def bigram_keys(low: np.ndarray, vocab_size: int) -> np.ndarray:
    """Sorted keys a*V + b of every word pair (a, b) within a segment, with repeats."""
    ok = (low[:-1] != BOUNDARY_ID) & (low[1:] != BOUNDARY_ID)
    return np.sort(low[:-1][ok] * vocab_size + low[1:][ok])


# -- items ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ProbeOptions:
    """How probes are built. Bins are (name, lowest count, highest count) of the phrase in the counted text."""

    n: int = 4
    bins: tuple[tuple[str, int, int], ...] = (("never", 0, 0), ("rare", 1, 2), ("common", 8, 31),
                                              ("very_common", 32, 1 << 62))
    per_bin: int = 250
    seed: int = 0
    min_books: int = 3             # trap bins: the phrase occurs in at least this many books
    min_share: float = 0.25        # trap bins: the ending follows the prefix at least this often
    min_word_count: int = 50       # the distractor is a common word
    distractor_pool: int = 5       # pick among this many candidates closest in bigram count
    # When set, keep only items whose distractor's bigram count after w(n-1) is within this factor of the
    # ending's (counts + 1): local word statistics then favour neither class, in every bin.
    max_bigram_ratio: float | None = None
    control_bins: tuple[str, ...] = ("never", "rare")
    never_bin: str = "never"

    def bin_of(self, count: int) -> str | None:
        for name, lo, hi in self.bins:
            if lo <= count <= hi:
                return name
        return None


@dataclass
class ProbeSet:
    """The items and what they were built from."""

    items: list[dict]
    options: ProbeOptions
    stats: dict = field(default_factory=dict)

    def bin_sizes(self) -> dict[str, int]:
        out = {name: 0 for name, _, _ in self.options.bins}
        for it in self.items:
            out[it["bin"]] += 1
        return out

    def write(self, path: Path | str) -> None:
        """JSON lines, one item each, keys in a fixed order (the bytes depend only on the items)."""
        with open(path, "w", encoding="utf-8", newline="\n") as fh:
            for it in self.items:
                fh.write(json.dumps(it, ensure_ascii=False, separators=(",", ":")) + "\n")

    def to_dict(self) -> dict:
        return to_jsonable(dict(options=asdict(self.options), stats=self.stats, bin_sizes=self.bin_sizes()))


def _commonest_spelling(tokens: Tokens, lower: np.ndarray, n: int) -> dict[int, int]:
    """For each lowercased n-gram hash, the position of its commonest cased spelling (ties: the earliest)."""
    cased = count_ngrams(tokens, np.arange(lower.size), n)
    low = _windows_at(lower[tokens.ids], cased.first, n)
    order = np.lexsort((cased.first, -cased.counts, low))
    head = np.r_[True, low[order][1:] != low[order][:-1]]
    return dict(zip(low[order][head].tolist(), cased.first[order][head].tolist()))


class _Index:
    """Counts of the counted (training) text that items are checked against."""

    def __init__(self, tokens: Tokens, vocab: Vocabulary, opts: ProbeOptions):
        n = opts.n
        self.min_word_count, self.pool = opts.min_word_count, opts.distractor_pool
        self.max_ratio = opts.max_bigram_ratio
        self.vocab, self.tokens = vocab, tokens
        self.lower = vocab.lower()
        self.V = len(vocab.words)
        low = self.lower[tokens.ids]
        self.full = count_ngrams(tokens, self.lower, n)
        self.prefix = count_ngrams(tokens, self.lower, n - 1)
        self.bigrams = bigram_keys(low, self.V)
        self.unigram = np.bincount(low, minlength=self.V)
        self.unigram[BOUNDARY_ID] = 0
        # the most common cased spelling of each lowercase word
        cased = np.bincount(tokens.ids, minlength=self.V)
        best = np.zeros(self.V, dtype=np.int64)
        for i in np.argsort(cased, kind="stable"):  # ascending, so the commonest spelling is written last
            best[self.lower[i]] = i
        self.spelling = best
        self.alpha = np.array([w.isalpha() for w in vocab.words], dtype=bool)

    def bigram_count(self, a: int, b: int) -> int:
        key = a * self.V + b
        return int(np.searchsorted(self.bigrams, key, "right") - np.searchsorted(self.bigrams, key, "left"))

    def followers(self, a: int) -> tuple[np.ndarray, np.ndarray]:
        """(word ids, counts) of the words that follow ``a``."""
        lo, hi = np.searchsorted(self.bigrams, [a * self.V, (a + 1) * self.V])
        words, counts = np.unique(self.bigrams[lo:hi] - a * self.V, return_counts=True)
        return words, counts


def _continuations(full: NgramCounts, tokens: Tokens, lower: np.ndarray, n: int):
    """Per unique n-gram: whether its ending is its prefix's most common continuation, strictly."""
    low = lower[tokens.ids]
    pref = _windows_at(low, full.first, n - 1)
    order = np.lexsort((-full.counts, pref))
    p, c = pref[order], full.counts[order]
    head = np.r_[True, p[1:] != p[:-1]]
    group = np.cumsum(head) - 1
    top = np.zeros(full.counts.size, dtype=bool)
    second = np.zeros(group.max() + 1 if group.size else 0, dtype=np.int64)
    nxt = np.r_[~head[1:], False]  # the group's second row exists
    idx = np.flatnonzero(head & nxt)
    second[group[idx]] = c[idx + 1]
    top[order[head]] = True
    strict = np.zeros(full.counts.size, dtype=bool)
    strict[order] = top[order] & (c > second[group])
    return strict


def _windows_at(low: np.ndarray, starts: np.ndarray, n: int) -> np.ndarray:
    """Hashes of the n-grams starting at ``starts`` (as ``_windows`` computes them)."""
    h = np.zeros(starts.size, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for j in range(n):
            h = (h ^ low[starts + j].astype(np.uint64)) * _MULT[j]
            h ^= h >> np.uint64(29)
    return h


def _distractor(ix: _Index, prefix_low: list[int], end_low: int, rng: random.Random) -> tuple[int, int] | None:
    """(word id, bigram count after the prefix's last word), or None when no word qualifies."""
    last = prefix_low[-1]
    words, counts = ix.followers(last)
    keep = (words != end_low) & (ix.unigram[words] >= ix.min_word_count) & ~np.isin(words, prefix_low)
    keep &= ix.alpha[words]
    words, counts = words[keep], counts[keep]
    if words.size:
        base = np.asarray(prefix_low, dtype=np.int64)
        cand = np.concatenate([np.tile(base, (words.size, 1)), words[:, None]], axis=1)
        full = _windows_at(cand.ravel(), np.arange(words.size) * cand.shape[1], cand.shape[1])
        seen = ix.full.lookup(full) > 0
        words, counts = words[~seen], counts[~seen]
    if not words.size:
        return None
    target = math.log1p(ix.bigram_count(last, end_low))
    dist = np.abs(np.log1p(counts) - target)
    if ix.max_ratio is not None:  # (count + 1) within a factor max_ratio of the ending's
        near = dist <= math.log(ix.max_ratio) + 1e-12
        words, counts, dist = words[near], counts[near], dist[near]
        if not words.size:
            return None
    order = np.lexsort((words, dist))[: ix.pool]
    k = order[rng.randrange(order.size)]
    return int(words[k]), int(counts[k])


def _candidates(lo: int, hi: int, src_counts: NgramCounts, ix: _Index, opts: ProbeOptions, trap: bool,
                strict: np.ndarray):
    """(indices into ``src_counts`` of the phrases that may fill a bin, every phrase's training count)."""
    train = ix.full.lookup(src_counts.hashes)
    ok = (train >= lo) & (train <= hi)
    if trap:
        prefix = ix.prefix.lookup(_windows_at(ix.lower[ix.tokens.ids], src_counts.first, opts.n - 1))
        ok &= strict & (src_counts.books >= opts.min_books) & (train >= opts.min_share * np.maximum(prefix, 1))
    return np.flatnonzero(ok), train


def build_probes(train_texts: Iterable[str], heldout_texts: Iterable[str], val_texts: Iterable[str] = (),
                 opts: ProbeOptions = ProbeOptions(), progress: bool = False) -> ProbeSet:
    """Probe items from the counted text (``train_texts``, what the models train on), held-out text for the
    ``never`` bin (never read by the models) and the validation text (control bins avoid its phrases).

    Deterministic for ``opts.seed``: the same texts and options give the same items, in the same order.
    """
    if opts.n < 3:
        raise UserError(f"phrases need at least 3 words (a 2-word prefix and an ending), not n={opts.n}")
    names = [b[0] for b in opts.bins]
    if len(set(names)) != len(names) or opts.never_bin not in names and any(lo == 0 for _, lo, _ in opts.bins):
        raise UserError(f"bin names must be unique and the zero-count bin must be called {opts.never_bin!r}")
    vocab = Vocabulary()
    train = tokenize(train_texts, vocab, "counting: training text" if progress else None)
    held = tokenize(heldout_texts, vocab, "held-out text" if progress else None)
    val = tokenize(val_texts, vocab, "validation text" if progress else None)
    if train.n_words < opts.n:
        raise UserError(f"the counted text has {train.n_words} words, fewer than one {opts.n}-gram")
    ix = _Index(train, vocab, opts)
    lower = ix.lower
    val_counts = count_ngrams(val, lower, opts.n)
    held_counts = count_ngrams(held, lower, opts.n)
    strict = _continuations(ix.full, train, lower, opts.n)

    spelling = {"train": _commonest_spelling(train, lower, opts.n), "heldout": _commonest_spelling(held, lower, opts.n)}
    items: list[dict] = []
    shortfall = {}
    for name, lo, hi in opts.bins:
        trap = name not in opts.control_bins
        from_held = name == opts.never_bin
        src, cnt = (held, held_counts) if from_held else (train, ix.full)
        if trap and from_held:
            raise UserError(f"bin {name!r} draws from held-out text, so it must be a control bin")
        cand, train_count = _candidates(lo, hi, cnt, ix, opts, trap, strict)
        if name in opts.control_bins and cand.size:
            cand = cand[val_counts.lookup(cnt.hashes[cand]) == 0]
        rng = random.Random(f"{opts.seed}:{name}")
        order = list(cand)
        rng.shuffle(order)
        chosen, used_prefix = [], set()
        for k in order:
            if len(chosen) == opts.per_bin:
                break
            pos = int(cnt.first[k])
            low = [int(x) for x in lower[src.ids[pos:pos + opts.n]]]
            if tuple(low[:-1]) in used_prefix or not all(vocab.words[w].isalpha() for w in low):
                continue
            prng = random.Random(f"{opts.seed}:{name}:{' '.join(vocab.words[w] for w in low)}")
            pick = _distractor(ix, low[:-1], low[-1], prng)
            if pick is None:
                continue
            used_prefix.add(tuple(low[:-1]))
            chosen.append((k, low, pick))
        if len(chosen) < opts.per_bin:
            shortfall[name] = len(chosen)
        chosen.sort(key=lambda c: " ".join(vocab.words[w] for w in c[1]))  # by lowercased phrase: a stable order
        for i, (k, low, (x, x_bigram)) in enumerate(chosen):
            at = spelling["heldout" if from_held else "train"][int(cnt.hashes[k])]
            words = [vocab.words[w] for w in src.ids[at:at + opts.n]]
            prefix, ending = " ".join(words[:-1]), words[-1]
            xs = vocab.words[ix.spelling[x]]
            pcount = int(ix.prefix.lookup(np.array([_windows_at(np.asarray(low), np.array([0]), opts.n - 1)[0]]))[0])
            count = int(train_count[k])
            row = dict(
                id=f"{name}-{i:04d}", prompt=TEMPLATE.format(x=xs, prefix=prefix), classes=[" " + xs, " " + ending],
                answer_index=0, bin=name, count=count, phrase=" ".join(words), prefix=prefix, ending=ending,
                distractor=xs, source="heldout" if from_held else "train",
                books=int(cnt.books[k]) if not from_held else 0,
                prefix_count=pcount,
                continuation_share=round(count / pcount, 4) if pcount else 0.0,
                majority=bool(strict[k]) if not from_held else False,
                bigram_ending=ix.bigram_count(low[-2], low[-1]), bigram_distractor=x_bigram,
                unigram_ending=int(ix.unigram[low[-1]]), unigram_distractor=int(ix.unigram[x]),
                val_count=int(val_counts.lookup(np.array([cnt.hashes[k]]))[0]),
            )
            items.append(row)
    if shortfall:
        have = ", ".join(f"{k}: {v}" for k, v in shortfall.items())
        raise DataError(f"too few phrases for {opts.per_bin} items per bin ({have}); count more text or lower per_bin")
    stats = dict(train_words=train.n_words, train_books=train.n_docs, train_bytes=train.n_bytes,
                 heldout_words=held.n_words, heldout_books=held.n_docs, heldout_bytes=held.n_bytes,
                 val_words=val.n_words, val_books=val.n_docs, val_bytes=val.n_bytes,
                 distinct_ngrams=int(ix.full.hashes.size), vocabulary=len(vocab.words) - 1,
                 ngrams_by_bin={name: int(((ix.full.counts >= lo) & (ix.full.counts <= hi)).sum())
                                for name, lo, hi in opts.bins if lo > 0})
    return ProbeSet(items, opts, stats)


# -- reading ---------------------------------------------------------------------------------------


def read_probe_file(path, dataset=None):
    """Registry loader: the probe items as a DataFrame, each row validated as a prize classification row."""
    import pandas as pd

    from scalinglab.inverse_scaling.tasks import jsonl_records, validate_row

    rows = [raw | validate_row(raw, where) for where, raw in jsonl_records(path)]
    if not rows:
        raise UserError(f"{path}: no rows")
    return pd.DataFrame(rows)
