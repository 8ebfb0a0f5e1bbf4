"""Nothing edited is trusted, nothing hangs, nothing is overwritten: saved fits agree with themselves or are
refused; special files are refused before they are opened; an output is never an input, and a failed write
leaves the old file whole."""

import json
import os
import zipfile
from dataclasses import replace

import numpy as np
import pytest
import test_saved_fit
from conftest import refused
from scalinglab.errors import UserError
from scalinglab.files import atomic_write, check_count, regular_file
from scalinglab.fitting import saved
from scalinglab.fitting.chinchilla import approach3 as F
from test_saved_fit import _rewrite

# The runs and the saved fit (60 bootstrap replicates) of test_saved_fit, shared rather than fitted again.
runs_csv, fitted = test_saved_fit.runs_csv, test_saved_fit.fitted


@pytest.fixture(scope="module")
def runs(request):
    return request.getfixturevalue("runs_csv")


@pytest.fixture(scope="module")
def good(request):
    return request.getfixturevalue("fitted")[1]


# Each edit below was printed with exit 0 before these checks: alpha = beta = 0 gave a loss of 8.7e6 beside an
# interval of [4.05, 4.26]; E or A = 1e308 gave 309-digit losses; a tiny alpha an N_opt of 1e-227.
@pytest.mark.parametrize("edit, message", [
    (lambda o: o["law"].update(alpha=0.0, beta=0.0), "is not what its law gives"),
    (lambda o: o["law"].update(E=1e308), "law E = 1e+308 lies outside the fit's bounds"),
    (lambda o: o["law"].update(A=1e308), "law A = 1e+308 lies outside the fit's bounds"),
    (lambda o: o["law"].update(alpha=1e-300), "is not what its law gives"),
    (lambda o: o["options"].update(delta=-1e-3), "option delta = -0.001"),
    (lambda o: o["options"].update(block=0), "option block = 0"),
    (lambda o: o["fit"].update(status="at_bound"), "status 'at_bound' does not match"),
    (lambda o: o["fit"].update(objective=o["fit"]["objective"] * 1.01), "is not what its law gives"),
    (lambda o: o["bootstrap"]["samples"][0].__setitem__(0, 1e300), "a bootstrap replicate lies outside"),
])
def test_an_edited_fit_is_refused_even_with_its_hash_recomputed(good, tmp_path, capsys, edit, message):
    bad = tmp_path / "edited.slfit"
    _rewrite(good, bad, edit)
    refused(capsys, ["allocate", bad, "--compute", "1e19"], str(bad), message)


def test_an_edit_without_a_new_hash_is_refused_by_the_hash(good, tmp_path, capsys):
    bad = tmp_path / "edited.slfit"
    _rewrite(good, bad, lambda o: o["fit"].update(n_starts=1), rehash=False)
    refused(capsys, ["allocate", bad, "--compute", "1e19"], "contents do not match their sha256")


def test_a_second_member_is_refused(good, tmp_path, capsys):
    # zipfile reads the last of two same-named members: an appended, edited fit.json would be the one used.
    bad = tmp_path / "two.slfit"
    with zipfile.ZipFile(good) as zf:
        text = zf.read("fit.json")
    with zipfile.ZipFile(bad, "w") as zf, pytest.warns(UserWarning, match="Duplicate name"):
        zf.writestr("fit.json", text)
        zf.writestr("fit.json", text.replace(b'"E": ', b'"E": 0.0001, "_E": '))
    refused(capsys, ["allocate", bad, "--compute", "1e19"], "fit.json 2 times")
    extra = tmp_path / "extra.slfit"
    with zipfile.ZipFile(extra, "w") as zf:
        zf.writestr("fit.json", text)
        zf.writestr("notes.txt", "x")
    refused(capsys, ["allocate", extra, "--compute", "1e19"], "unexpected member 'notes.txt'")


