"""Parameters that fix, bound and tie themselves (lmfit's Parameters): ``Law.set(name, value=, vary=, lower=,
upper=, expr=)`` for every law, and the solver named in the options (``FitOptions(solver=...)``). A law's own settings give the same fit as the options
beside it; a formula holds in the fit and in every bootstrap replicate; a narrowed range binds in both solvers; a
formula is parsed, never run."""

import json

import numpy as np
import pandas as pd
import pytest
import scalinglab as sl
from conftest import refused
from scalinglab.cli import main
from scalinglab.errors import UserError
from scalinglab.fitting.chinchilla.approach3 import CHINCHILLA
from scalinglab.fitting.expressions import parse
from scalinglab.fitting.laws import get as get_law
from scalinglab.fitting.laws.base import fit_law
from scalinglab.fitting.options import FitOptions

LS = FitOptions(solver="least-squares")   # Chinchilla's form by the generic solver, which takes any tie or start

TRUTH = {"E": 1.8, "A": 400.0, "B": 800.0, "alpha": 0.34, "beta": 0.28}   # B = 2 A


def runs(seed=0, noise=0.003):
    rng = np.random.default_rng(seed)
    n = np.repeat(np.geomspace(1e7, 1e9, 6), 6)
    d = np.tile(np.geomspace(1e9, 1e12, 6), 6)
    y = CHINCHILLA.predict({"n": n, "d": d}, TRUTH) * np.exp(rng.normal(0, noise, n.size))
    return {"n": n, "d": d}, y


@pytest.mark.parametrize("name", ["chinchilla", "kaplan"])
def test_a_held_parameter_is_the_same_fit_as_the_fixed_option(name):
    x, y = runs()
    law = get_law(name)
    p = law.params[0].name
    value = 1.8 if name == "chinchilla" else 3e13
    beside = fit_law(law, x, y, FitOptions(fixed={p: value}))
    own = fit_law(law.set(p, value=value, vary=False), x, y)
    assert own.params == beside.params and own.fixed == {p: value} and own.status == beside.status
    with pytest.raises(UserError, match="held at"):   # held at one value and fixed at another
        fit_law(law.set(p, value=value, vary=False), x, y, FitOptions(fixed={p: 2 * value}))


def test_a_formula_holds_in_the_fit_and_every_replicate():
    x, y = runs()
    law = CHINCHILLA.set("B", expr="2*A")
    fit = fit_law(law, x, y, LS.with_resampling(40, seed=1))
    assert fit.status == "converged" and fit.ties == {"B": "2*A"} and fit.n_free == 4
    assert fit.to_dict()["solver"] == "least-squares"
    assert fit.params["B"] == 2 * fit.params["A"]
    for k, v in TRUTH.items():                        # the truth satisfies the formula, so the fit finds it
        assert fit.params[k] == pytest.approx(v, rel=0.2), k
    bs = fit.bootstrap
    a, b = bs.samples[:, bs.params.index("A")], bs.samples[:, bs.params.index("B")]
    assert len(a) > 30 and np.array_equal(b, 2 * a)
    assert "B = 2*A" in fit.summary() and "= 2*A (tied)" in fit.summary()
    # The same formula through FitOptions, sl.fit and the CLI's --tie: one fit.
    beside = fit_law(CHINCHILLA, x, y, FitOptions(tied={"B": "2 * a"}, solver="least-squares"))
    assert beside.params == fit_law(law, x, y, LS).params


