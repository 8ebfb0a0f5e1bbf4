"""Runaway counts, non-finite settings, flags that argparse misread, and errors from the OS or SQLite are each one
line naming the flag, value or file, with exit 2: never a traceback, a hang or gigabytes asked for."""

import sqlite3
from pathlib import Path

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
