"""The isoFLOP estimator on synthetic curves whose minima and exponent are known."""

import numpy as np
import pandas as pd
import pytest
from scalinglab.errors import UserError
from scalinglab.fitting.frontier import isoflop

BUDGETS = np.geomspace(1e17, 1e21, 5)


def parabolic_curves(a=0.6, k=0.3, sizes_per_budget=9, spread=2.0, offsets=(0.0,) * 5):
    """log loss exactly quadratic in log N around N*(C) = 1e-3 · C^a (the parabola's model).

    ``offsets`` shifts each budget's sampled sizes (in log N) away from its optimum.
    """
    rows = []
    for c, offset in zip(BUDGETS, offsets):
        log_opt = np.log(1e-3) + a * np.log(c)
        for x in np.linspace(-spread, spread, sizes_per_budget) + offset:
            log_loss = np.log(3.0) - 0.05 * np.log(c / 1e17) + k * x**2
            rows.append(dict(n=np.exp(log_opt + x), flops=c, loss=np.exp(log_loss)))
    return pd.DataFrame(rows)


# A Chinchilla-form loss, L = E + A/N^α + B/D^β with D = C/(6N): its exact optimum is
# N*(C) = G·(C/6)^(β/(α+β)), G = (αA/(βB))^(1/(α+β)); the curves are not parabolas.
E, A, B, ALPHA, BETA = 1.69, 406.4, 410.7, 0.34, 0.28
A_TRUE = BETA / (ALPHA + BETA)


def chinchilla_n_opt(c):
    return (ALPHA * A / (BETA * B)) ** (1 / (ALPHA + BETA)) * (c / 6) ** A_TRUE


def chinchilla_curves(sizes_per_budget=11, spread=2.5):
    rows = []
    for c in BUDGETS:
        for n in chinchilla_n_opt(c) * np.exp(np.linspace(-spread, spread, sizes_per_budget)):
            rows.append(dict(n=n, flops=c, loss=E + A / n**ALPHA + B / (c / (6 * n)) ** BETA))
    return pd.DataFrame(rows)


def test_parabola_recovers_exact_minima_and_exponent():
    df = parabolic_curves(a=0.6)
    opt = isoflop.budget_optima(df, method="parabola")
    assert list(opt.columns[:5]) == ["flops", "n_opt", "loss_opt", "n_points", "edge"]
    assert not opt["edge"].any() and (opt["n_points"] == 9).all()
    want = 1e-3 * opt["flops"] ** 0.6
    # The data are exactly quadratic, so only float round-off separates the vertex from the truth.
    np.testing.assert_allclose(opt["n_opt"], want, rtol=1e-8)
    fit = isoflop.fit_exponent(opt)
    assert fit.status == "converged" and fit.n_budgets == 5 and fit.dropped == ()
    assert fit.exponent == pytest.approx(0.6, abs=1e-9)
    assert fit.coef == pytest.approx(1e-3, rel=1e-6)


@pytest.mark.parametrize("method", ["spline", "parabola"])
def test_chinchilla_form_minima_and_exponent(method):
    opt = isoflop.budget_optima(chinchilla_curves(), method=method)
    err = np.abs(np.log(opt["n_opt"] / chinchilla_n_opt(opt["flops"])))
    if method == "spline":
        # The argmin lies on a grid with step 5/(10·25-1) ≈ 0.02 in log N, and Akima
        # interpolation through sizes e^0.5 apart adds a little: 0.05 is ~2.5 steps.
        assert err.max() < 0.05
    else:
        # A parabola in log N misplaces the minimum of this asymmetric curve, but by the
        # same factor at every budget (the curve's shape around N* does not depend on C).
        assert err.max() < 0.3
    fit = isoflop.fit_exponent(opt)
    # Errors common to every budget cancel in the slope: 0.005 is far tighter than the
    # difference between any two published exponents.
    assert fit.exponent == pytest.approx(A_TRUE, abs=0.005)


