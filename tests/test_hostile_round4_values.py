"""The fourth round of hostile input, continued: chain and translate as careful as `fit`, saved fits re-checked,
the Python front door validating as the command line does, strings from files printed escaped, and the
remaining silently wrong answers. Each case is a one-line refusal (exit 2), a warning with the distance, or a
right answer."""

import numpy as np
import pandas as pd
import pytest
from conftest import refused
from scalinglab.cli import main
from scalinglab.fitting import saved

# --- chain and translate: as careful as fit --------------------------------------------------------------------
from test_downstream_cli import ladder  # noqa: E402,F401 (the fixture)
from test_saved_fit import _rewrite, simulate


def _chain(runs, targets, *flags):
    return ["chain", runs, "--targets", targets, "--tasks", "arc", *flags]


@pytest.mark.parametrize("flags, message", [
    (["--last", "0"], "--last 0: must be a whole number >= 1"),          # used every evaluation
    (["--last", "-1"], "--last -1: must be a whole number >= 1"),
    (["--skip", "-0.1"], "--skip -0.1: the share"),                      # accepted
    (["--skip", "nan"], "--skip nan: the share"),                        # traceback
    (["--smooth", "0"], "--smooth 0: must be a whole number >= 1"),      # traceback
])
def test_chain_refuses_options_out_of_range(ladder, capsys, flags, message):  # noqa: F811
    runs, targets = ladder
    refused(capsys, _chain(runs, targets, *flags), message)


def test_chain_refuses_a_task_named_twice(ladder, capsys):  # noqa: F811
    runs, targets = ladder
    refused(capsys, ["chain", runs, "--targets", targets, "--tasks", "arc,arc"], "'arc' is named twice")


@pytest.mark.parametrize("n, d, message", [
    ("-1e9", "1e10", "column 'n', line 2: -1e+09 is not a positive number"),   # accuracy nan
    ("nan", "1e10", "column 'n', line 2: nan is not a positive number"),
    ("abc", "1e10", "column 'n', line 2: 'abc' is not a positive number"),     # traceback
    ("3e8", "0", "column 'd', line 2: 0 is not a positive number"),           # 35.37
])
def test_chain_refuses_a_target_that_is_not_a_model(ladder, tmp_path, capsys, n, d, message):  # noqa: F811
    runs, _ = ladder
    targets = tmp_path / "bad_targets.csv"
    targets.write_text(f"run,n,d\nbad,{n},{d}\n")
    refused(capsys, _chain(runs, targets), str(targets), message)


def test_chain_warns_with_the_distance_for_a_target_below_the_ladder(ladder, tmp_path, capsys):  # noqa: F811
    """N = D = 10 gave an accuracy of 35.37 with no warning."""
    runs, _ = ladder
    targets = tmp_path / "tiny.csv"
    targets.write_text("run,n,d\ntiny,10,10\n")
    assert main(list(map(str, _chain(runs, targets)))) == 0
    out = capsys.readouterr().out
    assert "warning: tiny: N = 10 lies 7.30 decades below the ladder's smallest (2e+08)" in out


def test_chain_refuses_percentages_in_the_targets_and_a_negative_task_loss(ladder, tmp_path, capsys):  # noqa: F811
    """docs/cli.md says percentages are refused; `--score` printed "actual 8455.39"."""
    runs, _ = ladder
    targets = tmp_path / "pct.csv"
    targets.write_text("run,n,d,arc_acc\nbig,7e9,4e12,84.5539\n")
    refused(capsys, _chain(runs, targets, "--score"), "column 'arc_acc': accuracy must lie in [0, 1]")
    df = pd.read_csv(runs)
    df.loc[3, "arc_loss"] = -1
    df.to_csv(runs, index=False)
    targets.write_text("run,n,d\nbig,7e9,4e12\n")
    refused(capsys, _chain(runs, targets), str(runs), "column 'arc_loss', line 5: -1 is not a loss")


@pytest.fixture
def translation(tmp_path):
    from scalinglab.fitting.chinchilla import approach3 as F

    n = np.repeat(np.geomspace(1e7, 1e9, 6), 4)
    d = n * np.tile([10, 20, 40, 80], 6)
    L0 = (1.9 + 400 / n ** 0.34 + 410 / d ** 0.28) * (1 + 1e-3 * np.random.default_rng(0).standard_normal(24))
    res = F.fit_arrays(n, d, L0, F.FitOptions())
    path = tmp_path / "src.slfit"
    saved.save(path, saved.SavedFit(res, n, d, L0, {"n_col": "N", "d_col": "D", "c_col": None, "loss_col": "loss"}))
    E = res.params["E"]
    pairs = pd.DataFrame({"L0": L0, "L1": 0.6 * (L0 - E) ** 1.1 + 0.85, "N": n})
    pairs.to_csv(tmp_path / "pairs.csv", index=False)
    (tmp_path / "at.csv").write_text("n,d\n5e9,1e11\n")
    return path, tmp_path / "pairs.csv", tmp_path / "at.csv", E


