"""One selection: `--where` in every command, and `Runs.select`, choose rows with `conditions.chosen` and refuse
an empty selection with one message, naming the condition that emptied it and what its column holds."""

import numpy as np
import pandas as pd
import pytest
import scalinglab as sl
from conftest import refused
from scalinglab.errors import UserError
from scalinglab.fitting.conditions import chosen


@pytest.fixture
def runs_csv(tmp_path):
    rows = []
    for c in (1e18, 4e18, 1.6e19):
        for n in np.geomspace(2e7, 4e8, 5):
            d = c / (6 * n)
            rows.append(dict(N=n, D=d, C=c, loss=1.69 + 406.4 / n**0.34 + 410.7 / d**0.28, run=f"r{len(rows)}"))
    path = tmp_path / "runs.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


@pytest.mark.parametrize("where, message", [
    (["N>1e99"], "'N>1e99' matches none of the 15 rows (N holds 2e+07 to 4e+08)"),
    (["N>1e8", "run==zz"], "'run==zz' matches none of the 6 rows left by 'N>1e8' (run holds r13, r14, r3, r4, r8, r9)"),
])
def test_fit_isoflop_scoreboard_and_the_api_say_the_same_thing(runs_csv, capsys, where, message):
    flags = [a for w in where for a in ("--where", w)]
    for command, extra in (("fit", []), ("isoflop", []), ("scoreboard", ["--holdout", "largest-n"])):
        err = refused(capsys, [command, runs_csv, *flags, *extra], f"{runs_csv}: {message}")
        assert err.startswith(f"scalinglab {command}: error:")
    with pytest.raises(UserError) as exc:
        sl.load_runs(str(runs_csv)).select(where=where)
    assert str(exc.value) == message


def test_the_same_rows_from_a_table_of_lists_and_a_dataframe(runs_csv):
    df = pd.read_csv(runs_csv)
    table = {c: list(df[c]) for c in df}
    for where in (["C>=4e18"], ["C>=4e18", "run~1"], ["N<1e8", "C==1e18"]):
        assert np.array_equal(chosen(df, where), chosen(table, where))
    assert chosen(df, ["C>=4e18", "run~1"]).sum() == sum(
        c >= 4e18 and "1" in r for c, r in zip(df.C, df.run))


def test_a_table_with_no_rows_is_refused_not_matched():
    with pytest.raises(UserError, match="the table has no rows"):
        chosen({"N": []}, ["N>1"])