def test_edge_budget_is_reported_and_dropped():
    # The largest budget's sizes all lie below its optimum: its minimum is off the sweep.
    df = parabolic_curves(offsets=(0, 0, 0, 0, -3.0))
    for method in ("parabola", "spline"):
        opt = isoflop.budget_optima(df, method=method)
        assert opt["edge"].tolist() == [False] * 4 + [True], method
        assert "edge" in opt["note"].iloc[-1]
        fit = isoflop.fit_exponent(opt)
        assert fit.n_budgets == 4 and [c for c, _ in fit.dropped] == [BUDGETS[-1]]
        assert fit.exponent == pytest.approx(0.6, abs=0.01 if method == "spline" else 1e-9)


def test_too_few_sizes_and_too_few_budgets():
    df = parabolic_curves(sizes_per_budget=9)
    df = df[~((df["flops"] > BUDGETS[1]) & (df.groupby("flops").cumcount() > 1))]
    opt = isoflop.budget_optima(df)
    assert opt["n_points"].tolist() == [9, 9, 2, 2, 2]
    assert opt["note"].iloc[-1].startswith("only 2 sizes")
    fit = isoflop.fit_exponent(opt)
    # Two budgets determine a line exactly: an exponent but no interval.
    assert fit.n_budgets == 2 and np.isnan(fit.ci[0]) and len(fit.dropped) == 3
    one = isoflop.fit_exponent(opt.iloc[[0]])
    assert one.status == "unidentified" and np.isnan(one.exponent)


def test_duplicate_runs_keep_the_lowest_loss():
    df = parabolic_curves()
    worse = df.copy()
    worse["loss"] *= 1.5
    a = isoflop.budget_optima(df, method="spline")
    b = isoflop.budget_optima(pd.concat([worse, df]), method="spline")
    np.testing.assert_allclose(a["n_opt"], b["n_opt"])
    assert (b["n_points"] == 9).all()


def test_bootstrap_intervals_cover_truth_and_are_seeded():
    rng = np.random.default_rng(1)
    df = chinchilla_curves()
    df["loss"] += rng.normal(0, 0.003, len(df))
    opt = isoflop.budget_optima(df, method="spline", n_boot=300, noise=0.003, seed=7)
    again = isoflop.budget_optima(df, method="spline", n_boot=300, noise=0.003, seed=7)
    pd.testing.assert_frame_equal(opt, again)
    assert {"n_opt_lo", "n_opt_hi", "log_n_opt_sd"} <= set(opt.columns)
    assert (opt["n_opt_lo"] < opt["n_opt"]).all() and (opt["n_opt"] < opt["n_opt_hi"]).all()
    # sd is floored at a third of the sizes' spacing (0.5 in log N).
    assert (opt["log_n_opt_sd"] >= 0.33 * 0.5 * 0.99).all()
    truth = chinchilla_n_opt(opt["flops"])
    covered = ((opt["n_opt_lo"] <= truth) & (truth <= opt["n_opt_hi"])).sum()
    assert covered >= 4  # 95% intervals: missing two of five would be a real miscalibration
    fit = isoflop.fit_exponent(opt)
    assert fit.weighted and fit.ci[0] < A_TRUE < fit.ci[1]


def test_default_noise_is_pooled_parabola_residual_sd():
    df = parabolic_curves()
    rng = np.random.default_rng(0)
    df["loss"] += rng.normal(0, 0.01, len(df))
    opt = isoflop.budget_optima(df, n_boot=200)
    assert opt["log_n_opt_sd"].notna().all()
    with pytest.raises(UserError, match="noise"):
        isoflop.budget_optima(parabolic_curves(sizes_per_budget=3), n_boot=10)


def test_weights_downweight_uncertain_budgets():
    c = BUDGETS
    opt = pd.DataFrame(dict(flops=c, n_opt=1e-3 * c**0.5, loss_opt=2.0, n_points=9, edge=False,
                            log_n_opt_sd=[0.05, 0.05, 0.05, 0.05, 5.0]))
    opt.loc[4, "n_opt"] *= 30  # an outlier the bootstrap says is very uncertain
    weighted, plain = isoflop.fit_exponent(opt), isoflop.fit_exponent(opt, weighted=False)
    assert weighted.weighted and not plain.weighted
    assert abs(weighted.exponent - 0.5) < 0.01 < abs(plain.exponent - 0.5)