def _translate(fit, pairs, at, x="L0", y="L1", *flags):
    return ["translate", fit, pairs, "--x-col", x, "--y-col", y, "--targets", at, *flags]


def test_translate_refuses_source_losses_below_the_laws_floor(translation, capsys):
    """A target loss of 29,504 came out."""
    fit, pairs, at, E = translation
    df = pd.read_csv(pairs)
    df.loc[2, "L0"] = E - 0.1
    df.to_csv(pairs, index=False)
    refused(capsys, _translate(fit, pairs, at), str(pairs), "line 4", "is not above the saved law's E0")


@pytest.mark.parametrize("edit, message", [
    (lambda df: df.assign(L1=df["N"]), "column 'L1', line 2"),                 # N as the target loss
    (lambda df: df.assign(L1=np.where(df.index == 0, np.nan, df["L1"])), "column 'L1', line 2: nan"),
    (lambda df: df.assign(L1=np.where(df.index == 1, -1.0, df["L1"])), "column 'L1', line 3: -1 is not a loss"),
])
def test_translate_refuses_pairs_that_are_not_losses(translation, capsys, edit, message):
    fit, pairs, at, _ = translation
    edit(pd.read_csv(pairs)).to_csv(pairs, index=False)
    refused(capsys, _translate(fit, pairs, at), str(pairs), message)


def test_translate_refuses_a_target_n_that_is_not_a_number(translation, capsys):
    fit, pairs, at, _ = translation
    at.write_text("n,d\nabc,1e11\n")
    refused(capsys, _translate(fit, pairs, at), "column 'n', line 2: 'abc' is not a positive number")


def test_translate_still_translates(translation, capsys):
    fit, pairs, at, _ = translation
    assert main(list(map(str, _translate(fit, pairs, at, "L0", "L1", "--e1", "0.85")))) == 0
    assert "target " in capsys.readouterr().out


# --- saved fits re-checked ---------------------------------------------------------------------------------------

from test_saved_fit import fitted, runs_csv  # noqa: E402,F401 (fixtures: 40 runs, 60 replicates)


def test_a_forged_converged_fit_whose_gradient_is_not_small_is_refused(fitted, tmp_path, capsys):  # noqa: F811
    """A forged file that recomputed the documented hash (objective and all) was accepted as converged; allocate
    then printed a point outside its own interval."""
    import json
    import zipfile

    from scalinglab.fitting.chinchilla.newton import objective

    _, good, _ = fitted
    with zipfile.ZipFile(good) as zf:
        obj = json.loads(zf.read("fit.json"))
    assert obj["fit"]["status"] == "converged"

    def forge(o):
        o["law"]["alpha"] *= 1.02   # inside the box, not at the optimum
        law = np.array([[np.log(o["law"][k]) if k in "EAB" else o["law"][k] for k in ("E", "A", "B", "alpha",
                                                                                      "beta")]])
        N, D, L = (np.array(o["data"][k]) for k in ("N", "D", "loss"))
        o["fit"]["objective"] = float(objective(law, np.log(N), np.log(D), np.log(L), o["options"]["delta"],
                                                block=o["options"]["block"])[0])

    bad = tmp_path / "forged.slfit"
    _rewrite(good, bad, forge)
    refused(capsys, ["allocate", bad, "--compute", "1e20"], str(bad), "status 'converged', but the gradient")


def test_a_bootstrap_whose_replicates_are_all_identical_is_refused(fitted, tmp_path, capsys):  # noqa: F811
    """Every replicate the same gave intervals of zero width."""
    _, good, _ = fitted
    bad = tmp_path / "same.slfit"
    _rewrite(good, bad, lambda o: o["bootstrap"].update(samples=[o["bootstrap"]["samples"][0]] *
                                                        len(o["bootstrap"]["samples"])))
    refused(capsys, ["allocate", bad, "--compute", "1e20"], str(bad), "bootstrap replicates are all identical")


