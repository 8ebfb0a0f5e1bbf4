"""Saved fits, predictions with mean and new-run intervals, and distances from the fitted domain
(`fit --save`, `predict`, `allocate`; fitting.saved, fitting.prediction.forecast, fitting.prediction.domain), on runs simulated
from a known law."""

import json
import zipfile

import numpy as np
import pytest
from scalinglab.cli import main
from scalinglab.errors import UserError
from scalinglab.fitting import saved
from scalinglab.fitting.chinchilla import approach3 as F
from scalinglab.fitting.chinchilla.law import ScalingLaw
from scalinglab.fitting.prediction import forecast
from scalinglab.fitting.prediction.domain import Domain

TRUE = ScalingLaw(E=1.8, A=480.0, B=2100.0, alpha=0.35, beta=0.37)
SIGMA = 0.02  # log-loss noise of the simulated runs


def simulate(n, seed, sigma=SIGMA):
    rng = np.random.default_rng(seed)
    N = 10 ** rng.uniform(7, 9, n)
    D = 10 ** rng.uniform(9, 11, n)
    return N, D, TRUE.loss(N, D) * np.exp(sigma * rng.standard_normal(n))


@pytest.fixture(scope="module")
def runs_csv(tmp_path_factory):
    N, D, L = simulate(40, 0)
    path = tmp_path_factory.mktemp("runs") / "runs.csv"
    path.write_text("N,D,loss\n" + "".join(f"{n:.17g},{d:.17g},{x:.17g}\n" for n, d, x in zip(N, D, L)))
    return path


@pytest.fixture(scope="module")
def fitted(runs_csv, tmp_path_factory):
    """(fit --json output with --compute, path of the saved fit, text output)."""
    out = tmp_path_factory.mktemp("fit") / "fit.slfit"
    argv = ["fit", str(runs_csv), "--bootstrap", "60", "--compute", "1e19", "--compute", "1e23", "--save", str(out)]
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main(argv + ["--json"]) == 0
    js = json.loads(buf.getvalue())
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main(argv) == 0
    return js, out, buf.getvalue()