def test_window_fits_only_the_sizes_around_the_lowest_loss():
    opt = isoflop.budget_optima(chinchilla_curves(), method="parabola", window=5)
    assert (opt["n_points"] == 5).all()
    full = isoflop.budget_optima(chinchilla_curves(), method="parabola")
    truth = np.log(chinchilla_n_opt(opt["flops"]))
    # Near its minimum the curve is closer to a parabola, so the window's vertex is closer.
    assert (np.abs(np.log(opt["n_opt"]) - truth) < np.abs(np.log(full["n_opt"]) - truth)).all()


def test_bad_input_names_the_column():
    with pytest.raises(UserError, match="'params'"):
        isoflop.budget_optima(parabolic_curves(), n_col="params")
    bad = parabolic_curves()
    bad.loc[3, "loss"] = -1.0
    with pytest.raises(UserError, match="'loss'.*-1.0"):
        isoflop.budget_optima(bad)
    with pytest.raises(UserError, match="method"):
        isoflop.budget_optima(parabolic_curves(), method="cubic")


@pytest.mark.parametrize("method", ["spline", "parabola"])
def test_fitted_curves_pass_through_their_minimum(method):
    df = parabolic_curves()
    curves = isoflop.fitted_curves(df, method=method)
    opt = isoflop.budget_optima(df, method=method)
    assert curves["flops"].nunique() == 5 and len(curves) == 5 * 8 * 25
    # The curve's lowest grid point is the estimator's optimum (same grid, same model).
    lowest = curves.loc[curves.groupby("flops")["loss"].idxmin()].reset_index(drop=True)
    np.testing.assert_allclose(lowest["loss"], opt["loss_opt"], rtol=1e-3)


def seeded(curves: pd.DataFrame, seeds: int, sd: float, rng) -> pd.DataFrame:
    """``seeds`` noisy replicates of every (N, C) point: what a sweep run with --seeds gives."""
    reps = pd.concat([curves] * seeds, ignore_index=True)
    return reps.assign(loss=reps["loss"] + sd * rng.standard_normal(len(reps)))


def test_seed_noise_recovers_the_replicates_sd():
    rng = np.random.default_rng(1)
    data = seeded(chinchilla_curves(), seeds=3, sd=0.01, rng=rng)  # 55 cells, 110 dof
    noise = isoflop.seed_noise(data)
    assert noise.cells == 55 and noise.dof == 110
    # the sd estimate from 110 dof has a relative sd of 1/sqrt(220) ≈ 7%: 25% is > 3 of those
    assert noise.sd == pytest.approx(0.01, rel=0.25)
    # No growth with the excess loss: the model's floor is the sd, and the model gives about 0.01 at the
    # typical point. Over 40 seeds both stayed within 0.84-1.12 of 0.01; a chance slope can still reach 2x at
    # the farthest points (4.5 nats above the minimum), where the noise hardly moves an optimum.
    assert noise.floor == pytest.approx(0.01, rel=0.25)
    means = data.groupby(["flops", "n"])["loss"].mean()
    modelled = np.concatenate([noise.at(g.to_numpy()) for _, g in means.groupby(level=0)])
    assert np.median(modelled) == pytest.approx(0.01, rel=0.25)
    one = isoflop.seed_noise(chinchilla_curves())  # one run per cell: nothing measured
    assert np.isnan(one.sd) and not one.modelled


