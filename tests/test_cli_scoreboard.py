"""`scalinglab scoreboard`: a user's runs on the benchmark's scoreboard, a table or JSON, one-line errors."""

import json

import numpy as np
import pandas as pd
from scalinglab import cli


def _runs(path, noise=0.005, seed=0):
    """Hoffmann's law on a 6-budget isoFLOP grid (9 sizes each), Gaussian noise in log loss: 5 budgets fitted
    leave 3 one-step-out budgets to calibrate on."""
    rng = np.random.default_rng(seed)
    rows = []
    for c in (1e18, 3e18, 1e19, 1e20, 3e20, 1e21):
        for n in 0.09 * c ** 0.5 * np.logspace(-0.75, 0.75, 9):
            d = c / (6 * n)
            rows.append({"N": n, "C": c, "loss": (1.69 + 406.4 / n ** 0.34 + 410.7 / d ** 0.28)
                         * np.exp(noise * rng.standard_normal())})
    pd.DataFrame(rows).to_csv(path, index=False)
    return str(path)


def test_table_and_json_name_every_entry_on_the_held_out_budget(tmp_path, capsys):
    csv = _runs(tmp_path / "runs.csv")
    assert cli.main(["scoreboard", csv, "--holdout", "largest-budget", "--c-col", "C",
                     "--bootstrap", "200", "--fit-bootstrap", "20"]) == 0
    text = capsys.readouterr().out
    assert "9 held out (largest-budget)" in text and "approach2 / spline" in text and "kaplan / law engine" in text
    # the verdict rules, printed: one budget is one unit, so nothing is ranked; the baselines are on the board
    assert "independent unit: budget, 1 held out" in text and "not ranked (1 budget held out, 5 needed)" in text
    assert "baseline / power law in C" in text and "baseline / last optimum" in text
    assert "coverage of the 95% intervals over independent held-out units" in text
    assert cli.main(["scoreboard", csv, "--holdout", "largest-budget", "--c-col", "C", "--json",
                     "--bootstrap", "200", "--fit-bootstrap", "20"]) == 0
    out = json.loads(capsys.readouterr().out)
    rows = {(r["law"], r["estimator"]): r for r in out["rows"]}
    # Approach 3 on runs from the law it fits: the held-out error is about the noise (0.005), far under the
    # 0.02+ of a wrong form; Approach 2 predicts N_opt only, so it has no RMSLE.
    assert rows["chinchilla", "approach3"]["rmsle"] < 0.012
    assert rows["approach2", "parabola"]["rmsle"] is None and rows["approach2", "parabola"]["nopt_error"] is not None
    assert {"rmsle", "coverage_calibrated", "coverage_param_only", "coverage_noise", "verdict"} <= set(
        rows["kaplan", "law engine"])
    assert out["min_units"] == 5 and "calibrated" in out["coverage_overall"]["laws"]


def test_conditions_and_units_and_one_line_errors(tmp_path, capsys):
    csv = _runs(tmp_path / "runs.csv")
    assert cli.main(["scoreboard", csv, "--holdout", "C>=1e21", "--holdout", "N>1e11", "--c-col", "C",
                     "--unit-col", "C", "--bootstrap", "100", "--fit-bootstrap", "0", "--json"]) == 0
    # one held-out budget is one unit: a bootstrap over one unit has no spread, so nothing is ranked
    out = json.loads(capsys.readouterr().out)
    assert {r["verdict"] for r in out["rows"]} == {"not ranked (1 C held out, 5 needed)"}
    assert out["datasets"][0]["n_heldout"] == 9 and out["datasets"][0]["n_units"] == 1
    bad = tmp_path / "bad.csv"
    bad.write_text("N,D,loss\n1e8,2e9,3.1\n2e8,x,3.0\n")
    assert cli.main(["scoreboard", str(bad), "--holdout", "largest-n"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "column 'D', line 3" in err
    assert cli.main(["scoreboard", csv, "--holdout", "N>0", "--c-col", "C"]) == 2
    assert "must leave some of each" in capsys.readouterr().err
    assert cli.main(["scoreboard", csv, "--holdout", "largest-budget", "--c-col", "C", "--bootstrap", "0"]) == 2
    assert "--bootstrap 0" in capsys.readouterr().err


def test_plot_writes_a_figure_and_refuses_a_bad_path(tmp_path, capsys):
    csv = _runs(tmp_path / "runs.csv")
    png = tmp_path / "board.png"
    assert cli.main(["scoreboard", csv, "--holdout", "largest-budget", "--c-col", "C", "--bootstrap", "100",
                     "--fit-bootstrap", "0", "--plot", str(png)]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    capsys.readouterr()
    assert cli.main(["scoreboard", csv, "--holdout", "largest-budget", "--c-col", "C", "--plot",
                     str(tmp_path / "board.txt")]) == 2
    assert "--plot" in capsys.readouterr().err
    assert cli.main(["scoreboard", csv, "--holdout", "largest-budget", "--c-col", "C", "--plot", csv]) == 2
