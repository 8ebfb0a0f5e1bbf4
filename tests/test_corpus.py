import json
import lzma
import random
import subprocess

import pytest
from scalinglab import data
from scalinglab.errors import UserError
from scalinglab.training import corpus, corpus_build
from scalinglab.training.tokenizer import file_texts, get_tokenizer, gpt2_encoding, token_cache


def test_registry_holds_every_shard_with_the_mirror_checksums(mirror):
    folder = mirror / "corpus" / "gutenberg-top-authors"
    sums = dict(line.split()[::-1] for line in (folder / "SHA256SUMS").read_text().splitlines())
    names = corpus.shard_names("train") + corpus.shard_names("val") + ["gutenberg-manifest"]
    registered = {data.get(n).path.rsplit("/", 1)[1]: data.get(n).sha256 for n in names}
    assert registered == sums
    assert all(corpus.SOURCE_COMMIT in data.get(n).source for n in names)
    manifest = data.load("gutenberg-manifest")
    assert len(manifest) == 3080 and manifest["git_blob"].is_unique
    assert (manifest["split_or_drop"] == "val").sum() == 26


def test_val_books_carry_their_provenance(mirror):
    books = list(corpus.books("val"))
    assert len(books) == 26
    assert set(books[0]) == {"id", "ebook", "title", "author", "source_path", "git_blob", "raw_sha256", "text"}
    assert all("Project Gutenberg" not in b["text"] for b in books)
    first = next(corpus.books("val", max_bytes=1))
    assert first == books[0]
    with pytest.raises(UserError, match="split"):
        corpus.shard_names("test")


def test_gpt2_tokenizer_is_offline_and_exact():
    assert gpt2_encoding().encode("Hello world") == [15496, 995]
    tok = get_tokenizer("gpt2")
    assert tok.vocab_size == 50257 and tok.eot == 50256
    with pytest.raises(UserError, match="unknown tokenizer"):
        get_tokenizer("bpe")


def test_user_files_are_tokenized_once_into_uint16(tmp_path):
    (tmp_path / "a.txt").write_text("It was the best of times.")
    with open(tmp_path / "b.jsonl", "w") as fh:
        fh.write(json.dumps({"text": "It was the worst of times."}) + "\n")
    files = [tmp_path / "a.txt", tmp_path / "b.jsonl"]
    tok = get_tokenizer("gpt2")
    tokens = token_cache(tok, "train", files=files)
    assert tokens.dtype.name == "uint16"
    ids = tokens.tolist()
    assert ids.count(tok.eot) == 2  # one end-of-text after each document
    assert tok.decode([i for i in ids if i != tok.eot]) == "It was the best of times.It was the worst of times."
    cached = list((tmp_path / "cache" / "tokens").rglob("*.bin"))
    assert len(cached) == 1
    assert token_cache(tok, "train", files=files).tolist() == ids  # read back, not re-tokenized
    with pytest.raises(UserError, match="no 'text' field"):
        list(file_texts([_write(tmp_path / "c.jsonl", '{"body": "x"}\n')]))
    with pytest.raises(UserError, match="no such file"):
        list(file_texts([tmp_path / "missing.txt"]))


def test_tokenizing_streams_the_texts(tmp_path):
    """The token cache encodes batch by batch: no more than one batch of text is held at a time."""
    from scalinglab.training.tokenizer import Tokenizer, _write_tokens

    drawn = []

    def texts():
        for i in range(10):
            drawn.append(i)
            yield f"doc {i}"

    batches_seen_at = []

    def encode_batch(batch):
        batches_seen_at.append(len(drawn))  # how many texts had been read when this batch was encoded
        return [[1, 2] for _ in batch]

    tok = Tokenizer("fake", 10, 0, encode_batch, lambda ids: "")
    n = _write_tokens(tmp_path / "t.bin", tok, texts(), batch=3)
    assert n == 10 * 3  # two ids and an end-of-text per text
    assert batches_seen_at == [3, 6, 9, 10]  # reading all ten first would give [10, 10, 10, 10]


def _write(path, text):
    path.write_text(text)
    return path


# --- rebuilding the corpus from a git snapshot -----------------------------------------

WORDS = ("the and of to a in that is was he it his with as for had you not be her on at by which have "
         "house river morning letter captain garden window journey silence evening stranger mountain").split()


def _prose(rng, n_words):
    lines, line = [], []
    for _ in range(n_words):
        line.append(rng.choice(WORDS))
        if len(" ".join(line)) > 62:
            lines.append(" ".join(line))
            line = []
        if len(lines) == 6:
            yield "\n".join(lines)
            lines = []
    if lines or line:
        yield "\n".join(lines + [" ".join(line)])


def _pg_book(title, body_pars):
    head = (f"The Project Gutenberg EBook of {title}\n\nTitle: {title}\nAuthor: A. Writer\nLanguage: English\n\n"
            "[EBook #1234]\n\n*** START OF THIS PROJECT GUTENBERG EBOOK ***\n\n\n\nProduced by Volunteer Team\n\n")
    tail = "\n\n*** END OF THIS PROJECT GUTENBERG EBOOK ***\n\nThis file should be named 1234.txt\n"
    return head + "\n\n".join(body_pars) + "\n\nVisit Project Gutenberg at gutenberg.org for more.\n" + tail


