"""Runaway counts, non-finite settings, flags that argparse misread, and errors from the OS or SQLite are each one
line naming the flag, value or file, with exit 2: never a traceback, a hang or gigabytes asked for."""

import sqlite3
from pathlib import Path

import numpy as np
import pytest
from conftest import refused
from scalinglab import cli

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "cpu_sweep_runs.csv"
DESIGN = ["design", str(EXAMPLE), "--target", "1e13", "--budget-left", "1e12"]


@pytest.mark.parametrize("argv, fragments", [
    (DESIGN + ["--sims", str(10**9)], ("--sims 1000000000: at most 10,000 worlds",)),       # asked for 37 GiB
    (DESIGN + ["--resamples", str(10**9)], ("--resamples 1000000000: at most 10,000",)),  # 246 GiB
    (DESIGN + ["--k", str(10**6)], ("--k 1000000: at most 1,000 runs",)),              # silently proposed 6 runs
    (["ladder-report", "--dir", ".", "--bootstrap", str(10**7)], ("--bootstrap 10000000: at most 100,000",)),
    (["isoflop", str(EXAMPLE), "--budget-col", "budget", "--noise", "inf"], ("--noise", "finite", "inf")),
    (["fit", str(EXAMPLE), "--compute", "-1e12"], ("compute budgets must be positive", "-1e+12")),
    (["sweep-report", "--db", "/dev/zero"], ("/dev/zero: is a character device",)),
])
def test_refused_in_one_line(capsys, argv, fragments):
    refused(capsys, argv, *fragments)


def test_design_never_proposes_fewer_runs_than_asked_in_silence(capsys):
    # Six candidates exist at this budget; asking for 10 used to return 6 without a word.
    refused(capsys, DESIGN + ["--k", "10", "--bootstrap", "20", "--sims", "2", "--resamples", "10"],
            "--k 10:", "at most 6")


def test_os_and_sqlite_errors_are_one_line(capsys, monkeypatch, tmp_path):
    # What a command does not word itself still reaches the user as the file and the reason.
    def raise_os(args):
        raise PermissionError(13, "Permission denied", str(tmp_path / "runs.db"))

    def raise_sqlite(args):
        raise sqlite3.OperationalError("no such column: final_loss")

    parser = cli.build_parser()
    args = parser.parse_args(["sweep-report", "--db", str(tmp_path / "runs.db")])
    for fn, fragments in ((raise_os, ("runs.db: Permission denied",)),
                          (raise_sqlite, ("runs.db: no such column: final_loss", "edited sweep database"))):
        monkeypatch.setattr(cli, "build_parser", lambda: _FixedParser(args, fn))
        refused(capsys, ["sweep-report", "--db", str(tmp_path / "runs.db")], *fragments)


class _FixedParser:
    """A parser whose parse_args returns ``args`` with ``func`` replaced (the command's own work stubbed out)."""

    def __init__(self, args, func):
        self.args, self.func = args, func

    def parse_args(self, argv):
        self.args.func = self.func
        return self.args


