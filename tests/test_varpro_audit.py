"""Variable projection and the estimator audit, on simulated laws with known answers."""

import numpy as np
import pytest
from scalinglab.errors import UserError
from scalinglab.fitting.chinchilla.law import PARAMS, ScalingLaw
from scalinglab.fitting.frontier.varpro import fit_varpro, profile
from scalinglab.fitting.studies import estimator_audit as EA

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
    from scalinglab.fitting.chinchilla import approach3 as F

    N, D, L = runs(HOFFMANN, 60)
    L = L * np.exp(0.01 * np.random.default_rng(2).standard_normal(len(L)))
    grid = F.fit_arrays(N, D, L)
    vp = F.fit_arrays(N, D, L, F.FitOptions(settings=F.NewtonSettings(start="varpro")))
    assert vp.status == grid.status == "converged"
    # Same Huber objective, same basin: the polished optima agree to the solver's tolerance.
    for p in PARAMS:
        assert getattr(vp, p) == pytest.approx(getattr(grid, p), rel=1e-6), p
    with pytest.raises(UserError, match="grid start"):
        F.chinchilla_options(F.FitOptions(settings=F.NewtonSettings(start="varpro"), fixed={"E": 1.7}))
    with pytest.raises(UserError, match="start must be"):
        F.NewtonSettings(start="lbfgs")


def test_parabola_bias_sign_off_centre():
    # A parabola in log N fitted to noise-free log loss over a narrow window centred on the
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


def test_ties_are_reported_as_ties_in_no_preference_order():
    ok = dict(bias=0.001, bias_mc=0.001, rmse=0.02, rmse_mc=0.002, coverage=0.95, coverage_lo=0.8,
              coverage_hi=0.99)
    biased = dict(bias=0.05, bias_mc=0.001, rmse=0.01, rmse_mc=0.001, coverage=0.2, coverage_lo=0.1,
                  coverage_hi=0.35)
    assert EA.recommend([dict(estimator="spline", **ok), dict(estimator="parabola", **biased)]) == "spline"
    assert EA.recommend([dict(estimator="parabola", **biased)]) == "parabola (none trusted)"
    # RMSEs within Monte Carlo error of each other: both named, whichever is listed first, and whichever
    # happens to have the lower RMSE
    tie = dict(ok, rmse=0.019)
    for first, second in (("approach3", "varpro"), ("varpro", "approach3")):
        rows = [dict(estimator=first, **tie), dict(estimator=second, **ok)]
        assert EA.best_estimators(rows) == ([first, second], True)
        assert EA.recommend(rows) == f"{first} and {second} tie within Monte Carlo error"
    far = dict(ok, rmse=0.005, rmse_mc=0.0005)
    assert EA.recommend([dict(estimator="parabola", **far), dict(estimator="varpro", **ok)]) == "parabola"
    # coverage whose exact interval stops below 0.90 is not trusted, however low the RMSE
    under = dict(far, coverage=0.75, coverage_lo=0.57, coverage_hi=0.885)
    assert EA.recommend([dict(estimator="parabola", **under), dict(estimator="varpro", **ok)]) == "varpro"


def test_paired_ties_separate_what_the_unpaired_window_calls_a_tie():
    # Two estimators on the same 32 experiments: y errs by 1.2 times x's error on every replicate, so y is
    # worse on every draw. The paired difference of squared errors, 0.44·z², has a mean about √(32/2) = 4 of
    # its standard errors above 0 (z² has sd √2 times its mean), past the tie window's 2: no tie. Their RMSEs alone (0.010 vs 0.012, each with a Monte Carlo error
    # near 0.0013) overlap within two errors, which the unpaired window calls a tie.
    z = 0.01 * np.random.default_rng(0).standard_normal(32)
    est = {e: np.column_stack([0.5 + k * z, 0.5 + k * z - 0.1, 0.5 + k * z + 0.1]) for e, k in (("x", 1.0), ("y", 1.2))}
    rows = [dict(estimator=e, **EA.summarise(0.5, est[e])) for e in est]
    assert EA.best_estimators(rows) == (["x", "y"], True)            # unpaired: a tie
    gaps = EA.paired_gaps(0.5, est, ["x", "y"])
    assert gaps["x"] == (0.0, 0.0) and gaps["y"][0] > 3 * gaps["y"][1]
    paired = [dict(r, mse_gap=gaps[r["estimator"]][0], mse_gap_se=gaps[r["estimator"]][1]) for r in rows]
    assert EA.best_estimators(paired) == (["x"], True)
    # exchangeable estimators (independent errors of one size) tie in most designs: 19 of 20 at least would
    # be expected of a two-s.e. window; 15 allows for its approximations at 32 replicates
    rng = np.random.default_rng(1)
    ties = 0
    for _ in range(20):
        est = {e: np.column_stack([0.5 + 0.01 * rng.standard_normal(32)] * 3) for e in ("x", "y")}
        g = EA.paired_gaps(0.5, est, ["x", "y"])
        ties += all(gap - 2 * se <= 0 for gap, se in g.values())
    assert ties >= 15


