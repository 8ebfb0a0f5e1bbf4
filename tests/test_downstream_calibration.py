"""The chain's calibrated interval (ladder runs left out in turn, the target's noise added): coverage of a new
run on simulated ladders where the truth is known, beside the parameter-only bootstrap; `scalinglab chain`
giving notebook 07's intervals; the target noise the CLI adds."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from scalinglab.cli import main
from scalinglab.downstream.chain import fit_chain
from scalinglab.downstream.intervals import calibrated_bounds, chain_calibration, chain_interval
from scipy import stats


def _loss(n, d):
    return 0.5 + 40.0 / n ** 0.25 + 90.0 / d ** 0.24


def _acc(loss):
    return -0.7 / (1 + np.exp(-8.0 * (loss - 0.75))) + 0.95


RUN_SD = 0.01     # each run's own shift in accuracy, shared by all its checkpoints (seed, data order)


def _ladder(rng, run_sd=RUN_SD):
    s1, s2 = [], []
    for n in (2e8, 4e8, 8e8, 1.3e9):
        for m in (20, 40, 100, 200):
            u = run_sd * rng.standard_normal()
            for d in np.geomspace(0.3, 1.0, 6) * m * n:
                L = _loss(n, d) * (1 + 1e-3 * rng.standard_normal())
                s2.append({"run": f"{n:.0e}-{m}", "n": n, "d": d, "loss": L, "acc": _acc(L) + u
                           + 0.002 * rng.standard_normal()})
            s1.append(dict(s2[-1]))
    return pd.DataFrame(s1), pd.DataFrame(s2)


def test_calibrated_interval_covers_a_new_run_and_the_parameter_only_one_does_not():
    """A new run inside the ladder's range carries its own run shift: the interval calibrated on runs left out
    holds it at about the nominal rate; the bootstrap over runs, which pins the parameters only, falls short."""
    rng = np.random.default_rng(3)
    n_new, d_new = 6e8, 60 * 6e8
    cal_in, par_in = [], []
    reps = 30
    for _ in range(reps):
        s1, s2 = _ladder(rng)
        truth = _acc(_loss(n_new, d_new)) + RUN_SD * rng.standard_normal()
        fit = fit_chain(s1, s2, "loss", "acc")
        target = pd.DataFrame({"run": ["new"], "n": [n_new], "d": [d_new], "acc": [truth]})
        iv = chain_interval(fit, s1, s2, "loss", "acc", target, n_boot=15, seed=0, actual="acc")[0]
        cal_in.append(iv.cal_inside)
        par_in.append(iv.inside)
    # Could be false: under a nominal 95% interval P(at most 25 of 30 inside) is 6%; the parameter-only
    # interval is about a quarter as wide as the run scatter needs, so it holds roughly a third.
    assert sum(cal_in) >= 26, sum(cal_in)
    assert sum(par_in) <= 0.7 * reps, sum(par_in)


def test_calibrated_bounds_add_the_target_noise_in_quadrature():
    rng = np.random.default_rng(0)
    s1, s2 = _ladder(rng)
    fit = fit_chain(s1, s2, "loss", "acc")
    cal = chain_calibration(fit, s1, s2, "loss", "acc")
    assert cal.ok and cal.n_units == 16 and cal.unit_name == "ladder run"
    # the left-out runs' misses scatter by about the simulated run shift (16 runs: a factor 0.6 to 1.5 of it)
    assert 0.6 * RUN_SD < cal.scale < 1.5 * RUN_SD
    lo, hi = calibrated_bounds(cal, [0.7, 0.8], noise_sd=[0.0, 0.05])
    t = stats.t.ppf(0.975, 15)
    assert np.allclose((hi - lo) / 2, [t * cal.scale, t * np.hypot(cal.scale, 0.05)])
    assert np.allclose((hi + lo) / 2, np.array([0.7, 0.8]) + cal.mu)


@pytest.fixture
def ladder_csv(tmp_path):
    s1, s2 = _ladder(np.random.default_rng(5))
    evals = s2.rename(columns={"loss": "arc_loss", "acc": "arc_acc"})
    runs = tmp_path / "runs.csv"
    evals.to_csv(runs, index=False)
    targets = tmp_path / "targets.csv"
    pd.DataFrame({"run": ["mid", "big"], "n": [6e8, 7e9], "d": [3.6e10, 4e12]}).to_csv(targets, index=False)
    return runs, targets


def _intervals(capsys, runs, targets):
    assert main(["chain", str(runs), "--targets", str(targets), "--tasks", "arc", "--last", "1", "--skip", "0",
                 "--smooth", "1", "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_chain_cli_adds_the_targets_noise_or_the_ladders(ladder_csv, capsys):
    runs, targets = ladder_csv
    out = _intervals(capsys, runs, targets)
    cal = out["calibration"]["arc"]
    assert cal["unit"] == "ladder run" and cal["n_units"] == 16
    assert out["noise_source"]["arc"].startswith("no arc_acc_sd column: the ladder runs' median")
    base = [iv["cal_upper"] - iv["cal_lower"] for iv in out["intervals"]["arc"]]
    pd.read_csv(targets).assign(arc_acc_sd=[0.0, 0.05]).to_csv(targets, index=False)
    out = _intervals(capsys, runs, targets)
    assert out["noise_source"]["arc"] == "the targets' arc_acc_sd"
    wide = [iv["cal_upper"] - iv["cal_lower"] for iv in out["intervals"]["arc"]]
    t = stats.t.ppf(0.975, cal["df"])
    sd = (out["calibration"]["arc"]["half_width"] / t)
    assert np.isclose(wide[1] / 2, t * np.hypot(sd, 0.05)) and np.isclose(wide[0] / 2, t * sd)
    assert wide[0] < base[0] and wide[1] > base[1]


def test_chain_cli_gives_notebook_07s_intervals(mirror, tmp_path, capsys):
    """`scalinglab chain` on the OLMo ladder written as CSVs gives the intervals papers.bhagia.reproduce (notebook
    07) gives: the same points, the same calibration, the same target noise and the same bootstrap draws."""
    from scalinglab.downstream import ladder as LD
    from scalinglab.papers import bhagia as B

    runs, targets = LD.write_tables(tmp_path)
    rep = B.reproduce(tasks=["piqa"], n_boot=8, seed=0).table.set_index("target")
    assert main(["chain", runs, "--targets", targets, "--tasks", "piqa", "--bootstrap", "8", "--json"]) == 0
    cli = {iv["target"]: iv for iv in json.loads(capsys.readouterr().out)["intervals"]["piqa"]}
    for k in ("7B", "13B"):
        for ours, theirs in (("cal_lower", "cal_lower"), ("cal_upper", "cal_upper"), ("lower", "lower"),
                             ("upper", "upper"), ("noise_sd", "noise_sd")):
            assert np.isclose(100 * cli[k][ours], rep.loc[k, theirs], rtol=0, atol=1e-6), (k, ours)
