"""One reader from a table to a law's arrays (``fitting.columns.inputs_at``): Chinchilla's table helpers, held-out
checks, the front door and the CLI read the same cells the same way and name a bad cell in the same words."""

import numpy as np
import pandas as pd
import pytest
import scalinglab as sl
from conftest import refused
from scalinglab.errors import RowError, UserError
from scalinglab.fitting.chinchilla import approach3 as F
from scalinglab.fitting.studies import holdout as H


def table(bad=None):
    n = np.repeat(np.geomspace(1e7, 1e9, 4), 4)
    d = np.tile(np.geomspace(1e9, 1e11, 4), 4)
    t = pd.DataFrame({"N": n, "C": 6 * n * d, "loss": 1.7 + 400 / n**0.3 + 400 / d**0.3})
    if bad is not None:
        col, row, value = bad
        t[col] = t[col].astype(object)
        t.loc[row, col] = value
    return t


def test_the_readers_return_the_same_arrays():
    t = table()
    a = F.runs_from_table(t, "N", c_col="C")
    b = H.runs_at(t, np.arange(len(t)), "N", c_col="C")
    c = F.chinchilla_arrays(t, None, "N", c_col="C")
    for x, y, z in zip(a[:3], b[:3], c[:3]):
        assert np.array_equal(x, y) and np.array_equal(x, z)
    assert a[3] == b[3] == c[3] == ("N", "C/(6*N)", "loss")
    assert np.allclose(a[1], t.C / (6 * t.N))
    none = F.chinchilla_arrays(t[["N", "C"]], None, "N", loss_col=None, c_col="C")
    assert none[2] is None and np.array_equal(none[1], a[1])   # runs not trained yet: no loss needed


@pytest.mark.parametrize("bad, message", [
    (("loss", 5, "abc"), "column 'loss' holds a non-number at {row}: 'abc'"),
    (("N", 2, -1.0), "column 'N' must be positive; {row} is -1"),
    (("C", 7, float("nan")), "column 'C' has 1 missing or non-finite value(s) (first at {row})"),
])
def test_a_bad_cell_is_named_alike_by_every_path(tmp_path, capsys, bad, message):
    t = table(bad)
    row = bad[1]
    for read in (lambda: F.runs_from_table(t, "N", c_col="C"),
                 lambda: H.runs_at(t, np.arange(len(t)), "N", c_col="C"),
                 lambda: sl.fit(t, c="C")):
        with pytest.raises(RowError) as exc:
            read()
        assert str(exc.value.renamed(f"row {exc.value.row + 1}")) == message.format(row=f"row {row + 1}")
    path = tmp_path / "runs.csv"
    t.to_csv(path, index=False)
    line = f"line {row + 2}"   # the header is line 1
    refused(capsys, ["fit", path, "--c-col", "C"], f"{path}: {message.format(row=line)}")
    refused(capsys, ["fit", path, "--c-col", "C", "--holdout", "N>5e8"], message.format(row=line))


def test_a_missing_column_names_its_role():
    with pytest.raises(UserError, match=r"no column 'tokens' \(training tokens D\); the table has N, C, loss"):
        F.runs_from_table(table(), "N", "tokens")


def test_one_step_from_table_to_fit():
    """``laws.table.fit_rows`` is the step every table fit takes (``sl.fit``/`scalinglab fit`, ``fit_table``,
    ``holdout``): the same rows give the same parameters, and the fitted rows it keeps are the table's, after the
    highest losses are dropped."""
    from scalinglab.fitting.laws import Columns, fit_table
    from scalinglab.fitting.laws.table import fit_rows

    rng = np.random.default_rng(3)
    n = np.repeat(np.geomspace(1e7, 1e9, 5), 5)
    d = np.tile(np.geomspace(1e9, 1e11, 5), 5)
    t = pd.DataFrame({"N": n, "D": d, "loss": (1.7 + 400 / n**0.3 + 400 / d**0.3) * np.exp(0.01 * rng.standard_normal(25))})
    t.loc[7, "loss"] = 9.0    # an outlier the drop removes
    cols = Columns(n="N", d="D", loss="loss")
    fitted = fit_rows(F.CHINCHILLA, t, np.arange(20), cols, drop_highest=1)
    done = fitted.data
    assert 7 not in done.rows and len(done.rows) == 19 and np.array_equal(done.y, t.loss.to_numpy()[done.rows])
    via_table = fit_table(F.CHINCHILLA, t, cols, np.arange(25) < 20, drop_highest=1)
    via_holdout = H.holdout(t, np.arange(25) >= 20, drop_highest=1)
    via_front = sl.fit(t.iloc[:20].reset_index(drop=True), drop_highest=1)
    for other in (via_table, via_holdout.fit, via_front):
        assert other.params == pytest.approx(fitted.params, rel=1e-12)
    assert np.array_equal(via_holdout.train_rows, done.rows)
    with pytest.raises(UserError, match="no rows to fit"):
        fit_rows(F.CHINCHILLA, t, np.array([], int), cols)


def test_a_fit_keeps_the_runs_it_saw():
    # sl.fit's result holds its runs: the rows the selection kept less the highest losses dropped, read as the fit
    # read them, so residuals and plots need no second read of the table.
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "examples" / "cpu_sweep_runs.csv"
    table = pd.read_csv(path)
    fit = sl.fit(sl.load_runs(str(path)), where="N>2e4", drop_highest=2)
    chosen = np.flatnonzero(table["N"].to_numpy() > 2e4)
    assert len(fit.data) == fit.n_rows == len(chosen) - 2 and set(fit.data.rows) < set(chosen)
    highest = chosen[np.argsort(table["loss"].to_numpy()[chosen])[-2:]]
    assert not set(highest) & set(fit.data.rows)
    assert np.array_equal(fit.data.y, table["loss"].to_numpy()[fit.data.rows])
    assert np.array_equal(fit.data.inputs["n"], table["N"].to_numpy(float)[fit.data.rows])
    assert np.allclose(fit.residuals(), np.log(fit.data.y) - np.log(fit.predict(fit.data.inputs)))
    assert "FitData(" in repr(fit.data) and "data" not in repr(fit)
    from scalinglab.fitting.laws import fit_law

    bare = fit_law(F.CHINCHILLA, fit.data.inputs, fit.data.y)
    assert bare.data is None and bare.params == fit.params
    with pytest.raises(UserError, match="kept no runs"):
        bare.residuals()