def test_a_real_edited_database_is_one_line(tmp_path, capsys):
    # A sweep database whose runs table lost a column: SQLite's error, named by the file, not a traceback.
    db = tmp_path / "edited.db"
    with sqlite3.connect(db) as con:
        con.execute("CREATE TABLE sweep (key TEXT, value TEXT)")
        con.execute("CREATE TABLE runs (run_id TEXT)")
    assert cli.main(["sweep-report", "--db", str(db)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and str(db) in err


# --- intervals only where the resamples can support them ----------------------------------------------------

def test_a_level_the_resamples_cannot_support_is_refused(capsys):
    # 20 resamples printed a "100% interval (20 of 20 resamples)" for --level 0.999999: just the extremes.
    refused(capsys, ["fit", str(EXAMPLE), "--bootstrap", "20", "--level", "0.999999"],
            "--level 0.999999 with --bootstrap 20", "just the extreme replicates", "at least 200,000 resamples")
    refused(capsys, ["fit", str(EXAMPLE), "--bootstrap", "100", "--level", "0.999"], "at least 200 resamples")


def test_a_cluster_bootstrap_over_too_few_groups_is_refused(tmp_path, capsys):
    # Three groups give 10 distinct resamples; their "95% interval" for E was [2e-09, 4.33].
    rows = Path(EXAMPLE).read_text().splitlines()
    path = tmp_path / "grouped.csv"
    path.write_text("\n".join([rows[0] + ",lab"] + [f"{r},{i % 3}" for i, r in enumerate(rows[1:])]) + "\n")
    refused(capsys, ["fit", str(path), "--bootstrap", "100", "--bootstrap-by", "lab"],
            "--bootstrap-by lab: the runs fall in 3 groups", "needs at least 5")


def test_identical_tables_are_not_compared(capsys):
    refused(capsys, ["compare", str(EXAMPLE), str(EXAMPLE), "--bootstrap", "50"], "hold the same runs")


# --- extrapolations are said beside the number ----------------------------------------------------------------

def test_design_warns_when_the_target_is_far_beyond_the_runs(capsys):
    argv = DESIGN[:2] + ["--target", "1e40", "--budget-left", "1e12", "--bootstrap", "20", "--sims", "2",
                         "--resamples", "10"]
    assert cli.main(argv) == 0
    assert "WARNING: the target lies 28.00 decades of compute above the largest fitted run" in capsys.readouterr().out


def test_compare_laws_warns_when_at_is_beyond_the_runs(capsys):
    argv = ["compare-laws", str(EXAMPLE), "--law", "chinchilla", "--law", "kaplan", "--at", "n=1e15,d=1e18"]
    assert cli.main(argv) == 0
    out = capsys.readouterr().out
    assert "WARNING: --at lies outside the runs (n 9.78 decades above" in out


def test_the_distance_of_a_huge_run_names_the_right_axis():
    # 6·N·D overflowed to inf for N = 1e308, and "beyond" then blamed C alone.
    from scalinglab.fitting.prediction.domain import Domain

    dom = Domain.from_runs([1e7, 1e8, 1e9], [1e9, 1e10, 2e9])
    d = dom.distance([1e308], [1e9])
    assert d["decades_N"][0] == pytest.approx(299.0) and np.isfinite(d["decades_C"][0])


def test_a_closed_pipe_is_not_an_error(capsys, monkeypatch):
    # `scalinglab fit ... | head`: BrokenPipeError is an OSError, and must not be reported as one.
    def raise_pipe(args):
        raise BrokenPipeError(32, "Broken pipe")

    args = cli.build_parser().parse_args(["fit", str(EXAMPLE)])
    monkeypatch.setattr(cli, "build_parser", lambda: _FixedParser(args, raise_pipe))
    assert cli.main(["fit", str(EXAMPLE)]) == 0
    assert capsys.readouterr().err == ""


def test_delta_is_one_flag_for_every_law(capsys):
    # Notebook 01 varies Hoffmann's δ; the command line can too, for Approach 3 and the registry's laws alike.
    for law in ([], ["--law", "kaplan"]):
        assert cli.main(["fit", str(EXAMPLE), "--delta", "0.01", "--json", *law]) == 0
        out = capsys.readouterr().out
        assert '"delta": 0.01' in out
    refused(capsys, ["fit", str(EXAMPLE), "--delta", "-1"], "--delta must be a positive finite number")


# --- messages that said too little or the wrong thing ---------------------------------------------------------

def test_a_ragged_row_is_named_as_ragged(tmp_path, capsys):
    # pandas filled the short row with NaN, which read as "line 4 has nan".
    path = tmp_path / "ragged.csv"
    path.write_text("N,C,loss\n1e8,1e18,3.0\n2e8,1e18,2.9\n4e8,1e18\n")
    refused(capsys, ["isoflop", path], "line 4 has 2 fields, the header has 3")


def test_compare_laws_on_too_few_runs_says_why(tmp_path, capsys):
    path = tmp_path / "three.csv"
    path.write_text("N,D,loss\n1e8,1e9,3.0\n2e8,2e9,2.9\n4e8,4e9,2.8\n")
    refused(capsys, ["compare-laws", path, "--law", "chinchilla", "--law", "kaplan"],
            "holds out none of the 3 selected rows: too few runs", "--holdout COND")


def test_export_onto_a_file_is_one_line(tmp_path, capsys):
    # A real sweep database with finished runs, exported onto an existing file: mkdir raised FileExistsError.
    import shutil

    db = tmp_path / "models.db"
    shutil.copy(Path(__file__).resolve().parents[1] / "data" / "models" / "inverse-ladder.db", db)
    target = tmp_path / "taken"
    target.write_text("a file")
    from scalinglab.errors import UserError
    from scalinglab.training.sweep.export import export_models

    with pytest.raises(UserError, match="is a file, not a folder"):
        export_models(db, target)
    assert target.read_text() == "a file"


def test_a_run_the_law_predicts_exactly_is_inside(tmp_path, capsys):
    # Equal losses: the law is flat and σ = 0, so every interval has zero width; rows were marked "outside" at
    # +0.00% error by a last-bit difference.
    import itertools

    path = tmp_path / "flat.csv"
    path.write_text("N,D,loss\n" + "".join(f"{n:g},{d:g},3.0\n" for n, d in
                                            itertools.product([1e7, 2e7, 4e7, 8e7], [1e9, 3e9, 1e10, 3e10])))
    assert cli.main(["fit", str(path), "--holdout", "N>=8e7"]) == 0
    out = capsys.readouterr().out
    assert "4 of 4 inside their new-run interval" in out
    assert not [line for line in out.splitlines() if line.rstrip().endswith("]  outside")]