def test_seed_noise_models_noise_that_grows_away_from_the_optimum():
    """Runs far above their budget's minimum (few tokens for their size) vary more between seeds."""
    rng = np.random.default_rng(3)
    curves = chinchilla_curves()
    excess = curves["loss"] - curves.groupby("flops")["loss"].transform("min")
    true_sd = np.sqrt(0.005**2 + (0.2 * excess) ** 2)
    data = pd.concat([curves.assign(loss=curves["loss"] + true_sd * rng.standard_normal(len(curves)))
                      for _ in range(3)], ignore_index=True)
    noise = isoflop.seed_noise(data)
    # 55 cells with 2 dof each; the floor rests mostly on the ~10 cells near the minima: 40% for it, 25% for the slope
    assert noise.floor == pytest.approx(0.005, rel=0.4) and noise.slope == pytest.approx(0.2, rel=0.25)
    assert noise.sd > 5 * noise.floor  # the pooled sd is set by the far points: a bad noise for the near ones
    near = curves.loc[excess == 0, "loss"].to_numpy()
    assert noise.at(np.array([near[0], near[0] + 1.0]))[1] == pytest.approx(np.hypot(noise.floor, noise.slope))


def test_replicates_are_averaged_and_their_mean_is_less_noisy():
    rng = np.random.default_rng(2)
    single = seeded(chinchilla_curves(), seeds=1, sd=0.01, rng=rng)
    four = seeded(chinchilla_curves(), seeds=4, sd=0.01, rng=rng)
    opts = dict(method="spline", n_boot=400, min_sd_factor=0.0)  # no floor: compare the bootstrap's own sd
    one = isoflop.budget_optima(single, noise=0.01, **opts)
    # replicates="mean" with noise=None: the measured seed sd, divided by sqrt(4) for a mean of 4
    mean = isoflop.budget_optima(four, replicates="mean", **opts)
    ratio = np.median(mean["log_n_opt_sd"] / one["log_n_opt_sd"])
    assert 0.35 < ratio < 0.7  # 1/sqrt(4) = 0.5, give or take the curves' own argmin resolution
    # "min" (Porian's tuning runs) keeps the best of the four: biased low, and not √k less noisy
    best = isoflop.budget_optima(four, replicates="min", **opts | dict(n_boot=0))
    avg = isoflop.budget_optima(four, replicates="mean", **opts | dict(n_boot=0))
    assert (best["loss_opt"] < avg["loss_opt"]).all()
    with pytest.raises(UserError, match="replicates must be one of min, mean, not 'median'"):
        isoflop.budget_optima(four, replicates="median")


@pytest.mark.parametrize("method,window", [("spline", None), ("parabola", None), ("parabola", 5), ("spline", 5)])
def test_resampled_exponents_match_one_fit_per_resample(method, window):
    """The vectorised path (used by the sweeps' seed bootstrap) is fit_exponent(budget_optima(...)) per column."""
    rng = np.random.default_rng(4)
    curves = chinchilla_curves()
    columns = [curves.assign(loss=curves["loss"] + 0.03 * rng.standard_normal(len(curves))) for _ in range(6)]
    budgets = [(c, g["n"].to_numpy(), np.column_stack([col.loc[g.index, "loss"] for col in columns]))
               for c, g in curves.groupby("flops")]
    fast = isoflop.resampled_exponents(budgets, method, window)
    slow = [isoflop.fit_exponent(isoflop.budget_optima(col, method=method, window=window), weighted=False).exponent
            for col in columns]
    np.testing.assert_allclose(fast, slow, rtol=1e-9)
    assert np.ptp(fast) > 0  # the columns differ, so a shared answer would fail


