"""Variable projection and the estimator audit, on simulated laws with known answers."""

import numpy as np
import pytest
from scalinglab.errors import UserError
from scalinglab.fitting import estimator_audit as EA
from scalinglab.fitting.law import PARAMS, ScalingLaw
from scalinglab.fitting.varpro import fit_varpro, profile

HOFFMANN = ScalingLaw(E=1.69, A=406.4, B=410.7, alpha=0.34, beta=0.28)


def runs(law, n=40, seed=0):
    rng = np.random.default_rng(seed)
    N = np.exp(rng.uniform(np.log(1e7), np.log(1e10), n))
    D = np.exp(rng.uniform(np.log(1e9), np.log(1e12), n))
    return N, D, law.loss(N, D)


@pytest.mark.parametrize("a", [0.35, 0.4516, 0.65])
def test_varpro_is_exact_on_noise_free_data(a):
    law = HOFFMANN if a == 0.4516 else EA.law_for(a)
    fit = fit_varpro(*runs(law))
    # Noise-free: the residual is zero at the truth, so only the zoom's tolerance (1e-9 in α, β) and the
    # 3x3 solves' rounding separate the two; 1e-6 relative leaves three orders of margin.
    for p in PARAMS:
        assert getattr(fit.law, p) == pytest.approx(getattr(law, p), rel=1e-6), p
    assert fit.rss < 1e-18


def test_nnls_keeps_coefficients_non_negative():
    # A law with no irreducible loss (E = 0): unconstrained least squares on noisy rows may put E below
    # zero; the NNLS profile never does, and its rss is never below the unconstrained one's.
    law = ScalingLaw(E=0.0 + 1e-300, A=406.4, B=410.7, alpha=0.34, beta=0.28)
    N, D, L = runs(law)
    L = L * np.exp(0.01 * np.random.default_rng(1).standard_normal(len(L)))
    al, be = np.repeat(np.linspace(0.1, 0.6, 11), 11), np.tile(np.linspace(0.1, 0.6, 11), 11)
    rss_nn, coef_nn = profile(al, be, np.log(N), np.log(D), L)
    rss_ls, _ = profile(al, be, np.log(N), np.log(D), L, nonneg=False)
    assert (coef_nn >= 0).all()
    assert (rss_nn >= rss_ls - 1e-12).all()


def test_varpro_interval_covers_on_noisy_data():
    # 12 experiments at 1% log-loss noise: a Wald 95% interval should cover the truth in about 11;
    # fewer than 9 is a 1-in-400 event for a correct interval (binomial), so it flags a broken one.
    law = EA.law_for(0.5)
    hits = 0
    for s in range(12):
        N, D, L = runs(law, 60, seed=s)
        L = L * np.exp(0.01 * np.random.default_rng(100 + s).standard_normal(len(L)))
        lo, hi = fit_varpro(N, D, L).a_ci
        hits += lo <= 0.5 <= hi
    assert hits >= 9


def test_varpro_refuses_bad_rows():
    N, D, L = runs(HOFFMANN)
    L[3] = -1
    with pytest.raises(UserError, match="row 3"):
        fit_varpro(N, D, L)


def test_varpro_solver_finds_the_grid_optimum():
    from scalinglab.fitting import approach3 as F

    N, D, L = runs(HOFFMANN, 60)
    L = L * np.exp(0.01 * np.random.default_rng(2).standard_normal(len(L)))
    grid = F.fit_arrays(N, D, L)
    vp = F.fit_arrays(N, D, L, F.FitOptions(solver="varpro"))
    assert vp.status == grid.status == "converged"
    # Same Huber objective, same basin: the polished optima agree to the solver's tolerance.
    for p in PARAMS:
        assert getattr(vp, p) == pytest.approx(getattr(grid, p), rel=1e-6), p
    with pytest.raises(UserError, match="grid solver"):
        F.FitOptions(solver="varpro", fixed={"E": 1.7})
    with pytest.raises(UserError, match="solver must be"):
        F.FitOptions(solver="lbfgs")


def test_parabola_bias_sign_off_centre():
    # Issue #15. A parabola in log N fitted to noise-free log loss over a narrow window centred on the
    # optimum is nearly unbiased; the same window off-centre by 4x either way puts the vertex below N*
    # (the loss curve is steeper on the small-N side, so the fitted parabola leans left), and a window
    # three decades wide puts it above (the flatter large-N arm dominates). Signs and sizes from
    # EA.parabola_offset, a deterministic least-squares fit: the tolerances are rounding only.
    law = EA.law_for(0.4516)
    assert abs(EA.parabola_offset(law, 1e20, 0.5, 1.0)) < 0.005
    assert EA.parabola_offset(law, 1e20, 0.5, 4.0) < -0.04
    assert EA.parabola_offset(law, 1e20, 0.5, 0.25) < -0.04
    assert EA.parabola_offset(law, 1e20, 3.0, 1.0) > 0.05


def test_audit_known_answers():
    d = EA.Design(a=0.45, width=1.5, points=9, budgets=5, noise=0.0)
    est = EA.audit(d.law(), d.grid(), 0.0, reps=2, n_boot=0, estimators=("spline", "varpro"))
    # Noise-free, centred grid: the spline's argmin sits within a grid step of each optimum, and varpro
    # is exact.
    assert np.allclose(est["varpro"][:, 0], 0.45, atol=1e-6)
    assert np.allclose(est["spline"][:, 0], 0.45, atol=0.01)
    s = EA.summarise(0.5, np.array([[0.49, 0.48, 0.52], [0.53, 0.51, 0.55], [0.50, np.nan, np.nan],
                                   [np.nan, np.nan, np.nan]]))
    assert s["n"] == 3 and s["failed"] == 1
    assert s["bias"] == pytest.approx(0.02 / 3)
    assert s["rmse"] == pytest.approx(np.sqrt((0.01**2 + 0.03**2) / 3))
    assert s["coverage"] == pytest.approx(1 / 3)  # the second misses, the third has no interval


