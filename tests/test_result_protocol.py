"""The result protocol every fit result answers, whatever estimator made it: params, bse in each parameter's own
units, bse_log, conf_int, predict, a status from the one vocabulary, summary(), a JSON to_dict() and a short repr.
Each of the nine result types is built here from a small simulated fit with a known answer."""

import json

import numpy as np
import pandas as pd
import pytest
import scalinglab as sl
from scalinglab.curves import fit as curve_fit
from scalinglab.curves.laws import LAWS, Curve, prepare
from scalinglab.downstream.chain import fit_chain
from scalinglab.downstream.loss_to_loss import fit_loss_to_loss
from scalinglab.fitting.chinchilla.law import ScalingLaw
from scalinglab.fitting.frontier import envelope, isoflop
from scalinglab.fitting.frontier.varpro import fit_varpro
from scalinglab.fitting.protocol import STATUSES, FitResult
from scalinglab.fitting.results import STATUSES as RESULT_STATUSES
from scalinglab.papers import gadre, warmup
from scalinglab.schedules import Schedule

TRUE = ScalingLaw(E=1.8, A=400.0, B=2000.0, alpha=0.34, beta=0.37)


def _grid(noise=0.005, seed=0):
    rng = np.random.default_rng(seed)
    N = np.repeat(np.geomspace(2e7, 2e9, 8), 5)
    D = np.tile(np.geomspace(4e8, 4e10, 5), 8)
    return N, D, TRUE.loss(N, D) * np.exp(noise * rng.standard_normal(N.size))


@pytest.fixture(scope="module")
def runs_csv(tmp_path_factory):
    N, D, L = _grid()
    path = tmp_path_factory.mktemp("runs") / "runs.csv"
    path.write_text("N,D,loss\n" + "".join(f"{n:.17g},{d:.17g},{x:.17g}\n" for n, d, x in zip(N, D, L)))
    return str(path)


@pytest.fixture(scope="module")
def law_fit(runs_csv):
    return sl.fit(runs_csv, bootstrap=60, seed=0)


def _isoflop():
    # N_opt = 0.1·C^0.5 with 3% scatter on eight budgets
    rng = np.random.default_rng(1)
    flops = np.geomspace(1e18, 1e22, 8)
    n_opt = 0.1 * flops**0.5 * np.exp(0.03 * rng.standard_normal(8))
    optima = pd.DataFrame({"flops": flops, "n_opt": n_opt, "edge": False, "log_n_opt_sd": 0.03})
    return isoflop.fit_exponent(optima), {"a": 0.5}, flops


def _envelope():
    parts = []
    for i, n in enumerate(np.logspace(7, 10, 16)):
        d = np.logspace(7, 12.5, 120)
        parts.append(pd.DataFrame({"run": f"r{i:02d}", "n": n, "tokens": d, "loss": TRUE.loss(n, d)}))
    fit = envelope.fit_envelope(pd.concat(parts, ignore_index=True), envelope.EnvelopeOptions(n_boot=40),
                                flops_col=None)
    return fit, {"a": TRUE.a}, np.array([1e20])


def _varpro():
    N, D, L = _grid()
    return fit_varpro(N, D, L), {"alpha": TRUE.alpha, "beta": TRUE.beta}, {"n": N[:3], "d": D[:3]}


def _curve():
    theta = np.array([3.0, 0.5, 0.5, 0.5])
    curves = []
    for name in ("cosine", "constant", "step"):
        lrs = Schedule(name, peak=3e-4, total=3000, warmup=300).lrs()
        at = np.arange(50, 3001, 50)
        loss = LAWS["tissue"].predict(theta, prepare(Curve(name, lrs, at)))
        curves.append(Curve(name, lrs, at, loss))
    return curve_fit.fit_curves(curves, "tissue"), {"L0": 3.0}, curves[0]


def _overtraining():
    N, D, _ = _grid(0)
    law = gadre.OvertrainingLaw(E=1.8, A=400.0, B=2000.0, alpha=0.35)
    L = law.loss(N, D) * np.exp(0.002 * np.random.default_rng(2).standard_normal(N.size))
    fit = gadre.fit_overtraining_law(pd.DataFrame({"N": N, "D": D, "loss": L}))
    return fit, {"alpha": 0.35}, {"n": N[:3], "d": D[:3]}


def _penalty():
    rng = np.random.default_rng(3)
    x = np.repeat(np.linspace(0.03, 0.15, 24), 3)
    y = 5.0 * np.maximum(0.0, x - 0.09) + rng.normal(0, 0.01, x.size)
    pen = pd.DataFrame({"warmup_fraction": x, "penalty": y, "warmup": 2000, "diverged": False, "n_warmups": 4,
                        "d_model": np.repeat(np.arange(24), 3), "n_layers": 1})
    return warmup.fit_penalty(pen, n_boot=200, seed=0), {"knot": 0.09, "slope": 5.0}, np.array([0.12])


def _loss_to_loss():
    x = np.linspace(2.2, 3.5, 12)
    y = 1.3 * (x - 1.5) ** 0.9 + 1.1
    return fit_loss_to_loss(x, y, E0=1.5, E1=1.1), {"kappa": 0.9, "K": 1.3}, np.array([2.5])


