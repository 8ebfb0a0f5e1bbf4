"""Ties, lmfit's ``expr="other"``: a parameter held equal to another, for every law (``FitOptions(tied=...)``,
``--tie NAME=OTHER``). The registry's engine and Chinchilla's solver reach the same tied optimum; a tie holds in
every bootstrap replicate; a tie to a fixed value fixes; chains resolve and circles are refused."""

import json
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
import scalinglab as sl
from conftest import refused
from scalinglab.cli import main
from scalinglab.errors import UserError
from scalinglab.fitting.chinchilla.approach3 import CHINCHILLA
from scalinglab.fitting.laws import get as get_law
from scalinglab.fitting.laws.base import _Problem, check_ties, fit_law
from scalinglab.fitting.options import FitOptions

ENGINE = replace(CHINCHILLA, solver="least-squares")   # Chinchilla's form through the registry's generic engine


def grid(seed=0, noise=0.01, alpha=0.3, beta=0.3):
    rng = np.random.default_rng(seed)
    n = np.repeat(np.geomspace(1e7, 1e9, 6), 5)
    d = np.tile(np.geomspace(1e9, 1e11, 5), 6)
    y = (1.7 + 400 / n**alpha + 400 / d**beta) * np.exp(rng.normal(0, noise, n.size))
    return {"n": n, "d": d}, y


def test_the_engine_and_chinchillas_solver_reach_one_tied_optimum():
    x, y = grid()
    own = fit_law(CHINCHILLA, x, y, FitOptions(tied={"beta": "alpha"}))
    named = fit_law(CHINCHILLA, x, y, FitOptions(tied={"beta": "alpha"}))
    engine = fit_law(ENGINE, x, y, FitOptions(tied={"beta": "alpha"}))
    assert named.params == own.params and named.tied          # the same solver, the same floats
    assert engine.status == own.status == "converged" and engine.ties == {"beta": "alpha"}
    for k in ("E", "A", "B", "alpha"):
        assert engine.params[k] == pytest.approx(own.params[k], rel=1e-5), k
    free = fit_law(ENGINE, x, y)
    assert free.params["alpha"] != free.params["beta"]        # untied, the noise splits them
    assert engine.n_free == own.n_free == 4 and free.n_free == 5


def test_a_tie_holds_in_every_replicate_and_is_reported():
    x, y = grid(seed=3)
    fit = fit_law(ENGINE, x, y, FitOptions(tied={"beta": "alpha"}).with_resampling(16, seed=2))
    bs = fit.bootstrap
    i, j = bs.params.index("alpha"), bs.params.index("beta")
    assert len(bs.samples) and np.array_equal(bs.samples[:, i], bs.samples[:, j])
    assert fit.params["alpha"] == fit.params["beta"]
    assert fit.to_dict()["tied"] == {"beta": "alpha"}
    assert "beta tied to alpha" in fit.summary() and "= alpha (tied)" in fit.summary()


def test_a_tied_law_recovers_its_shared_exponent():
    law = get_law("kaplan")
    rng = np.random.default_rng(5)
    n = np.repeat(np.geomspace(1e7, 1e10, 6), 6)
    d = np.tile(np.geomspace(1e9, 1e12, 6), 6)
    truth = {"N_c": 1e13, "D_c": 1e13, "alpha_N": 0.08, "alpha_D": 0.08}
    y = law.predict({"n": n, "d": d}, truth) * np.exp(rng.normal(0, 0.002, n.size))
    fit = fit_law(law, {"n": n, "d": d}, y, FitOptions(tied={"alpha_N": "alpha_D"}))
    assert fit.status == "converged" and fit.n_free == 3
    assert fit.params["alpha_N"] == fit.params["alpha_D"] == pytest.approx(0.08, rel=0.05)


def test_ties_resolve_chains_and_fixed_values_and_refuse_the_rest():
    law = get_law("data_constrained")
    assert check_ties(law, {"rstar_n": "Rstar_D"}, {}) == ({}, {"Rstar_N": "Rstar_D"})   # names in any case
    assert check_ties(law, {"beta": "alpha", "Rstar_N": "Rstar_D"}, {"alpha": 0.3}) == (
        {"alpha": 0.3, "beta": 0.3}, {"Rstar_N": "Rstar_D"})                          # tied to a value: fixed
    assert check_ties(law, {"B": "A"}, {})[1] == {"B": "A"}
    chain = check_ties(law, {"Rstar_N": "Rstar_D", "Rstar_D": "A"}, {})[1]     # followed to a free parameter
    assert chain == {"Rstar_N": "A", "Rstar_D": "A"}
    box = _Problem(law, {}, {}, np.ones(3), "log", chain).bounds["A"]
    assert box == (1e-2, 1e4)                   # A's range cut to the ranges of the parameters tied to it
    for tied, fixed, message in [
        ({"beta": "alpha"}, {"beta": 0.3}, "beta is both fixed"),
        ({"beta": "alpha", "alpha": "beta"}, {}, "go round in a circle"),
        ({"beta": "gamma"}, {}, "no parameter 'gamma'"),
        ({"Rstar_N": "E"}, {"E": 1e5}, "allows Rstar_N in"),
    ]:
        with pytest.raises(UserError, match=message):
            check_ties(law, tied, fixed)
    with pytest.raises(UserError, match="tied to itself"):
        FitOptions(tied={"beta": "beta"})
    with pytest.raises(UserError, match="ties its exponents only"):
        fit_law(CHINCHILLA, *grid(), FitOptions(tied={"A": "B"}))


def test_the_front_door_and_the_cli_take_ties(tmp_path, capsys):
    x, y = grid(seed=1)
    path = tmp_path / "runs.csv"
    pd.DataFrame({"N": x["n"], "D": x["d"], "loss": y}).to_csv(path, index=False)
    runs = sl.load_runs(str(path))
    api = sl.fit(runs, law="kaplan", tied={"alpha_N": "alpha_D"})
    assert sl.fit(runs, law="kaplan", options=FitOptions(tied={"alpha_N": "alpha_D"})).params == api.params
    with pytest.raises(UserError, match="tied= given beside options="):
        sl.fit(runs, law="kaplan", tied={"alpha_N": "alpha_D"}, options=FitOptions())
    assert main(["fit", str(path), "--law", "kaplan", "--tie", "alpha_N=alpha_D", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["tied"] == {"alpha_N": "alpha_D"} and out["params"] == pytest.approx(api.params, rel=1e-12)
    assert main(["fit", str(path), "--tie", "beta=alpha", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["tie_exponents"] is True
    refused(capsys, ["fit", path, "--tie", "A=B"], "--tie A=B: Chinchilla's solver ties its exponents only")
    refused(capsys, ["fit", path, "--law", "kaplan", "--tie", "alpha_N"], "--tie 'alpha_N': expected NAME=OTHER")
    refused(capsys, ["fit", path, "--law", "kaplan", "--tie", "alpha_N=alpha_D", "--fix", "alpha_N=0.1"],
            "alpha_N is both fixed (at 0.1) and tied to alpha_D")