def test_law_through_and_grid_centre_line():
    law = EA.law_through(0.6, 1e19, 3e8)
    assert law.a == pytest.approx(0.6) and law.n_opt(1e19) == pytest.approx(3e8)
    grid = EA.Design(a=0.6, budgets=4).grid()
    slope, c, n = EA.grid_centre_line(grid)
    assert slope == pytest.approx(0.6)  # a centred grid is planned along N* itself
    drift = EA.Design(a=0.6, budgets=4, centring=4.0, c_decades=3.0).grid()
    # centre/N* grows from 1 to 4 over 3 decades of C: the centre line is steeper by log 4 / log 1e3
    assert EA.grid_centre_line(drift)[0] == pytest.approx(0.6 + np.log(4) / np.log(1e3))


def test_recommend_prefers_trusted_estimators():
    ok = dict(bias=0.001, bias_mc=0.001, rmse=0.02, rmse_mc=0.002, coverage=0.95, coverage_mc=0.02)
    biased = dict(bias=0.05, bias_mc=0.001, rmse=0.01, rmse_mc=0.001, coverage=0.2, coverage_mc=0.05)
    assert EA.recommend([dict(estimator="spline", **ok), dict(estimator="parabola", **biased)]) == "spline"
    assert EA.recommend([dict(estimator="parabola", **biased)]) == "parabola (no honest interval)"
    # RMSEs within Monte Carlo error of each other: the preferred estimator, not the luckier one
    tie = dict(ok, rmse=0.019)
    assert EA.recommend([dict(estimator="parabola", **tie), dict(estimator="varpro", **ok)]) == "varpro"
    far = dict(ok, rmse=0.005, rmse_mc=0.0005)
    assert EA.recommend([dict(estimator="parabola", **far), dict(estimator="varpro", **ok)]) == "parabola"


def _dense(noise: float, seed: int = 0):
    import pandas as pd

    law = EA.law_for(0.4516)
    rng = np.random.default_rng(seed)
    rows = [dict(N=n, C=c, loss=float(law.loss(n, c / (6 * n))) + noise * rng.standard_normal())
            for c in np.logspace(18, 21, 4) for n in law.n_opt(c) * np.logspace(-1.5, 1.5, 41)]
    return pd.DataFrame(rows)


def test_local_parabola_sd_sees_noise_not_misfit():
    from scalinglab.fitting import isoflop

    clean, noisy = _dense(0.0), _dense(0.01)
    whole = isoflop._pooled_parabola_sd(isoflop._budgets(clean, "N", "C", "loss"), "loss", "N")
    # Issue #15: on noise-free losses over 3 decades the whole-budget parabola residual is ~0.01 nats of
    # pure misfit; quadratics over 5 neighbouring sizes (0.075 decades apart) leave ~1e-4 or less.
    assert whole > 0.005 and isoflop.local_parabola_sd(clean, "N", "C", "loss") < 1e-3
    # With noise of sd 0.01 the local residual estimates it (160 windows: ±15% holds by far).
    assert isoflop.local_parabola_sd(noisy, "N", "C", "loss") == pytest.approx(0.01, rel=0.15)


def test_isoflop_cli_admits_a_misfit_dominated_bootstrap(tmp_path, capsys):
    from scalinglab.cli import main

    clean, noisy = tmp_path / "clean.csv", tmp_path / "noisy.csv"
    _dense(0.0).to_csv(clean, index=False)
    _dense(0.01).to_csv(noisy, index=False)
    assert main(["isoflop", str(clean), "--bootstrap", "20"]) == 0
    err = capsys.readouterr().err
    assert "mostly the parabola's misfit" in err and err.count("\n") == 1
    assert main(["isoflop", str(noisy), "--bootstrap", "20"]) == 0
    assert "misfit" not in capsys.readouterr().err
    assert main(["isoflop", str(clean), "--bootstrap", "20", "--noise", "0.01"]) == 0
    assert "misfit" not in capsys.readouterr().err


def test_fit_cli_solver_varpro(tmp_path, capsys):
    import json

    from scalinglab.cli import main

    N, D, L = runs(HOFFMANN, 30, seed=3)
    L = L * np.exp(0.01 * np.random.default_rng(4).standard_normal(len(L)))
    path = tmp_path / "runs.csv"
    path.write_text("N,D,loss\n" + "".join(f"{n:.17g},{d:.17g},{loss:.17g}\n" for n, d, loss in zip(N, D, L)))
    outs = {}
    for solver in ("grid", "varpro"):
        assert main(["fit", str(path), "--solver", solver, "--json"]) == 0
        outs[solver] = json.loads(capsys.readouterr().out)
    assert outs["varpro"]["solver"] == "varpro" and outs["varpro"]["n_starts"] == 1 and "solver" not in outs["grid"]
    for p in PARAMS:  # the same optimum of the same objective, from one start instead of 4,500
        assert outs["varpro"][p] == pytest.approx(outs["grid"][p], rel=1e-6), p
    assert main(["fit", str(path), "--solver", "varpro", "--fix", "E=1.7"]) == 2
    err = capsys.readouterr().err
    assert "--solver grid" in err and err.count("\n") == 1