def test_a_flipped_byte_in_the_compressed_member_is_one_line(fitted, tmp_path, capsys):  # noqa: F811
    """A one-byte flip gave a zlib.error traceback."""
    import zipfile

    _, good, _ = fitted
    raw = bytearray(good.read_bytes())
    with zipfile.ZipFile(good) as zf:
        info = zf.getinfo("fit.json")
    start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
    errs = set()
    for k in range(0, min(info.compress_size, 400), 7):   # flips across the compressed data
        bad = tmp_path / f"flip{k}.slfit"
        copy = bytearray(raw)
        copy[start + k] ^= 0xFF
        bad.write_bytes(bytes(copy))
        assert main(["allocate", str(bad), "--compute", "1e20"]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "Traceback" not in err and "zlib" not in err.split(":")[0], err
        errs.add("not a scalinglab fit file" in err or "corrupt" in err or "do not match" in err)
    assert errs == {True}


# --- the front door validates as the command line does --------------------------------------------------------

@pytest.fixture(scope="module")
def table():
    N, D, L = simulate(40, 5)
    return {"N": N, "D": D, "loss": L}


@pytest.mark.parametrize("kwargs, message", [
    (dict(n_col="nope"), "unknown keyword 'n_col'"),          # ignored silently
    (dict(bogus_col="x"), "unknown keyword 'bogus_col'"),
    (dict(delta=0), "delta must be a positive finite number"),    # accepted, though the CLI refused it
    (dict(delta=-1), "delta must be a positive finite number"),   # internal ValueError
    (dict(delta=1e300), "at most 100"),                           # numpy RuntimeWarnings
    (dict(seed=-1, bootstrap=10), "seed -1"),
    (dict(seed="x", bootstrap=10), "seed 'x'"),                   # TypeError
    (dict(where=5), "where=5"),                                    # TypeError
    (dict(fixed={"beta": 1e300}), "fixed beta = 1e+300"),
    (dict(bootstrap=1), "one resample gives no interval"),
])
def test_sl_fit_refuses_what_it_would_misread(table, kwargs, message):
    import scalinglab as sl
    from scalinglab.errors import UserError

    with pytest.raises(UserError, match=message.replace("(", r"\(").replace("+", r"\+")):
        sl.fit(table, **kwargs)


def test_sl_fit_refuses_resampling_arguments_beside_options(table):
    """bootstrap=50 together with options=FitOptions(...) was dropped without a word; options decide."""
    import scalinglab as sl
    from scalinglab.errors import UserError
    from scalinglab.fitting.options import FitOptions, Resampling

    for kwargs in (dict(bootstrap=50), dict(seed=3), dict(level=0.9), dict(delta=0.01), dict(bootstrap_by="N")):
        with pytest.raises(UserError, match="given beside options="):
            sl.fit(table, options=FitOptions(), **kwargs)
    fit = sl.fit(table, options=FitOptions(resampling=Resampling(20)))
    assert fit.bootstrap is not None and fit.bootstrap.n_boot == 20


def test_sl_fit_names_columns_of_unequal_length_and_conf_int_a_bad_level(table):
    import scalinglab as sl
    from scalinglab.errors import UserError

    with pytest.raises(UserError, match="columns of unequal length: 'D' holds 5 values"):
        sl.fit({"N": table["N"], "D": table["D"][:5], "loss": table["loss"]})
    fit = sl.fit(table, bootstrap=20)
    for level in (2, 0, "x"):   # level=2 was numpy's ValueError from inside percentile
        with pytest.raises(UserError, match="strictly between 0 and 1"):
            fit.conf_int(level=level)


def test_load_runs_of_a_number_is_not_a_file_descriptor():
    """sl.load_runs(5) stat'ed file descriptor 5."""
    import scalinglab as sl
    from scalinglab.errors import UserError

    with pytest.raises(UserError, match="not a file name"):
        sl.load_runs(5)


def test_the_cli_refuses_delta_and_fix_by_the_librarys_checks(runs_csv, capsys):  # noqa: F811
    refused(capsys, ["fit", runs_csv, "--delta", "1e300"], "--delta must be a positive finite number at most 100")
    refused(capsys, ["fit", runs_csv, "--fix", "beta=1e300"], "fixed beta = 1e+300")


# --- strings read from files are printed escaped ----------------------------------------------------------------

ESC = "\x1b[2J\x1b[H"   # clear the screen, cursor home


def test_a_fits_source_and_written_by_are_printed_escaped(fitted, tmp_path, capsys):  # noqa: F811
    _, good, _ = fitted
    bad = tmp_path / "esc.slfit"
    _rewrite(good, bad, lambda o: o["data"].update(source=f"runs{ESC}\nforged line"))
    assert main(["allocate", str(bad), "--compute", "1e20"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\\x1b[2J" in out and "forged line" in out.splitlines()[0]
    assert main(["predict", str(bad), str(tmp_path / "none.csv")]) == 2
    capsys.readouterr()
    future = tmp_path / "future.slfit"
    _rewrite(good, future, lambda o: o.update(version=99, written_by=f"x{ESC}"))
    err = refused(capsys, ["allocate", future, "--compute", "1e20"], "fit format version 99")
    assert "\x1b" not in err


def test_an_error_quoting_a_file_is_one_escaped_line_of_bounded_length(tmp_path, capsys):
    """`scoreboard /proc/self/environ` printed the whole environment inside its error."""
    path = tmp_path / "weird.csv"
    path.write_text(",".join(f"col{i}{ESC}" for i in range(500)) + "\n" + ",".join(["1"] * 500) + "\n")
    err = refused(capsys, ["scoreboard", path, "--holdout", "largest-budget"], str(path))
    assert "\x1b" not in err and len(err) < 600


def test_a_chain_target_label_is_printed_escaped(ladder, tmp_path, capsys):  # noqa: F811
    runs, _ = ladder
    targets = tmp_path / "t.csv"
    targets.write_text(f"run,n,d\nbig{ESC},7e9,4e12\n")
    assert main(list(map(str, _chain(runs, targets)))) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "big\\x1b[2J" in out


@pytest.mark.parametrize("content", [b"N,D,loss\n1,2,3\n", b"\x80\x04K\x05."])   # a CSV, a pickle of 5
def test_inverse_eval_on_a_file_that_is_not_a_checkpoint_is_one_plain_line(mirror, tmp_path, capsys, content):
    """It answered with torch's internals."""
    model = tmp_path / "model.pt"
    model.write_bytes(content)
    err = refused(capsys, ["inverse-eval", "--task", "neqa", "--model", model], str(model),
                  "not a scalinglab GPT checkpoint", "this file begins")
    assert "torch" not in err.split("(")[0]


def test_numpy_scalars_in_a_message_read_as_numbers():
    from scalinglab.cli import _one_line

    assert _one_line(ValueError("value np.float64(nan) at np.int64(3)")) == "value nan at 3"


# --- the remaining silently wrong answers ------------------------------------------------------------------------

def test_ladder_report_on_a_folder_without_ladder_databases_is_refused(tmp_path, capsys):
    """It printed a full table of steps without fits, exit 0."""
    refused(capsys, ["ladder-report", "--dir", tmp_path, "--bootstrap", "0"], str(tmp_path), "holds none of")


def test_ladder_report_refuses_another_sweep_renamed_as_a_ladder_step(tmp_path, capsys):
    import json
    import sqlite3

    from scalinglab.training.sweep.store import connect

    db = tmp_path / "ladder2.db"
    con = connect(db)
    con.executemany("INSERT INTO sweep VALUES (?, ?)", [("preset", json.dumps("hoffmann")),
                                                        ("profile", json.dumps("cpu")), ("vocab_size", "512")])
    con.commit()
    con.close()
    assert sqlite3.connect(db).execute("SELECT COUNT(*) FROM sweep").fetchone()[0] == 3
    refused(capsys, ["ladder-report", "--dir", tmp_path, "--bootstrap", "0"], "holds the hoffmann sweep, not ladder2")


def test_trend_refuses_a_count_past_any_evaluation_set(tmp_path, capsys):
    """A count of 1e300 gave p = 0."""
    from test_hostile_input import TREND_ARGS, trend_csv

    path = trend_csv(tmp_path, 3, "1e300", 3)
    refused(capsys, ["trend", path, *TREND_ARGS], str(path), "line 3", "1e+300 examples, at most")


def test_scoreboard_on_random_losses_prints_no_numpy_warnings(tmp_path, capsys):
    """numpy's divide-by-zero RuntimeWarnings, with their source lines, came out on stderr."""
    rng = np.random.default_rng(2)
    path = tmp_path / "random.csv"
    path.write_text("N,D,loss\n" + "".join(f"{n},{d},{rng.uniform(2, 4)}\n" for n in np.geomspace(1e7, 1e9, 4)
                                           for d in np.geomspace(1e9, 1e11, 4)))
    main(["scoreboard", str(path), "--holdout", "largest-n"])
    assert "warning" not in capsys.readouterr().err


def test_a_warning_is_one_line_naming_the_command():
    """RuntimeWarnings printed the source line behind them."""
    import warnings

    from scalinglab import cli

    previous = cli._one_line_warnings("fit")
    try:
        text = warnings.formatwarning(RuntimeWarning("divide by zero\nsecond line"), RuntimeWarning, "x.py", 3)
    finally:
        warnings.formatwarning = previous
    assert text == "scalinglab fit: warning: divide by zero\n"
