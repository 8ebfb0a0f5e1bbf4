"""The data registry: lookups, checksums and one-line errors."""

import hashlib
import shutil

import pytest
from scalinglab import data
from scalinglab.errors import DataError, UserError


def test_registry_entries_are_complete():
    reg = data.registry()
    assert "epoch-chinchilla" in reg
    for ds in reg.values():
        assert len(ds.sha256) == 64 and int(ds.sha256, 16) >= 0, ds.name
        assert ds.url.startswith("https://") or (ds.repo and not ds.url), ds.name  # repo data: the checkout
        assert ds.licence and ds.description, ds.name


def test_unknown_name_suggests_close_matches():
    with pytest.raises(UserError, match="did you mean epoch-chinchilla"):
        data.get("epoch-chinchila")


def _fake_mirror(tmp_path, monkeypatch, content: bytes):
    """A one-dataset mirror laid out like shared/data, registered on the fly."""
    ds = data.Dataset(name="toy", path="toy/toy.csv", url="https://example.invalid/toy.csv",
                      sha256=hashlib.sha256(b"N,D,loss\n1,2,3\n").hexdigest(),
                      licence="test", description="test", columns={"loss": "loss"})
    (tmp_path / "m" / "toy").mkdir(parents=True)
    (tmp_path / "m" / "toy" / "toy.csv").write_bytes(content)
    monkeypatch.setenv(data.MIRROR_ENV, str(tmp_path / "m"))
    reg = dict(data.registry())
    reg["toy"] = ds
    monkeypatch.setattr(data, "registry", lambda: reg)
    return ds


def test_load_from_mirror_checks_hash(tmp_path, monkeypatch):
    _fake_mirror(tmp_path, monkeypatch, b"N,D,loss\n1,2,3\n")
    df = data.load("toy")
    assert list(df.columns) == ["N", "D", "loss"] and df["loss"].iloc[0] == 3


def test_corrupt_file_is_one_line_naming_dataset_path_and_hash(tmp_path, monkeypatch):
    ds = _fake_mirror(tmp_path, monkeypatch, b"N,D,loss\n1,2,4\n")
    with pytest.raises(DataError) as err:
        data.load("toy")
    msg = str(err.value)
    assert "\n" not in msg and "toy" in msg and "toy/toy.csv" in msg and ds.sha256 in msg


def test_missing_file_offline_is_one_line(tmp_path, monkeypatch):
    ds = _fake_mirror(tmp_path, monkeypatch, b"N,D,loss\n1,2,3\n")
    shutil.rmtree(tmp_path / "m" / "toy")
    with pytest.raises(DataError) as err:
        data.locate("toy")  # example.invalid never resolves: the offline path
    msg = str(err.value)
    assert "\n" not in msg and "toy" in msg and ds.sha256 in msg and "toy.csv" in msg


def test_mirror_is_never_written(tmp_path, monkeypatch):
    _fake_mirror(tmp_path, monkeypatch, b"N,D,loss\n1,2,3\n")
    before = sorted(p.name for p in (tmp_path / "m").rglob("*"))
    data.load("toy")
    assert sorted(p.name for p in (tmp_path / "m").rglob("*")) == before


def test_every_registered_file_in_the_mirror_verifies(mirror):
    rows = data.verify()
    bad = [(n, s, d) for n, s, d in rows if s not in ("ok", "absent")]
    assert not bad, bad
    # "absent" is reserved for datasets registered as not mirrored.
    reg = data.registry()
    assert all(not reg[n].mirrored for n, s, _ in rows if s == "absent")


def test_cli_data_verify_and_unknown_name(mirror, capsys):
    from scalinglab.cli import main

    assert main(["data", "verify", "epoch-chinchilla"]) == 0
    assert "ok" in capsys.readouterr().out
    assert main(["data", "path", "no-such-dataset"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no-such-dataset" in err


def test_only_data_the_project_commits_may_go_without_a_public_url():
    from scalinglab.data import _parse_entry

    spec = dict(path="probes/x.jsonl", sha256="0" * 64, licence="ours", description="d", format="jsonl")
    assert _parse_entry("ours", dict(spec, repo=True), "probes").url == ""
    with pytest.raises(ValueError, match="lacks url"):
        _parse_entry("theirs", spec, "probes")
