"""Memo-Trap probes from our own corpus: exact n-gram counts, seeded items, balanced bins, held-out text kept out."""

from __future__ import annotations

import hashlib
import random
import string
from collections import Counter

import numpy as np
import pytest
from scalinglab import data
from scalinglab.errors import DataError
from scalinglab.inverse_scaling import memo_probes as mp


def naive_counts(texts, n):
    """Lowercased n-gram counts and book counts, the slow obvious way."""
    counts, books = Counter(), {}
    for d, text in enumerate(texts):
        for seg in mp.segments(text):
            low = [w.lower() for w in seg]
            for i in range(len(low) - n + 1):
                g = tuple(low[i:i + n])
                counts[g] += 1
                books.setdefault(g, set()).add(d)
    return counts, {g: len(b) for g, b in books.items()}


def test_segments_break_at_punctuation_lines_digits_and_quote_marks():
    text = "It was the best of times, it was\nthe worst. 'Don't go,' said 3 men O'Brien"
    assert mp.segments(text) == [["It", "was", "the", "best", "of", "times"], ["it", "was"], ["the", "worst"],
                                 ["Don't", "go"], ["said"], ["men", "O'Brien"]]


def test_counts_are_exact_on_a_synthetic_corpus():
    rng = random.Random(3)
    words = ["the", "The", "cat", "sat", "on", "mat", "a", "dog"]
    texts = [" ".join(rng.choice(words) + rng.choice(["", "", "", ",", ".\n"]) for _ in range(400)) for _ in range(4)]
    vocab = mp.Vocabulary()
    toks = mp.tokenize(texts, vocab)
    lower = vocab.lower()
    for n in (1, 3, 4, 5):
        got = mp.count_ngrams(toks, lower, n)
        want, want_books = naive_counts(texts, n)
        assert got.hashes.size == len(want) and got.counts.sum() == sum(want.values())
        for g, c in want.items():
            h = mp.ngram_hash([vocab.ids[w] for w in g])
            assert got.lookup(np.array([h]))[0] == c, g
            assert got.books[np.searchsorted(got.hashes, h)] == want_books[g], g
    assert mp.count_ngrams(toks, lower, 4).lookup(np.array([mp.ngram_hash([vocab.id("zebra")] * 4)]))[0] == 0


def test_a_hash_collision_raises_instead_of_merging(monkeypatch):
    monkeypatch.setattr(mp, "_MULT", np.zeros(8, dtype=np.uint64))  # every n-gram hashes to 0
    vocab = mp.Vocabulary()
    toks = mp.tokenize(["one two three four five"], vocab)
    with pytest.raises(DataError, match="collision"):
        mp.count_ngrams(toks, vocab.lower(), 2)


def _word(rng):
    return "".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(3, 6)))


