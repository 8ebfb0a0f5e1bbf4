"""Row numbers in the CLI's messages are the file's line numbers (header = line 1), for `fit`, `isoflop`,
`envelope` and `trend`, through blank lines and --where selections. Each table below has a
blank line before the bad row, so a count of data rows (from 0 or 1) would name another line."""

import pytest
from conftest import refused


def write(tmp_path, lines, name="t.csv"):
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return path


FIT = ["N,D,loss,set", "1e8,1e9,3.1,a", "2e8,1e9,3.0,a", "", "4e8,2e9,2.9,b", "8e8,4e9,2.8,b", "1e9,8e9,2.7,b"]


@pytest.mark.parametrize("line, cell, column, fragment", [
    (5, "-4e8", 0, "column 'N' must be positive; line 5 is -4e+08"),
    (6, "", 2, "column 'loss' has 1 missing or non-finite value(s) (first at line 6)"),
    (7, "many", 1, "column 'D' holds a non-number at line 7: 'many'"),
])
def test_fit_names_the_file_line(tmp_path, capsys, line, cell, column, fragment):
    rows = list(FIT)
    fields = rows[line - 1].split(",")
    fields[column] = cell
    rows[line - 1] = ",".join(fields)
    path = write(tmp_path, rows)
    refused(capsys, ["fit", path], str(path), fragment)
    # the same row through --where (held-out checks' reader): still the file's line
    refused(capsys, ["fit", path, "--where", "set==b"], str(path), f"line {line}")


def test_fit_names_the_line_of_a_ragged_row(tmp_path, capsys):
    path = write(tmp_path, FIT[:5] + ["8e8,4e9"] + FIT[6:])
    refused(capsys, ["fit", path], str(path), "line 6 has 2 fields, the header has 4")


def test_fit_names_the_line_of_a_blank_group_label(tmp_path, capsys):
    path = write(tmp_path, FIT[:5] + ["8e8,4e9,2.8,"] + FIT[6:])
    refused(capsys, ["fit", path, "--bootstrap", "5", "--bootstrap-by", "set"], str(path), "first: line 6")


ISO = ["N,C,loss", "1e8,1e19,3.40", "2e8,1e19,3.30", "", "4e8,1e19,3.35", "1e8,1e20,3.10", "2e8,1e20,3.00",
       "4e8,1e20,3.05"]


def test_isoflop_names_the_file_line(tmp_path, capsys):
    path = write(tmp_path, ISO[:6] + ["-2e8,1e20,3.00"] + ISO[7:])
    refused(capsys, ["isoflop", path, "--bootstrap", "0"], str(path), "column 'N'", "line 7 has -200000000.0")
    path = write(tmp_path, ISO[:6] + ["2e8,1e20,abc"] + ISO[7:])
    refused(capsys, ["isoflop", path, "--bootstrap", "0", "--where", "C>1e19"], "line 7 has 'abc'")


def test_isoflop_names_the_line_of_a_bad_drop_flag(tmp_path, capsys):
    rows = ["N,C,loss,bad"] + [r + (",no" if r else "") for r in ISO[1:]]
    rows[6] = "2e8,1e20,3.00,maybe"
    path = write(tmp_path, rows)
    refused(capsys, ["isoflop", path, "--bootstrap", "0", "--drop-flagged", "bad"], "line 7 has 'maybe'")


def test_envelope_names_the_file_line(tmp_path, capsys):
    path = write(tmp_path, ["run,N,tokens,loss", "a,1e8,1e9,3.4", "", "a,1e8,2e9,0", "b,2e8,1e9,3.5"])
    refused(capsys, ["envelope", path, "--bootstrap", "0"], "column 'loss'", "line 4 has 0")
    path = write(tmp_path, ["run,N,tokens,loss", "a,1e8,1e9,3.4", "", "a,1e8,2e9,3.3", ",2e8,1e9,3.5"])
    refused(capsys, ["envelope", path, "--bootstrap", "0"], "empty run id in line 5")


TREND = ["model,x,acc,n,family", "a,1e9,0.50,100,f", "", "b,1e10,0.60,100,f", "c,1e11,0.70,100,g",
         "d,1e12,nan,100,g", "e,1e13,0.90,100,g"]


def test_trend_names_the_file_line_through_blank_lines_and_where(tmp_path, capsys):
    path = write(tmp_path, TREND)
    args = ["--x-col", "x", "--y-col", "acc", "--count-col", "n"]
    refused(capsys, ["trend", path, *args], "column 'acc'", "line 6")
    refused(capsys, ["trend", path, *args, "--where", "family==g"], "column 'acc'", "line 6")


def test_library_row_errors_count_from_zero_and_can_be_renamed():
    from scalinglab.errors import RowError

    exc = RowError("column 'N' must be positive; {row} is -1 (a {brace})", 3)
    assert str(exc) == "column 'N' must be positive; row 3 is -1 (a {brace})"
    assert exc.renamed("line 5") == "column 'N' must be positive; line 5 is -1 (a {brace})"


@pytest.mark.parametrize("argv", [
    ["fit", "{path}", "--law", "kaplan"],
    ["compare-laws", "{path}", "--law", "kaplan", "--law", "chinchilla"],
    ["compare", "{path}", "{path}", "--bootstrap", "5"],
    ["design", "{path}", "--target", "1e22", "--budget-left", "1e22"],
])
def test_every_command_that_reads_runs_names_the_file_line(tmp_path, capsys, argv):
    """The registry laws, compare-laws, compare and design said "row 3" (a 0-based count of data rows)."""
    rows = list(FIT)
    rows[6] = "1e9,many,2.7,b"
    path = write(tmp_path, rows)
    refused(capsys, [a.format(path=path) for a in argv], str(path), "holds a non-number at line 7: 'many'")


def test_predict_names_the_file_line(tmp_path, capsys):
    from scalinglab.cli import main

    good = write(tmp_path, ["N,D,loss"] + [f"{n:g},{d:g},{2 + 400 / n ** 0.3 + 900 / d ** 0.3:.6f}"
                                            for n in (1e7, 3e7, 1e8, 3e8) for d in (1e9, 3e9, 1e10)], "good.csv")
    fitted = tmp_path / "f.slfit"
    assert main(["fit", str(good), "--save", str(fitted)]) == 0
    capsys.readouterr()
    bad = write(tmp_path, ["N,D", "1e8,1e9", "", "2e8,oops"], "new.csv")
    refused(capsys, ["predict", fitted, bad], str(bad), "line 4")