def test_scatter_fit_covers_the_slope_when_budgets_scatter_beyond_their_noise():
    """GLS with V = cov + τ²·I: the budgets' optima carry known replicate noise (cov) and an unknown
    scatter about the line; the t interval on budgets − 2 df should cover the true slope about 95% of
    the time, where an interval from cov alone would not."""
    rng = np.random.default_rng(5)
    flops = np.geomspace(1e10, 1e12, 6)
    x = np.log(flops)
    # shared runs: the budgets' noise is correlated (0.5 between neighbours), as in a Kaplan-style sweep
    sd = 0.05
    cov = sd**2 * 0.5 ** np.abs(np.subtract.outer(np.arange(6), np.arange(6)))
    hits = hits_cov_only = 0
    taus = []
    for _ in range(300):
        y = 0.5 * x + rng.multivariate_normal(np.zeros(6), cov) + 0.1 * rng.standard_normal(6)  # τ = 0.1
        fit = isoflop.fit_exponent_scatter(flops, y, cov)
        hits += fit.ci[0] <= 0.5 <= fit.ci[1]
        taus.append(fit.tau)
        # the same GLS with the scatter left out (τ = 0): its interval ignores the lack of fit
        vinv = np.linalg.inv(cov)
        X = np.column_stack([np.ones(6), x - x.mean()])
        info = X.T @ vinv @ X
        slope = np.linalg.solve(info, X.T @ vinv @ y)[1]
        half = 1.96 * np.sqrt(np.linalg.inv(info)[1, 1])
        hits_cov_only += abs(slope - 0.5) <= half
    # 300 draws: a 95% interval's coverage has a binomial sd of 1.3 points. Over 2,000 draws it was 97%
    # (t on 4 df is a little conservative here); 0.88 leaves room for REML's noisy τ² with 6 budgets
    assert hits / 300 > 0.88
    assert hits_cov_only / 300 < 0.75  # scatter twice the noise: ignoring it under-covers badly
    assert 0.05 < np.median(taus) < 0.15


def test_scatter_fit_is_reml_in_closed_form_for_independent_equal_noise():
    """With cov = σ²·I, REML's τ² is max(RSS/(m−2) − σ², 0) for the plain line's RSS, the slope is the
    plain least-squares slope, and its SE is √((σ² + τ²)/Sxx): the fit must reproduce all three. A
    likelihood without REML's log|X'V⁻¹X| term would put τ² at RSS/m − σ² instead."""
    rng = np.random.default_rng(7)
    flops = np.geomspace(1e10, 1e12, 6)
    x = np.log(flops)
    sxx = np.sum((x - x.mean()) ** 2)
    for scatter in (0.2, 0.05):
        y = 0.3 * x + scatter * rng.standard_normal(6)
        slope, icept = np.polyfit(x, y, 1)
        rss = np.sum((y - slope * x - icept) ** 2)
        sigma2 = 0.01**2
        fit = isoflop.fit_exponent_scatter(flops, y, sigma2 * np.eye(6))
        tau2 = max(rss / 4 - sigma2, 0.0)
        assert fit.tau**2 == pytest.approx(tau2, rel=1e-4, abs=1e-9)
        assert fit.exponent == pytest.approx(slope, rel=1e-9)
        assert fit.se == pytest.approx(np.sqrt((sigma2 + tau2) / sxx), rel=1e-4)
    # a weak trend with large scatter: the REML optimum must not be cut short by the search's bound
    flat = isoflop.fit_exponent_scatter(flops, 0.3 * rng.standard_normal(6), 0.01**2 * np.eye(6))
    assert flat.tau > 0.1


def test_scatter_fit_needs_no_scatter_when_there_is_none():
    rng = np.random.default_rng(6)
    flops = np.geomspace(1e10, 1e12, 5)
    cov = np.diag(np.full(5, 0.05**2))
    taus = [isoflop.fit_exponent_scatter(flops, 0.4 * np.log(flops) + 0.05 * rng.standard_normal(5), cov).tau
            for _ in range(100)]
    # REML puts τ at exactly 0 whenever RSS/(m−2) ≤ σ², i.e. with probability P(χ²₃ < 3) ≈ 0.61;
    # 0.4 is about 4 binomial sds (0.049 for 100 draws) below that
    assert np.mean(np.array(taus) == 0) > 0.4 and np.median(taus) < 0.03
    assert isoflop.fit_exponent_scatter(flops[:2], [1.0, 2.0], np.eye(2)).status == "unidentified"


def test_replicate_cells_say_which_side_of_the_budgets_best_size_a_point_is():
    cells = isoflop.replicate_cells(seeded(chinchilla_curves(), seeds=2, sd=0.001, rng=np.random.default_rng(8)))
    for _, g in cells.groupby("flops"):
        best = g.loc[g["mean"].idxmin(), "n"]
        assert (g.loc[g.n < best, "side"] == "smaller").all() and (g.loc[g.n > best, "side"] == "larger").all()
        assert (g["side"] == "best").sum() == 1 and g.loc[g.side == "best", "excess"].item() == 0