def _chain():
    rows = []
    for n in (2e8, 4e8, 8e8, 1.3e9):
        for m in (20, 40, 100, 200):
            for d in np.geomspace(0.3, 1.0, 6) * m * n:
                L = 0.5 + 40.0 / n**0.25 + 90.0 / d**0.24
                rows.append({"run": f"{n:.0e}-{m}", "n": n, "d": d, "loss": L,
                             "acc": -0.7 / (1 + np.exp(-8.0 * (L - 0.75))) + 0.95})
    ev = pd.DataFrame(rows)
    s1 = ev.groupby("run", sort=False).tail(1).reset_index(drop=True)
    return fit_chain(s1, ev, "loss", "acc", anchor=False), {"loss.alpha": 0.25}, (np.array([3e9]), np.array([6e10]))


BUILDERS = {"IsoflopFit": _isoflop, "EnvelopeFit": _envelope, "VarproFit": _varpro, "CurveFit": _curve,
            "OvertrainingFit": _overtraining, "PenaltyFit": _penalty, "LossToLoss": _loss_to_loss,
            "ChainFit": _chain}
# Types whose standard errors come from resamples or a formula (the others are point fits: NaN, never 0).
WITH_ERRORS = {"LawFit": ("E", "alpha"), "IsoflopFit": ("a",), "EnvelopeFit": ("a", "b"),
               "VarproFit": ("alpha", "beta"), "PenaltyFit": ("knot", "slope")}


@pytest.fixture(scope="module", params=["LawFit", *BUILDERS])
def built(request, law_fit):
    if request.param == "LawFit":
        return request.param, law_fit, {"alpha": TRUE.alpha}, {"n": np.array([1e8]), "d": np.array([1e9])}
    return (request.param, *BUILDERS[request.param]())


def test_the_one_status_vocabulary():
    assert RESULT_STATUSES is STATUSES


def test_every_result_answers_the_protocol(built):
    name, fit, truth, x = built
    assert type(fit).__name__ == name
    assert name == "LawFit" or isinstance(fit, FitResult)
    assert fit.status in STATUSES, fit.status
    params = fit.params
    assert params and all(isinstance(v, float) for v in params.values())
    assert set(params) <= set(fit.bse) and set(fit.bse_log) == set(params)
    ci = fit.conf_int(0.9) if name != "LawFit" or fit.bootstrap is not None else None
    if ci is not None:
        assert set(params) <= set(ci) and all(len(ci[k]) == 2 for k in params)
    text = repr(fit)
    assert "\n" not in text and len(text) < 300 and name in text
    json.dumps(fit.to_dict())
    assert isinstance(fit.summary(), str) and fit.summary()
    pred = fit.predict(*x) if isinstance(x, tuple) else fit.predict(x)
    assert np.all(np.isfinite(np.asarray(pred, float)))
    # The fit found the simulated truth: a protocol over wrong numbers would pass the checks above.
    for k, v in truth.items():
        assert params[k] == pytest.approx(v, rel=0.1, abs=0.02), k


def test_errors_are_known_or_nan_never_a_false_zero(built):
    name, fit, _, _ = built
    for k, se in fit.bse.items():
        assert np.isnan(se) or se >= 0
    for k in WITH_ERRORS.get(name, ()):
        se, (lo, hi) = fit.bse[k], fit.conf_int(0.95)[k]
        assert np.isfinite(se) and se > 0, k
        # The interval and the SE agree in units: ±1.96 SE spans the percentile interval within a factor 2
        assert 1.96 * se == pytest.approx((hi - lo) / 2, rel=1.0), k
        assert lo <= fit.params[k] <= hi, k
    if name not in WITH_ERRORS:
        assert all(np.isnan(v) for v in fit.bse.values())
        assert all(np.isnan(lo) and np.isnan(hi) for lo, hi in fit.conf_int(0.95).values())


def test_law_fit_bse_is_in_the_parameters_own_units(law_fit):
    # params ± 1.96·bse is close to the percentile interval for a well-identified fit: this fails when bse is
    # the SE of ln A under the name A.
    ci = law_fit.conf_int(0.95)
    for k in ("E", "A", "B", "alpha", "beta"):
        lo, hi = ci[k]
        half = 1.96 * law_fit.bse[k]
        assert half == pytest.approx((hi - lo) / 2, rel=0.5), k
    for k in ("A", "B"):
        assert law_fit.bse[k] == pytest.approx(law_fit.params[k] * law_fit.bse_log[k], rel=0.5)


def test_a_fit_the_data_cannot_pin_says_unidentified_with_its_reason():
    one = pd.DataFrame({"flops": [1e20], "n_opt": [1e9], "edge": [False], "log_n_opt_sd": [0.03]})
    fit = isoflop.fit_exponent(one)
    assert fit.status == "unidentified" and "1 usable budget" in fit.reason and "not fitted" in fit.summary()
    assert np.isnan(fit.bse["a"]) and np.isnan(fit.conf_int()["a"][0])


def test_isoflop_interval_at_another_level_is_the_t_interval():
    fit, _, _ = _isoflop()
    lo95, hi95 = fit.conf_int(0.95)["a"]
    assert (lo95, hi95) == pytest.approx(fit.ci)
    lo80, hi80 = fit.conf_int(0.8)["a"]
    assert lo95 < lo80 < fit.exponent < hi80 < hi95
