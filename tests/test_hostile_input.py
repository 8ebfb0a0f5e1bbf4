"""Hostile input that could give a silently wrong answer: each a one-line refusal
(exit 2) or an explicit, reported choice. Row numbers in messages are the file's lines (header = line 1)."""

import json

import numpy as np
import pandas as pd
import pytest
from conftest import refused
from scalinglab.cli import main
from scalinglab.fitting.chinchilla.law import ScalingLaw

TRUE = ScalingLaw(E=1.8, A=480.0, B=2100.0, alpha=0.35, beta=0.37)




# --- trend -------------------------------------------------------------------------------------------

TREND = ["model,x,acc,n", "a,1e9,0.50,100", "b,1e10,0.60,100", "c,1e11,0.70,100", "d,1e12,0.80,100",
         "e,1e13,0.90,100"]
TREND_ARGS = ["--x-col", "x", "--y-col", "acc", "--count-col", "n"]


def trend_csv(tmp_path, line: int, cell: str, column: int):
    """The trend table with the cell at file line ``line`` (header = 1), field ``column``, replaced."""
    lines = list(TREND)
    fields = lines[line - 1].split(",")
    fields[column] = cell
    lines[line - 1] = ",".join(fields)
    path = tmp_path / "acc.csv"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("cell,column,name", [
    ("nan", 2, "acc"), ("", 2, "acc"), ("inf", 1, "x"), ("", 1, "x"), ("nan", 3, "n"), ("-inf", 3, "n"),
])
def test_trend_refuses_a_missing_or_infinite_value_naming_file_column_and_line(tmp_path, capsys, cell, column,
                                                                                 name):
    path = trend_csv(tmp_path, 4, cell, column)
    refused(capsys, ["trend", path, *TREND_ARGS], str(path), f"column {name!r}", "line 4")


def test_trend_refuses_a_fractional_count(tmp_path, capsys):
    path = trend_csv(tmp_path, 5, "10.5", 3)
    refused(capsys, ["trend", path, *TREND_ARGS], str(path), "column 'n'", "line 5", "10.5", "whole number")