def test_clopper_pearson_is_exact_and_never_below_nominal():
    from scipy.stats import binom

    # closed forms at the ends: k = 0 gives [0, 1 - 0.025^(1/n)], k = n gives [0.025^(1/n), 1]
    assert EA.clopper_pearson(0, 10) == pytest.approx((0.0, 1 - 0.025 ** 0.1))
    assert EA.clopper_pearson(10, 10) == pytest.approx((0.025 ** 0.1, 1.0))
    # Exact coverage of the interval for a true proportion p with n = 32 replicates (the audit's count):
    # Clopper-Pearson never falls below 95% (it is conservative by construction); the Wald interval
    # p̂ ± 2·sqrt(p̂(1 − p̂)/n) it replaces falls well below near p = 0.97, where coverage is judged.
    n = 32
    k = np.arange(n + 1)
    for p in (0.5, 0.8, 0.9, 0.95, 0.97):
        iv = np.array([EA.clopper_pearson(int(j), n) for j in k])
        assert binom.pmf(k, n, p)[(iv[:, 0] <= p) & (p <= iv[:, 1])].sum() >= 0.95, p
    p = 0.97
    ph = k / n
    half = 2 * np.sqrt(ph * (1 - ph) / n)
    assert binom.pmf(k, n, p)[(ph - half <= p) & (p <= ph + half)].sum() < 0.85


def test_every_estimator_sees_every_replicate_and_approach3_starts_from_its_grid(monkeypatch):
    from scalinglab.fitting.chinchilla import approach3

    solvers = []
    real = approach3.fit_arrays

    def spy(N, D, L, options=None, **kw):
        solvers.append(options.settings_for(approach3.NewtonSettings).start)
        return real(N, D, L, options, **kw)

    monkeypatch.setattr(approach3, "fit_arrays", spy)
    rows = EA.run_designs({"baseline": EA.Design(noise=0.003)}, reps=3, n_boot=10)
    assert {r["estimator"]: r["n"] for r in rows} == {e: 3 for e in EA.ESTIMATORS}
    assert solvers == ["grid"] * 3   # never warm-started from variable projection's answer


def test_noise_free_bias_of_approach_2_is_small_even_off_centre():
    # On noise-free losses Approach 2's slope is nearly exact on every window tested, narrow or wide,
    # centred or 4x off (the per-budget vertex offsets are alike, so they barely tilt the line): under 0.005
    # in a, against the +0.02 to +0.04 the noisy audit measures on narrow off-centre windows, so that bias is
    # the noise's (a vertex extrapolated beyond the window), not the parabola's misfit. Deterministic fits.
    for width in (0.5, 2.5):
        for centring in (1.0, 4.0):
            d = EA.Design(width=width, centring=centring)
            assert abs(EA.noise_free_bias(d, "parabola")) < 0.005, (width, centring)
            assert abs(EA.noise_free_bias(d, "spline")) < 0.005, (width, centring)
    assert abs(EA.noise_free_bias(EA.Design(width=0.5, centring=4.0), "varpro")) < 1e-6


def _dense(noise: float, seed: int = 0):
    import pandas as pd

    law = EA.law_for(0.4516)
    rng = np.random.default_rng(seed)
    rows = [dict(N=n, C=c, loss=float(law.loss(n, c / (6 * n))) + noise * rng.standard_normal())
            for c in np.logspace(18, 21, 4) for n in law.n_opt(c) * np.logspace(-1.5, 1.5, 41)]
    return pd.DataFrame(rows)


def test_local_parabola_sd_sees_noise_not_misfit():
    from scalinglab.fitting.frontier import isoflop

    clean, noisy = _dense(0.0), _dense(0.01)
    whole = isoflop.pooled_parabola_sd(isoflop.budget_groups(clean, "N", "C", "loss"), "loss", "N")
    # On noise-free losses over 3 decades the whole-budget parabola residual is ~0.01 nats of
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
    for start in ("grid", "varpro"):
        assert main(["fit", str(path), "--start", start, "--json"]) == 0
        outs[start] = json.loads(capsys.readouterr().out)
    vp = outs["varpro"]
    assert vp["start"] == "varpro" and vp["n_starts"] == 1 and outs["grid"]["start"] == "grid"
    assert vp["solver"] == outs["grid"]["solver"] == "chinchilla-newton"     # one solver, named as fitting.solvers
    assert vp["objective_kind"] == outs["grid"]["objective_kind"] == "huber"   # one estimator, another start
    for p in PARAMS:  # the same optimum of the same objective, from one start instead of 4,500
        assert vp["params"][p] == pytest.approx(outs["grid"]["params"][p], rel=1e-6), p
    assert main(["fit", str(path), "--start", "varpro", "--fix", "E=1.7"]) == 2
    err = capsys.readouterr().err
    assert "--start grid" in err and err.count("\n") == 1