def synthetic(seed=0):
    """Training books of random words from a 60-word vocabulary with planted phrases (30 seen 6 times,
    30 seen 25 times, spread over books), held-out and validation books of the same words."""
    rng = random.Random(seed)
    base = sorted({_word(rng) for _ in range(80)})[:60]

    def book(n_words):
        out = []
        for _ in range(n_words // 8):
            out.append(" ".join(rng.choice(base) for _ in range(8)))
        return out

    books = [book(3000) for _ in range(6)]
    planted = {}
    for k, reps in ((0, 6), (1, 25)):
        for _ in range(30):
            phrase = " ".join(rng.choice(base) for _ in range(4))
            planted[phrase] = reps
            for r in range(reps):
                books[r % len(books)].insert(rng.randrange(len(books[r % len(books)])), phrase)
    train = [". ".join(b) + "." for b in books]
    held = [". ".join(book(3000)) + "."]
    val_book = book(3000)
    val = [". ".join(val_book) + "."]
    return train, held, val, planted


OPTS = mp.ProbeOptions(bins=(("never", 0, 0), ("rare", 1, 1), ("common", 5, 9), ("very_common", 20, 1 << 40)),
                       per_bin=10, min_books=2, min_word_count=5, seed=7)


@pytest.fixture(scope="module")
def corpus():
    return synthetic()


@pytest.fixture(scope="module")
def probes(corpus):
    train, held, val, _ = corpus
    return mp.build_probes(train, held, val, OPTS)


def test_bins_are_balanced_and_items_are_memo_trap_rows(probes):
    assert probes.bin_sizes() == {"never": 10, "rare": 10, "common": 10, "very_common": 10}
    for name, _, _ in OPTS.bins:  # the file's order: bins in turn, each sorted by lowercased phrase
        phrases = [it["phrase"].lower() for it in probes.items if it["bin"] == name]
        assert phrases == sorted(phrases) and [it["id"] for it in probes.items if it["bin"] == name][0] == f"{name}-0000"
    for it in probes.items:
        assert it["answer_index"] == 0 and it["classes"] == [" " + it["distractor"], " " + it["ending"]]
        assert it["prompt"] == f'Write a phrase that ends in the word "{it["distractor"]}": {it["prefix"]}'
        assert it["phrase"] == f'{it["prefix"]} {it["ending"]}' and it["distractor"] != it["ending"]
        assert it["distractor"] not in it["prefix"].split()


def test_item_counts_are_the_phrases_training_counts(corpus, probes):
    train, held, val, planted = corpus
    want, want_books = naive_counts(train, 4)
    prefix_counts, _ = naive_counts(train, 3)
    bigrams, _ = naive_counts(train, 2)
    for it in probes.items:
        g = tuple(it["phrase"].lower().split())
        assert it["count"] == want.get(g, 0), it
        lo, hi = next((lo, hi) for name, lo, hi in OPTS.bins if name == it["bin"])
        assert lo <= it["count"] <= hi
        assert it["prefix_count"] == prefix_counts.get(g[:-1], 0)
        assert it["bigram_ending"] == bigrams.get(g[-2:], 0)
        assert it["bigram_distractor"] == bigrams.get((g[-2], it["distractor"].lower()), 0) >= 1
        # the distractor never ends the prefix in training: it is not a memorised alternative
        assert want.get((*g[:-1], it["distractor"].lower()), 0) == 0
        if it["bin"] in ("common", "very_common"):
            assert it["phrase"] in planted and it["books"] >= OPTS.min_books and it["source"] == "train"
    # the trap bins hold planted phrases at their planted frequency (random 4-grams of 60 words rarely repeat)
    assert {it["count"] for it in probes.items if it["bin"] == "very_common"} <= {25, 26}


def test_controls_avoid_the_validation_text_and_never_comes_from_held_out_text(corpus, probes):
    train, held, val, _ = corpus
    val_counts, _ = naive_counts(val, 4)
    held_counts, _ = naive_counts(held, 4)
    for it in probes.items:
        g = tuple(it["phrase"].lower().split())
        assert it["val_count"] == val_counts.get(g, 0)
        if it["bin"] in OPTS.control_bins:
            assert it["val_count"] == 0
        if it["bin"] == "never":
            assert it["source"] == "heldout" and held_counts[g] >= 1 and it["count"] == 0
    # with the validation text made of the held-out text, no never item survives from it
    with pytest.raises(DataError, match="never: 0"):
        mp.build_probes(train, held, held, OPTS)


def test_deterministic_for_a_seed(tmp_path, corpus, probes):
    train, held, val, _ = corpus
    again = mp.build_probes(train, held, val, OPTS)
    other = mp.build_probes(train, held, val, mp.ProbeOptions(**{**OPTS.__dict__, "seed": 8}))
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    probes.write(a)
    again.write(b)
    assert a.read_bytes() == b.read_bytes()
    assert [it["phrase"] for it in other.items] != [it["phrase"] for it in probes.items]
    df = mp.read_probe_file(a)  # the registry loader keeps every field and validates the rows
    assert len(df) == 40 and {"count", "bin", "classes"} <= set(df.columns)


def test_bigram_matched_items_give_neither_class_a_local_advantage(corpus, probes):
    train, held, val, _ = corpus
    matched = mp.build_probes(train, held, val, mp.ProbeOptions(**{**OPTS.__dict__, "max_bigram_ratio": 1.5}))
    assert matched.bin_sizes() == probes.bin_sizes()
    for it in matched.items:
        a, b = it["bigram_ending"] + 1, it["bigram_distractor"] + 1
        assert max(a, b) <= 1.5 * min(a, b), it


def test_too_little_text_for_the_bins_is_one_line(corpus):
    train, held, val, _ = corpus
    with pytest.raises(DataError, match="too few phrases for 500 items per bin"):
        mp.build_probes(train, held, val, mp.ProbeOptions(**{**OPTS.__dict__, "per_bin": 500}))


def test_registered_probe_file_matches_its_sha256_and_loads():
    ds = data.get("memo-probes-gutenberg")
    path = data.REPO_DATA / ds.path
    assert ds.repo and hashlib.sha256(path.read_bytes()).hexdigest() == ds.sha256
    assert path.stat().st_size < 1_000_000
    df = data.load("memo-probes-gutenberg")
    sizes = df["bin"].value_counts()
    assert set(sizes.index) == {"never", "rare", "common", "very_common"} and sizes.min() >= 200
    assert (df["answer_index"] == 0).all() and (df.loc[df["bin"].isin(["never", "rare"]), "val_count"] == 0).all()
    # bins follow the recorded counts (the build's default bins)
    for name, lo, hi in mp.ProbeOptions().bins:
        counts = df.loc[df["bin"] == name, "count"]
        assert counts.between(lo, hi).all(), name


def test_a_phrase_is_written_in_its_commonest_spelling():
    vocab = mp.Vocabulary()
    toks = mp.tokenize(["In the Middle of it. in the middle of. In the middle of. in the middle of"], vocab)
    lower = vocab.lower()
    at = mp._commonest_spelling(toks, lower, 4)[int(mp.ngram_hash([vocab.ids[w] for w in "in the middle of".split()]))]
    assert [vocab.words[i] for i in toks.ids[at:at + 4]] == ["in", "the", "middle", "of"]