def test_allocate_from_a_saved_fit_is_fit_compute_to_the_digit(fitted, capsys):
    js, path, text = fitted
    assert main(["allocate", str(path), "--compute", "1e19", "--compute", "1e23", "--json"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["compute_optimal"] == js["compute_optimal"]  # floats compared exactly: no refit, same draws
    assert main(["allocate", str(path), "--compute", "1e19", "--compute", "1e23"]) == 0
    block = capsys.readouterr().out.split("\n\n", 1)[1].rstrip()
    assert block in text


def test_saved_fit_reloads_bit_for_bit(fitted, runs_csv):
    _, path, _ = fitted
    s = saved.load(path)
    N, D, L, _ = F.runs_from_table({k: v for k, v in zip(*_columns(runs_csv))})
    res = F.fit_arrays(N, D, L, n_boot=60)  # the same fit again (deterministic): the file must match it
    assert s.result.params == res.params and s.result.objective == res.objective
    assert np.array_equal(s.result.bootstrap.samples, res.bootstrap.samples)
    assert s.data_hash == saved.data_hash(N, D, L) and s.result.options == res.options


def _columns(path):
    lines = path.read_text().splitlines()
    cols = lines[0].split(",")
    return cols, [np.array([float(r.split(",")[j]) for r in lines[1:]]) for j in range(len(cols))]


def test_the_allocation_beyond_the_runs_is_flagged(fitted):
    js, _, text = fitted
    near, far = js["compute_optimal"]
    # The runs span C = 6ND from 6e16 to 6e20: 1e19 (N_opt ~3e8, D_opt ~6e9) is inside, 1e23 is 2.2 decades above the largest.
    assert near["C"] == 1e19 and not near["extrapolation"]["outside"]
    assert far["extrapolation"]["outside"] and far["extrapolation"]["decades_C"] > 2
    assert text.count("WARNING: this allocation lies outside the fitted runs") == 1


def test_domain_distances_are_decades_and_mahalanobis():
    N = np.array([1e7, 1e8, 1e9, 1e7, 1e9, 1e8])
    D = np.array([1e9, 1e10, 1e11, 1e10, 1e10, 1e9])  # D rises with N, loosely
    dom = Domain.from_runs(N, D)
    d = dom.distance([1e10, 1e8, 1e9], [1e10, 1e10, 1e9])
    assert d["decades_N"][0] == pytest.approx(1.0) and d["decades_D"][0] == 0
    assert d["decades_C"][0] == pytest.approx(0.0)  # 6e20 = the largest run's C (1e9 x 1e11)
    assert list(d["outside"]) == [True, False, True]
    # (1e9, 1e9) is inside every range but far off the runs' cloud: the Mahalanobis test catches it.
    assert d["decades_N"][2] == d["decades_D"][2] == d["decades_C"][2] == 0
    assert d["mahalanobis"][2] > dom.threshold
    assert not dom.distance(N, D)["outside"].any()  # the fitted runs themselves are inside


def test_new_run_intervals_cover_new_runs_and_mean_intervals_do_not():
    N, D, L = simulate(150, 1)
    res = F.fit_arrays(N, D, L, n_boot=100, seed=2)
    sigma = forecast.residual_sd(res, N, D, L)
    assert sigma == pytest.approx(SIGMA, rel=0.15)  # 150 residuals: sd of the estimate ~6%
    Nn, Dn, Ln = simulate(400, 3)  # fresh runs from the same law and noise
    iv = forecast.loss_intervals(res, Nn, Dn, sigma, level=0.9)
    new = np.mean((Ln >= iv["new_lo"]) & (Ln <= iv["new_hi"]))
    mean = np.mean((Ln >= iv["mean_lo"]) & (Ln <= iv["mean_hi"]))
    # 90% new-run intervals: coverage ~0.9 (binomial sd 1.5% on 400, plus sigma's own error); the mean
    # law's interval is far narrower than the noise, so most new runs fall outside it.
    assert 0.84 <= new <= 0.96
    assert mean < 0.5
    assert (iv["new_hi"] - iv["new_lo"] > iv["mean_hi"] - iv["mean_lo"]).all()


def test_predict_adds_both_intervals_and_the_distance(fitted, tmp_path, capsys):
    _, path, _ = fitted
    new = tmp_path / "new.csv"
    new.write_text("N,D\n1e8,1e10\n1e11,1e12\n")
    out = tmp_path / "out.csv"
    assert main(["predict", str(path), str(new), "--out", str(out), "--json"]) == 0
    js = json.loads(capsys.readouterr().out)
    inside, beyond = js["rows"]
    assert inside["predicted"] == pytest.approx(float(TRUE.loss(1e8, 1e10)), rel=0.02)
    lo, hi = inside["mean_interval"]
    nlo, nhi = inside["new_run_interval"]
    assert nlo < lo < inside["predicted"] < hi < nhi
    assert not inside["extrapolation"]["outside"] and beyond["extrapolation"]["outside"]
    assert beyond["extrapolation"]["decades_N"] == pytest.approx(2.0, abs=0.05)  # runs reach N ~ 1e9
    header = out.read_text().splitlines()[0].split(",")
    assert header[:2] == ["N", "D"] and "new_run_lo" in header and "outside" in header
    assert main(["predict", str(path), str(new)]) == 0
    text = capsys.readouterr().out
    assert "mean law" in text and "new run" in text and "WARNING: 1 of 2 runs lie outside" in text


def _rewrite(src, dst, change, rehash=True):
    """``src`` with fit.json edited by ``change``; ``rehash``: the editor also recomputes the content hash, as a
    deliberate one can, so the checks behind the hash are what must catch the edit."""
    with zipfile.ZipFile(src) as zf:
        obj = json.loads(zf.read("fit.json"))
    change(obj)
    if rehash:
        obj["content_sha256"] = saved.content_hash(obj)
    with zipfile.ZipFile(dst, "w") as zf:
        zf.writestr("fit.json", json.dumps(obj))


@pytest.mark.parametrize("case, message", [
    ("garbage", "not a readable zip archive"),
    ("pickle", "not a readable zip archive"),
    ("no_member", "no fit.json"),
    ("not_json", "not valid JSON"),
    ("future", "fit format version 3"),
    ("tampered", "do not match their sha256"),
    ("mistyped", "corrupt scalinglab fit file"),
    ("missing", "missing field"),
    ("other_format", "not a scalinglab fit file"),
    # edited law parameters: allocate printed a loss of -99.9 for E = -100, a complex-number traceback for alpha < 0
    ("negative_e", "law E = -100 is negative"),
    ("negative_alpha", "law alpha = -1 is negative"),
])
def test_a_bad_fit_file_is_one_line(fitted, tmp_path, capsys, case, message):
    import pickle

    _, good, _ = fitted
    bad = tmp_path / "bad.slfit"
    if case == "garbage":
        bad.write_bytes(b"\x00\x01 not a zip")
    elif case == "pickle":
        bad.write_bytes(pickle.dumps({"format": "scalinglab-fit"}))
    elif case == "no_member":
        with zipfile.ZipFile(bad, "w") as zf:
            zf.writestr("other.txt", "x")
    elif case == "not_json":
        with zipfile.ZipFile(bad, "w") as zf:
            zf.writestr("fit.json", "{not json")
    else:
        change = {"future": lambda o: o.update(version=3),
                  "tampered": lambda o: o["data"]["loss"].__setitem__(0, 9.0),
                  "mistyped": lambda o: o["law"].update(alpha="0.3"),
                  "missing": lambda o: o.pop("options"),
                  "other_format": lambda o: o.update(format="pickle"),
                  "negative_e": lambda o: o["law"].update(E=-100.0),
                  "negative_alpha": lambda o: o["law"].update(alpha=-1.0)}[case]
        _rewrite(good, bad, change)
    assert main(["allocate", str(bad), "--compute", "1e19"]) == 2
    err = capsys.readouterr().err
    assert message in err and str(bad) in err and err.count("\n") == 1


def test_an_oversized_member_is_refused_before_reading(fitted, monkeypatch):
    _, good, _ = fitted
    monkeypatch.setattr(saved, "MAX_BYTES", 100)
    with pytest.raises(UserError, match="would unpack to"):
        saved.load(good)


def test_epochs_chinchilla_optimum_lies_outside_the_data(mirror, capsys):
    # Chinchilla's 5.88e23 FLOP is beyond every run in Epoch's table (the largest is ~1.3e22 FLOP).
    assert main(["fit", "--dataset", "epoch-chinchilla", "--drop-highest", "5", "--compute", "5.88e23"]) == 0
    text = capsys.readouterr().out
    assert "WARNING: this allocation lies outside the fitted runs" in text


def test_held_out_rows_carry_their_distance(runs_csv, capsys):
    # Hold out the runs with N > 3e8: the fit sees N up to 3e8, so each held-out run lies
    # log10(N / max fitted N) decades beyond it in N (or, Mahalanobis-wise, off the cloud).
    assert main(["fit", str(runs_csv), "--holdout", "N>3e8", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    N = np.array([r["N"] for r in out["holdout"]["rows"]])
    ext = [r["extrapolation"] for r in out["holdout"]["rows"]]
    _, cols = _columns(runs_csv)
    top = cols[0][cols[0] <= 3e8].max()
    assert all(e["outside"] for e in ext)
    assert [e["decades_N"] for e in ext] == pytest.approx(list(np.log10(N / top)))
    assert main(["fit", str(runs_csv), "--holdout", "N>3e8"]) == 0
    assert f"{len(N)} of {len(N)} outside" in capsys.readouterr().out


def test_save_to_a_missing_folder_is_refused_before_the_fit(runs_csv, tmp_path, capsys):
    assert main(["fit", str(runs_csv), "--save", str(tmp_path / "nowhere" / "fit.slfit")]) == 2
    err = capsys.readouterr().err
    assert "no folder" in err and err.count("\n") == 1


def test_allocate_from_a_fit_at_a_bound_is_exit_3_not_an_overflow(tmp_path, capsys):
    """Every loss equal: the fit ends with alpha and beta at a bound, and `fit --compute` says no allocation
    (exit 3). `allocate` on the same fit, saved, computed the allocation first and died in an OverflowError."""
    N, D, _ = simulate(20, 3)
    flat = tmp_path / "flat.csv"
    flat.write_text("N,D,loss\n" + "".join(f"{n:.17g},{d:.17g},4.5\n" for n, d in zip(N, D)))
    out = tmp_path / "flat.slfit"
    assert main(["fit", str(flat), "--bootstrap", "20", "--save", str(out)]) == 0
    capsys.readouterr()
    assert main(["allocate", str(out), "--compute", "1e12"]) == 3
    text = capsys.readouterr().out
    assert "compute-optimal allocation: none, the fit cannot support one (fit status at_bound" in text


def test_predicting_a_header_only_table_is_refused(fitted, tmp_path, capsys):
    """It exited 0 with an empty table before."""
    _, good, _ = fitted
    empty = tmp_path / "none.csv"
    empty.write_text("N,D,loss\n")
    assert main(["predict", str(good), str(empty)]) == 2
    assert f"{empty}: the table has no rows (a header only)" in capsys.readouterr().err


@pytest.mark.parametrize("spelling", ["varpro", "varpro-start"])
def test_a_fit_file_naming_the_start_solver_loads_as_the_varpro_start(runs_csv, tmp_path, spelling):
    out = tmp_path / "vp.slfit"
    assert main(["fit", str(runs_csv), "--start", "varpro", "--save", str(out)]) == 0
    with zipfile.ZipFile(out) as zf:
        obj = json.loads(zf.read(saved.MEMBER))
    assert obj["options"]["start"] == "varpro" and "solver" not in obj["options"]
    obj["options"]["solver"] = spelling       # how files written before name the start
    del obj["options"]["start"]
    obj.pop("content_sha256")
    obj["content_sha256"] = saved.content_hash(json.loads(json.dumps(obj, allow_nan=True)))
    old = tmp_path / "old.slfit"
    with zipfile.ZipFile(old, "w") as zf:
        zf.writestr(saved.MEMBER, json.dumps(obj, allow_nan=True))
    a, b = saved.load(out), saved.load(old)
    assert b.result.options.settings_for(F.NewtonSettings).start == "varpro" and b.result.params == a.result.params
