"""One path for every law: the options object carries the resampling, `Runs` carries the selection, and a
held-out run is predicted into the one `Predictions` class whatever the law, Chinchilla's included."""

import json

import numpy as np
import pytest
import scalinglab as sl
from scalinglab.cli import main
from scalinglab.errors import UserError
from scalinglab.fitting.chinchilla import approach3 as F
from scalinglab.fitting.chinchilla.law import ScalingLaw
from scalinglab.fitting.options import FitOptions, Resampling
from scalinglab.fitting.prediction.held_out import Predictions
from scalinglab.runs import Runs

TRUE = ScalingLaw(E=1.8, A=400.0, B=2000.0, alpha=0.34, beta=0.37)


@pytest.fixture(scope="module")
def table():
    rng = np.random.default_rng(3)
    N = np.repeat(np.geomspace(2e7, 2e9, 8), 5)
    D = np.tile(np.geomspace(4e8, 4e10, 5), 8)
    L = TRUE.loss(N, D) * np.exp(0.01 * rng.standard_normal(N.size))
    return {"N": list(N), "D": list(D), "loss": list(L), "model": [f"m{i // 5}" for i in range(N.size)]}


@pytest.fixture(scope="module")
def runs_csv(tmp_path_factory, table):
    path = tmp_path_factory.mktemp("runs") / "runs.csv"
    rows = zip(table["N"], table["D"], table["loss"], table["model"])
    path.write_text("N,D,loss,model\n" + "".join(f"{n:.17g},{d:.17g},{x:.17g},{m}\n" for n, d, x, m in rows))
    return str(path)


def test_resampling_is_checked_where_it_is_made():
    with pytest.raises(UserError, match="whole number"):
        Resampling(n=-1)
    with pytest.raises(UserError, match="strictly between 0 and 1"):
        Resampling(n=10, level=1.0)
    with pytest.raises(UserError, match="needs a number of resamples"):
        Resampling(by="model")


def test_the_options_object_carries_the_resampling(table):
    # The same bootstrap whether its settings come in the options or as keywords: seed 7 and 40 refits either way.
    opts = FitOptions(resampling=Resampling(n=40, seed=7, level=0.9))
    a = sl.fit(table, options=opts)
    b = sl.fit(table, bootstrap=40, seed=7, level=0.9)
    assert a.bootstrap.n_boot == 40 and a.bootstrap.seed == 7 and a.bootstrap.level == 0.9
    np.testing.assert_array_equal(a.bootstrap.samples, b.bootstrap.samples)
    # A different seed draws other resamples: the options' seed is really the one used.
    c = sl.fit(table, options=FitOptions(resampling=Resampling(n=40, seed=8, level=0.9)))
    assert not np.array_equal(a.bootstrap.samples, c.bootstrap.samples)


def test_parameters_held_in_the_options_are_held(table):
    # FitOptions(fixed=...) is honoured by the one path, as the fixed= keyword is; both give the same fit.
    held = sl.fit(table, options=FitOptions(fixed={"E": 1.7}))
    assert held.params["E"] == 1.7 and held.params == sl.fit(table, fixed={"E": 1.7}).params
    assert sl.fit(table).params["E"] != 1.7


def test_resampling_by_a_column_counts_its_groups(table):
    fit = sl.fit(table, options=FitOptions(resampling=Resampling(n=30, by="model")))
    assert fit.bootstrap.unit == "model" and fit.bootstrap.n_units == 8


def test_runs_hold_their_selection(table):
    runs = Runs(table, "t").select(where="N<1e9", holdout=["D>1e10", "D<5e8"])
    n_small = sum(n < 1e9 for n in table["N"])
    held = [i for i in range(len(table["N"])) if table["N"][i] < 1e9 and (table["D"][i] > 1e10 or table["D"][i] < 5e8)]
    assert list(runs.held) == held
    assert len(runs.rows) + len(runs.held) == n_small and not set(runs.rows) & set(runs.held)
    with pytest.raises(UserError, match="matches none of the 40 rows"):
        Runs(table, "t").select(where="N>1e12")
    with pytest.raises(UserError, match="holds out none of the"):
        Runs(table, "t").select(holdout="D>1e12")
    with pytest.raises(UserError, match="leaving none to fit"):
        Runs(table, "t").select(holdout="D>0")


def test_chinchilla_through_the_one_path_is_its_solver_exactly(table):
    # sl.fit goes through the registry's engine to Chinchilla's batched solver: the same optimum, bit for bit.
    direct = F.fit_arrays(np.array(table["N"]), np.array(table["D"]), np.array(table["loss"]))
    assert sl.fit(table).params == direct.params


@pytest.mark.parametrize("law", ["chinchilla", "kaplan", "gadre"])
def test_every_law_predicts_held_out_runs_into_one_class(runs_csv, capsys, law):
    assert main(["fit", runs_csv, "--law", law, "--holdout", "N>1e9", "--bootstrap", "20", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    held = out["holdout"]
    assert held["conditions"] == ["N>1e9"] and held["n_train"] + held["summary"]["n"] == 40
    row = held["rows"][0]
    # Every law's held-out rows carry the law's inputs, a mean-law and a new-run interval, and the distance
    # from the fitted runs (a law of N and D).
    assert {"N", "D", "actual", "predicted", "interval", "new_run_interval", "extrapolation"} <= set(row)
    # The new-run interval adds run noise to the replicates' predictions, so over the rows it is the wider one
    # (row by row, 20 noisy replicates can fall either way).
    width = {k: np.mean([r[k][1] - r[k][0] for r in held["rows"]]) for k in ("interval", "new_run_interval")}
    assert width["new_run_interval"] > width["interval"] > 0
    assert {"rmsle", "n_inside_new_run_interval", "worst_row"} <= set(held["summary"])


def test_law_chinchilla_and_fit_print_the_same(runs_csv, capsys):
    assert main(["fit", runs_csv, "--holdout", "N>1e9", "--json"]) == 0
    plain = json.loads(capsys.readouterr().out)
    assert main(["fit", runs_csv, "--law", "chinchilla", "--holdout", "N>1e9", "--json"]) == 0
    named = json.loads(capsys.readouterr().out)
    assert plain == named


def test_predictions_table_heads_each_input(runs_csv, capsys):
    assert main(["fit", runs_csv, "--law", "kaplan", "--holdout", "N>1e9"]) == 0
    text = capsys.readouterr().out
    head = next(line for line in text.splitlines() if line.lstrip().startswith("row"))
    assert head.split()[:5] == ["row", "N", "D", "actual", "predicted"]
    assert "RMSLE" in text and "new-run interval" in text


def test_predictions_subset_keeps_inputs_in_step():
    p = Predictions(rows=np.array([3, 5, 8]), actual=np.array([2.0, 3.0, 4.0]), predicted=np.array([2.2, 2.7, 4.0]),
                    lower=np.full(3, np.nan), upper=np.full(3, np.nan), level=0.95,
                    inputs={"n": np.array([1.0, 2.0, 3.0]), "d": np.array([10.0, 20.0, 30.0])})
    q = p.subset([True, False, True])
    assert list(q.rows) == [3, 8] and list(q.N) == [1.0, 3.0] and list(q.D) == [10.0, 30.0]
    assert q.rmsle() == pytest.approx(np.sqrt(np.log(1.1) ** 2 / 2))