def test_a_fit_whose_every_resample_failed_saves_a_file_that_loads(good, tmp_path):
    s = saved.load(good)
    n = s.result.bootstrap.n_boot
    bs = replace(s.result.bootstrap, samples=np.empty((0, 5)), converged=np.zeros(n, bool), n_failed=n)
    path = tmp_path / "none.slfit"
    saved.save(path, replace(s, result=replace(s.result, bootstrap=bs)))
    again = saved.load(path)
    assert again.result.bootstrap.samples.shape == (0, 5) and again.result.bootstrap.n_failed == n


def test_save_writes_nothing_that_would_not_load(good, tmp_path):
    s = saved.load(good)
    path = tmp_path / "bad.slfit"
    path.write_text("the old file")
    with pytest.raises(UserError, match="not written, as the fit would not load back"):
        saved.save(path, replace(s, result=replace(s.result, params={**s.result.params, "alpha": s.result.alpha * 1.5})))
    assert path.read_text() == "the old file"
    assert [p.name for p in tmp_path.iterdir()] == ["bad.slfit"]   # no partial file left beside it


@pytest.mark.parametrize("command", [["fit", "{x}"], ["isoflop", "{x}"], ["predict", "{x}", "{csv}"],
                                     ["allocate", "{x}", "--compute", "1e19"]])
def test_a_fifo_is_refused_not_read(runs, good, tmp_path, capsys, command):
    # Opening a FIFO for reading blocks until a writer comes: the command would hang forever.
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    argv = [a.format(x=fifo, csv=runs) for a in command]
    refused(capsys, argv, str(fifo), "is a FIFO (named pipe), not a regular file")


def test_a_device_is_refused_not_read(capsys):
    # /dev/zero never ends: reading it filled memory until a MemoryError.
    refused(capsys, ["fit", "/dev/zero"], "/dev/zero: is a character device, not a regular file")
    with pytest.raises(UserError, match="is a folder"):
        regular_file("/")


@pytest.mark.parametrize("argv, flag", [
    (["fit", "{csv}", "--save", "{csv}"], "--save"),
    (["fit", "{csv}", "--plot", "{png}", "--predict", "{png}"], "--plot"),
    (["predict", "{fit}", "{csv}", "--out", "{fit}"], "--out"),
    (["predict", "{fit}", "{csv}", "--out", "{csv}"], "--out"),
])
def test_an_output_is_never_an_input(runs, good, tmp_path, capsys, argv, flag):
    png = tmp_path / "x.png"
    png.write_bytes(b"not a png, but the user's file")
    before = {p: p.read_bytes() for p in (runs, good, png)}
    args = [a.format(csv=runs, fit=good, png=png) for a in argv]
    refused(capsys, args, f"{flag} ", "is the input file")
    assert {p: p.read_bytes() for p in before} == before


def test_a_failed_write_leaves_the_old_file_whole(tmp_path):
    target = tmp_path / "out.csv"
    target.write_text("old")
    with pytest.raises(RuntimeError), atomic_write(target) as tmp:
        tmp.write_text("half")
        raise RuntimeError("crash mid-write")
    assert target.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["out.csv"]
    with atomic_write(target) as tmp:
        tmp.write_text("new")
    assert target.read_text() == "new"


def test_counts_are_capped_with_a_reason():
    check_count(1000, "--sims", "each simulated world refits the law")
    with pytest.raises(UserError, match=r"--sims 1000000000: at most 100,000 \(each simulated"):
        check_count(10**9, "--sims", "each simulated world refits the law")
    with pytest.raises(UserError, match="--k must be >= 1, not -1"):
        check_count(-1, "--k", "why", lo=1)


def test_an_honest_file_loads_and_matches_a_refit(good):
    # The integrity checks accept every honest file: a fit saved by this version reloads to the same law.
    s = saved.load(good)
    N, D, L = s.N, s.D, s.L
    res = F.fit_arrays(N, D, L)
    assert res.params == pytest.approx(s.result.params, rel=1e-9)
    assert json.loads(json.dumps(s.result.to_dict()))["status"] == s.result.status