def test_trend_keeps_every_row_of_a_clean_table(tmp_path, capsys):
    path = tmp_path / "acc.csv"
    path.write_text("\n".join(TREND) + "\n")
    assert main(["trend", str(path), *TREND_ARGS, "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert row["n_points"] == 5


def test_trend_calls_a_directory_a_directory(tmp_path, capsys):
    err = refused(capsys, ["trend", tmp_path, *TREND_ARGS], "directory")
    assert "no such file" not in err


# --- isoflop and envelope: a repeated column name ----------------------------------------------------

def isoflop_rows(loss=None):
    rows = []
    for c in (1e18, 1e19, 1e20):
        for n in np.geomspace(1e7, 1e9, 7) * (c / 1e18) ** 0.5:
            d = c / (6 * n)
            rows.append((n, c, TRUE.loss(n, d) if loss is None else loss, f"r{len(rows)}"))
    return rows


def test_isoflop_and_envelope_refuse_a_header_that_repeats_a_column(tmp_path, capsys):
    path = tmp_path / "dup.csv"
    path.write_text("N,N,C,loss,run\n" + "".join(f"{n},{2 * n},{c},{y},{r}\n" for n, c, y, r in isoflop_rows()))
    for command in ("isoflop", "envelope", "fit"):
        refused(capsys, [command, path, "--bootstrap", "0"], str(path), "column 'N' twice")


# --- isoflop: losses that are all equal --------------------------------------------------------------

@pytest.mark.parametrize("method", ["parabola", "spline"])
def test_isoflop_on_equal_losses_reports_no_optimum_and_a_non_ok_status(tmp_path, capsys, method):
    path = tmp_path / "flat.csv"
    path.write_text("N,C,loss\n" + "".join(f"{n},{c},{y}\n" for n, c, y, _ in isoflop_rows(loss=3.0)))
    assert main(["isoflop", str(path), "--bootstrap", "0", "--method", method, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    (group,) = out["groups"]
    text = json.dumps(group)
    assert "losses all equal" in text
    assert '"ok"' not in text


def test_equal_losses_in_one_budget_drop_only_that_budget():
    from scalinglab.fitting.frontier import isoflop

    rows = isoflop_rows()
    df = pd.DataFrame(rows, columns=["N", "C", "loss", "run"])
    df.loc[df["C"] == 1e20, "loss"] = 3.0
    optima = isoflop.budget_optima(df, n_col="N", c_col="C", loss_col="loss", n_boot=0)
    flat = optima[optima["flops"] == 1e20].iloc[0]
    assert np.isnan(flat["n_opt"]) and flat["note"] == "losses all equal: no minimum"
    assert np.isfinite(optima[optima["flops"] < 1e20]["n_opt"]).all()


# --- fit --compute: no allocation from a fit that cannot support one ---------------------------------

def fit_grid(loss):
    rows = []
    for n in np.geomspace(1e7, 1e9, 5):
        for d in np.geomspace(1e9, 1e11, 4):
            rows.append((n, d, 6 * n * d, loss(n, d)))
    return rows


def write_fit(tmp_path, rows, name="runs.csv"):
    path = tmp_path / name
    lines = [",".join(repr(float(v)) for v in row) for row in rows]
    path.write_text("N,D,C,loss\n" + "\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("loss", [
    lambda n, d: 3.0,                                           # all equal: N_opt 0, D_opt inf
    lambda n, d: 2 + 0.1 * np.log(n) + 410 / d ** 0.28,         # rises with N: at a bound, bootstrap fails
])
def test_fit_compute_gives_no_allocation_from_a_fit_at_a_bound(tmp_path, capsys, loss):
    path = write_fit(tmp_path, fit_grid(loss))
    assert main(["fit", str(path), "--compute", "1e21", "--bootstrap", "10"]) == 3
    out = capsys.readouterr().out
    assert "compute-optimal allocation: none" in out and "at_bound" in out and "N_opt  " not in out
    assert main(["fit", str(path), "--compute", "1e21", "--json"]) == 3
    out = json.loads(capsys.readouterr().out)
    assert out["compute_optimal"] is None and "at_bound" in out["compute_optimal_unusable"]


def test_fit_compute_still_allocates_from_a_converged_fit(tmp_path, capsys):
    path = write_fit(tmp_path, fit_grid(lambda n, d: TRUE.loss(n, d)))
    assert main(["fit", str(path), "--compute", "1e21", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["compute_optimal"][0]["n_opt"] == pytest.approx(TRUE.n_opt(1e21), rel=1e-3)
    assert "compute_optimal_unusable" not in out


def test_fit_refuses_a_c_col_that_is_not_compute(tmp_path, capsys):
    rng = np.random.default_rng(1)
    rows = [(n, d, rng.uniform(2, 4), y) for n, d, _, y in fit_grid(lambda n, d: TRUE.loss(n, d))]
    path = write_fit(tmp_path, rows)
    refused(capsys, ["fit", path, "--c-col", "C", "--compute", "1e21"], str(path), "--c-col C",
            "below one token", "FLOP")


# --- messages ----------------------------------------------------------------------------------------

def test_a_header_only_file_says_it_has_no_rows(tmp_path, capsys):
    path = tmp_path / "empty.csv"
    path.write_text("N,D,loss\n")
    err = refused(capsys, ["fit", path], str(path), "no rows (a header only)")
    assert "drop the 0" not in err


def test_sweep_summary_says_how_many_budgets_the_fit_needs():
    from scalinglab.sweeps.analysis import _isoflop_fit

    points = pd.DataFrame({"flops": [1e15] * 4, "n": [1, 2, 3, 4], "loss": [3.0, 2.9, 2.95, 3.1]})
    reason = _isoflop_fit("unused.db", "spline", 0, None, points=points)
    assert reason == "1 budget(s) with at least 4 finished sizes; the fit needs 3 such budgets"