def test_the_formula_reaches_the_front_door_and_the_cli(tmp_path, capsys):
    x, y = runs(seed=2)
    path = tmp_path / "runs.csv"
    pd.DataFrame({"N": x["n"], "D": x["d"], "loss": y}).to_csv(path, index=False)
    kaplan = get_law("kaplan")
    api = sl.fit(str(path), law=kaplan.set("alpha_D", expr="alpha_N + 0.05"))
    assert api.params["alpha_D"] == api.params["alpha_N"] + 0.05
    assert sl.fit(str(path), law="kaplan", tied={"alpha_D": "alpha_N + 0.05"}).params == api.params
    assert main(["fit", str(path), "--law", "kaplan", "--tie", "alpha_D=alpha_N+0.05", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["params"] == pytest.approx(api.params, rel=1e-12) and out["tied"] == {"alpha_D": "alpha_N+0.05"}
    chin = sl.fit(str(path), tied={"B": "2*A"}, solver="least-squares")     # the front door names the solver too
    assert chin.to_dict()["solver"] == "least-squares" and chin.params["B"] == 2 * chin.params["A"]
    assert chin.params == fit_law(CHINCHILLA, x, y, FitOptions(tied={"B": "2*A"}, solver="least-squares")).params
    with pytest.raises(UserError, match="solver= given beside options="):
        sl.fit(str(path), solver="least-squares", options=FitOptions())
    refused(capsys, ["fit", path, "--tie", "B=2*A"], "ties its exponents only", "least-squares")  # Newton's: β = α
    refused(capsys, ["fit", path, "--law", "kaplan", "--tie", "alpha_D=__import__('os')"], "--tie alpha_D=",
            "only functions")


def test_a_narrowed_range_binds_in_both_solvers():
    x, y = runs()
    for opts in (FitOptions(), LS):
        fit = fit_law(CHINCHILLA.set("E", lower=1.9), x, y, opts)         # the truth, 1.8, is outside
        assert fit.status == "at_bound" and "E" in fit.at_bound and fit.params["E"] == pytest.approx(1.9, rel=1e-6)
        free = fit_law(CHINCHILLA.set("E", lower=1.5), x, y, opts)        # a range holding the optimum: no change
        assert free.status == "converged"
        assert free.params["E"] == pytest.approx(fit_law(CHINCHILLA, x, y, opts).params["E"], rel=1e-6)


def test_a_start_value_is_one_start_where_the_solver_takes_starts():
    x, y = runs()
    fit = fit_law(CHINCHILLA.set("alpha", value=0.5).set("beta", value=0.5), x, y, LS)
    assert fit.status == "converged" and fit.params["alpha"] == pytest.approx(
        fit_law(CHINCHILLA, x, y, LS).params["alpha"], rel=1e-4)
    with pytest.raises(UserError, match="starts from Hoffmann's grid"):
        fit_law(CHINCHILLA.set("alpha", value=0.5), x, y)


@pytest.mark.parametrize("change, message", [
    (lambda law: law.set("E", vary=False), "give value="),
    (lambda law: law.set("E", value=-1), "allows E in"),
    (lambda law: law.set("E", expr="E + 1"), "by itself"),
    (lambda law: law.set("E", lower=2, upper=1), "empty"),
    (lambda law: law.set("A", lower=0), "positive"),
    (lambda law: law.set("E", value=1.7, vary=False).set("E", expr="A"), "give one of them"),
    (lambda law: law.set("nope", value=1), "no parameter 'nope'"),
    (lambda law: fit_law(law, *runs(), FitOptions(solver="curve-huber")), "fits training curves"),
    (lambda law: FitOptions(solver="nope"), "no solver 'nope'"),
    (lambda law: fit_law(get_law("kaplan"), *runs(), FitOptions(solver="chinchilla-newton")), "not law kaplan"),
])
def test_impossible_settings_are_refused_in_one_line(change, message):
    with pytest.raises(UserError, match=message) as err:
        change(CHINCHILLA)
    assert "\n" not in str(err.value)


def test_circles_and_fully_held_laws_are_refused():
    x, y = runs()
    with pytest.raises(UserError, match="circle"):
        fit_law(CHINCHILLA.set("A", expr="B / 2").set("B", expr="2*A"), x, y, LS)
    held = CHINCHILLA.set("E", value=1.8, vary=False).set("A", value=400, vary=False).set("alpha", value=0.3,
                                                                                          vary=False)
    fit = fit_law(held.set("beta", expr="alpha"), x, y, LS)       # tied to a held value: held too
    assert fit.fixed["beta"] == 0.3 and fit.n_free == 1
    with pytest.raises(UserError, match="nothing left to fit"):
        fit_law(held.set("beta", expr="alpha").set("B", expr="2*A"), x, y, LS)
    # Chinchilla's tie beta = alpha, by the generic solver too: one tied optimum.
    tied = fit_law(CHINCHILLA, x, y, FitOptions(tied={"beta": "alpha"}, solver="least-squares"))
    assert tied.ties == {"beta": "alpha"} and tied.params["alpha"] == pytest.approx(
        fit_law(CHINCHILLA, x, y, FitOptions(tied={"beta": "alpha"})).params["alpha"], rel=1e-4)


@pytest.mark.parametrize("text", ["__import__('os').system('true')", "alpha.real", "lambda: 1", "[alpha]",
                                  "alpha if beta else 1", "exp(alpha, beta)", "'1'", "True", "exp", "x" * 300,
                                  "alpha; beta"])
def test_a_formula_is_parsed_never_run(text):
    with pytest.raises(UserError) as err:
        parse(text, ("alpha", "beta"))
    assert "\n" not in str(err.value)


def test_formulas_evaluate_on_arrays_and_overflow_to_inf():
    e = parse("2*ALPHA + exp(-beta)", ("alpha", "beta"))
    assert e.names == ("alpha", "beta") and e.identity is None and parse("Alpha", ("alpha",)).identity == "alpha"
    assert np.allclose(e({"alpha": np.array([1.0, 2.0]), "beta": 0.0}), [3.0, 5.0])
    assert parse("10**alpha", ("alpha",))({"alpha": 400.0}) == np.inf