@pytest.fixture
def snapshot(tmp_path):
    rng = random.Random(0)
    repo = tmp_path / "src"
    files = {
        "A/long.txt": _pg_book("Long", list(_prose(rng, 16_000))),          # val-sized (15k-150k words)
        "A/one.txt": _pg_book("One", ["_Italic_ opening."] + list(_prose(rng, 3000))),
        "B/two.txt": _pg_book("Two", list(_prose(rng, 3000))),
        "C/short.txt": _pg_book("Short", list(_prose(rng, 500))),
        "C/nomarker.txt": "A book without any marker.\n" * 3000,
    }
    files["B/copy of one.txt"] = files["A/one.txt"].replace("Title: One", "Title: One (reissue)")
    for rel, text in files.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "books"], check=True)
    commit = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    return repo / ".git", commit


def test_clean_strips_the_gutenberg_frame():
    raw = _pg_book("X", ["A first line of a long paragraph that was wrapped by hand at sixty-odd chars\n"
                         "and continues here on a second line that is also rather long, you see\nend.",
                         "  An indented verse line\n  and another one"])
    body, meta, why = corpus_build.clean(raw)
    assert why is None and meta["title"] == "X" and meta["ebook"] == 1234
    assert "Gutenberg" not in body and "Produced by" not in body
    pars = body.strip().split("\n\n")
    assert pars[0].count("\n") == 0 and pars[0].endswith("end.")    # prose rejoined into one line
    assert pars[1] == "  An indented verse line\n  and another one"  # verse keeps its breaks
    assert corpus_build.clean("no markers here")[2] == "no_start_marker"


def test_build_rebuilds_shards_and_manifest_deterministically(snapshot, tmp_path):
    git_dir, commit = snapshot
    opts = corpus_build.BuildOptions(train_bytes=10**9, val_bytes=1, shards=2, seed=1)
    counts = corpus_build.build(git_dir, commit, tmp_path / "out1", opts)
    assert counts == {"val": 1, "train_00": 1, "train_01": 1, "near_dup_of": 1, "too_short": 1,
                      "no_start_marker": 1}
    val = list(corpus.read_jsonl(tmp_path / "out1" / "val.jsonl.xz"))
    assert [b["title"] for b in val] == ["Long"]
    train = [b for i in range(2) for b in corpus.read_jsonl(tmp_path / "out1" / f"train_{i:02d}.jsonl.xz")]
    assert sorted(b["title"] for b in train) in (["One", "Two"], ["One (reissue)", "Two"])
    assert all("Gutenberg" not in b["text"] and "_Italic_" not in b["text"] for b in train + val)
    manifest = (tmp_path / "out1" / "manifest.tsv").read_text().splitlines()
    assert len(manifest) == 1 + 6
    # a second build gives byte-identical files (single-threaded xz, seeded shuffle)
    corpus_build.build(git_dir, commit, tmp_path / "out2", opts)
    for f in ("val.jsonl.xz", "train_00.jsonl.xz", "train_01.jsonl.xz", "manifest.tsv"):
        assert (tmp_path / "out1" / f).read_bytes() == (tmp_path / "out2" / f).read_bytes(), f
    assert lzma.decompress((tmp_path / "out1" / "val.jsonl.xz").read_bytes()).count(b"\n") == 1


def test_build_cli_reports_a_bad_commit(snapshot, tmp_path):
    git_dir, _ = snapshot
    with pytest.raises(UserError, match="git ls-tree"):
        corpus_build.main(["build", str(git_dir), "0" * 40, str(tmp_path / "out")])


def test_build_matches_the_original_make_corpus_script(mirror, snapshot, tmp_path):
    """The library carries make_corpus.py's logic: on the same snapshot both write the same bytes."""
    import sys

    script = mirror / "corpus" / "gutenberg-top-authors" / "make_corpus.py"
    git_dir, commit = snapshot
    # a train budget of one book: the second is "not_staged", and one of the three shards stays empty
    args = ["--train-bytes", "10000", "--val-bytes", "1", "--shards", "3", "--seed", "7"]
    subprocess.run([sys.executable, str(script), str(git_dir), commit, str(tmp_path / "work"), str(tmp_path / "orig"),
                    *args], check=True, capture_output=True)
    corpus_build.main(["build", str(git_dir), commit, str(tmp_path / "ours"), *args])
    names = sorted(p.name for p in (tmp_path / "orig").iterdir())
    assert names == sorted(p.name for p in (tmp_path / "ours").iterdir())
    assert "manifest.tsv" in names and "train_02.jsonl.xz" in names
    assert "not_staged" in (tmp_path / "ours" / "manifest.tsv").read_text()
    for name in names:
        assert (tmp_path / "orig" / name).read_bytes() == (tmp_path / "ours" / name).read_bytes(), name
