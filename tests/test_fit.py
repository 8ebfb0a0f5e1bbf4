"""scalinglab.fit: Hoffmann's parametric fit, its batched solver and bootstrap."""

import numpy as np
import pytest

from scalinglab import fit as F
from scalinglab.errors import UserError

TRUE = F.ScalingLaw(E=1.8, A=480.0, B=2100.0, alpha=0.35, beta=0.37)


def isoflop_runs(law=TRUE, noise=0.0, seed=0, budgets=(1e18, 1e19, 1e20, 1e21), per_budget=8):
    """Runs laid out like Hoffmann's isoFLOP sweeps: N spread around each budget's optimum, D = C/(6N)."""
    rng = np.random.default_rng(seed)
    N, D = [], []
    for C in budgets:
        n = law.n_opt(C) * np.logspace(-1, 1, per_budget)
        N.append(n)
        D.append(C / (6 * n))
    N, D = np.concatenate(N), np.concatenate(D)
    L = law.loss(N, D) * np.exp(noise * rng.standard_normal(N.size))
    return N, D, L


def epoch_rows(name="epoch-chinchilla"):
    from scalinglab import data

    return F.runs_from_table(data.load(name), "Model Size", c_col="Training FLOP", drop_highest=5)[:3]


def test_grid_is_hoffmanns_4500_starts():
    G = F.hoffmann_grid()
    assert G.shape == (4500, 5)
    assert sorted(set(G[:, 3])) == [0, 0.5, 1, 1.5, 2] and sorted(set(G[:, 0])) == [-1, -0.5, 0, 0.5, 1]
    assert sorted(set(G[:, 1])) == [0, 5, 10, 15, 20, 25] and len(np.unique(G, axis=0)) == 4500


def test_compute_optimal_allocation_minimises_loss_at_fixed_compute():
    C = 5.88e23
    n, d = TRUE.n_opt(C), TRUE.d_opt(C)
    assert 6 * n * d == pytest.approx(C, rel=1e-12)
    grid = n * np.logspace(-0.5, 0.5, 2001)
    best = grid[np.argmin(TRUE.loss(grid, C / (6 * grid)))]
    # The grid step is 10^(1/2000) ≈ 0.06%, so the brute-force minimiser is that close.
    assert best == pytest.approx(n, rel=1e-3)
    assert TRUE.a + TRUE.b == pytest.approx(1.0)
    # N_opt ∝ C^a: a decade of compute moves N_opt by 10^a.
    assert TRUE.n_opt(10 * C) / n == pytest.approx(10**TRUE.a)
    assert TRUE.tokens_per_param(C) == pytest.approx(d / n)


def test_analytic_gradient_and_hessian_match_finite_differences():
    N, D, L = isoflop_runs(noise=0.01)
    logN, logD, logL = np.log(N), np.log(D), np.log(L)
    theta = TRUE.theta + np.array([0.01, -0.05, 0.05, 0.01, -0.01])
    f, g = F._value_and_grad(theta, logN, logD, logL, 1e-3)
    h = 1e-6
    num = np.array([(F.objective(theta + h * e, logN, logD, logL) - F.objective(theta - h * e, logN, logD, logL))
                    / (2 * h) for e in np.eye(5)])
    # Central differences on a C¹ objective: error O(h²·f''') plus rounding ≈ 1e-9 at this scale.
    np.testing.assert_allclose(g, num, rtol=1e-5, atol=1e-9)
    g2, H, _ = F._newton_and_irls(theta[None], np.ones((1, N.size)), logN, logD, logL, 1e-3)
    num_H = np.array([(F._value_and_grad(theta + h * e, logN, logD, logL, 1e-3)[1]
                       - F._value_and_grad(theta - h * e, logN, logD, logL, 1e-3)[1]) / (2 * h) for e in np.eye(5)])
    # The Huber second derivative jumps at |r| = δ; no residual sits within h of it here, so they agree.
    np.testing.assert_allclose(H[0], num_H, rtol=1e-4, atol=1e-6)


def test_recovers_known_law_from_noisy_runs():
    N, D, L = isoflop_runs(noise=0.003, per_budget=12)
    res = F.fit_arrays(N, D, L)
    assert res.status == "converged" and res.at_bound == ()
    # 48 runs with 0.3% noise pin the exponents to a few percent (bootstrap SE ≈ 0.01 here).
    assert res.alpha == pytest.approx(TRUE.alpha, abs=0.03)
    assert res.beta == pytest.approx(TRUE.beta, abs=0.03)
    assert res.E == pytest.approx(TRUE.E, abs=0.05)
    assert res.n_starts == 4500 and res.n_rows == 48


def test_batched_solver_agrees_with_scipy_on_weighted_resamples():
    from scipy.optimize import minimize

    N, D, L = isoflop_runs(noise=0.005, per_budget=10)
    logN, logD, logL = np.log(N), np.log(D), np.log(L)
    point = F.fit_arrays(N, D, L)
    W = F.resample_counts(N.size, 6, seed=3)
    th, f, ok = F.batched_solve(np.repeat(point.theta[None], 6, 0), logN, logD, logL, weights=W)
    assert ok.all()
    for k in range(6):
        def obj(t, w=W[k]):
            return F.objective(t, logN, logD, logL, weights=w)
        ref = minimize(obj, point.theta, method="Nelder-Mead",
                       options=dict(xatol=1e-10, fatol=1e-14, maxiter=20000, maxfev=40000))
        # Both minimise the same function; the batched solver must be at least as low (to rounding).
        assert f[k] <= ref.fun * (1 + 1e-9)
        # ...and at the same place: exponents agree to 1e-4 (Nelder-Mead's own precision on a flat valley).
        np.testing.assert_allclose(th[k, 3:], ref.x[3:], atol=1e-4)


@pytest.mark.parametrize("case, message", [
    ("few", "at least 10 runs"),
    ("fixed_ratio", "D ∝ N"),
    ("nan", "non-finite"),
    ("zero", "must be positive"),
    ("one_size", "fewer than 3 distinct"),
])
def test_unidentifiable_or_bad_data_is_refused(case, message):
    N, D, L = isoflop_runs()
    if case == "few":
        N, D, L = N[:9], D[:9], L[:9]
    elif case == "fixed_ratio":
        D = 20 * N  # every run at 20 tokens per parameter
    elif case == "nan":
        L = L.copy()
        L[3] = np.nan
    elif case == "zero":
        N = N.copy()
        N[5] = 0
    elif case == "one_size":
        N = np.where(N > np.median(N), 1e9, 1e8)
    with pytest.raises(UserError, match=message):
        F.fit_arrays(N, D, L)


def test_parameter_on_its_bound_is_flagged():
    N, D, L = isoflop_runs(law=F.ScalingLaw(E=0.05, A=480.0, B=2100.0, alpha=0.35, beta=0.37))
    # A box that keeps E ≥ e^-1 ≈ 0.37 while the data want 0.05: the fit ends on the bound and says so.
    opts = F.FitOptions(lower=(-1.0, -20.0, -20.0, 0.0, 0.0))
    res = F.fit_arrays(N, D, L, opts)
    assert res.status == "at_bound" and res.at_bound == ("E",)
    assert res.E == pytest.approx(np.exp(-1.0))
    assert F.fit_arrays(N, D, L).status == "converged"


def test_bootstrap_of_a_fit_on_its_bound_reports_nan_not_a_crash():
    N, D, L = isoflop_runs(law=F.ScalingLaw(E=0.05, A=480.0, B=2100.0, alpha=0.35, beta=0.37))
    # Warm-started on the bound E = e^-1, every replicate ends there too and is excluded.
    res = F.fit_arrays(N, D, L, F.FitOptions(lower=(-1.0, -20.0, -20.0, 0.0, 0.0)), n_boot=20)
    bs = res.bootstrap
    assert bs.n_failed == 20 and bs.samples.shape == (0, 5)
    d = res.to_dict()["bootstrap"]
    assert all(np.isnan(d["se"][k]) and np.isnan(d["ci"][k]).all() for k in bs.names)


def test_bootstrap_keeps_replicates_whose_irreducible_loss_is_zero():
    """E = 0 is a natural limit, not a failure: replicates there count, and E's interval reaches zero."""
    N, D, L = isoflop_runs(law=F.ScalingLaw(E=0.0, A=480.0, B=2100.0, alpha=0.35, beta=0.37), noise=0.01,
                           per_budget=6, seed=2)
    res = F.fit_arrays(N, D, L, n_boot=200, seed=0)
    bs = res.bootstrap
    on_floor = np.isclose(bs.column("E"), np.exp(F.NATURAL_FLOOR[0]), rtol=1e-3)
    # With E = 0 and 1% noise, a good share of resamples put E on its floor; before the fix, each of
    # those was dropped as "at a bound" and the interval for E excluded zero.
    assert on_floor.sum() >= 20
    assert bs.n_failed <= 10  # only non-converged replicates are dropped
    assert bs.ci["E"][0] < 1e-6


def test_bootstrap_wald_test_accepts_truth_and_rejects_a_wrong_law():
    N, D, L = isoflop_runs(noise=0.005, per_budget=10, seed=1)
    res = F.fit_arrays(N, D, L, n_boot=300, seed=0)
    bs = res.bootstrap
    assert bs.n_failed == 0 and bs.samples.shape == (300, 5)
    lo, hi = bs.ci["alpha"]
    assert lo < res.alpha < hi and bs.se["alpha"] > 0
    # The truth generated the data, so its χ² is a typical draw (p > 0.001 fails 1 run in 1000 at most);
    # a law with β off by 0.1 (≈ 10 SEs) must be rejected.
    assert bs.wald_test(res, TRUE)[1] > 1e-3
    wrong = F.ScalingLaw(TRUE.E, TRUE.A, TRUE.B, TRUE.alpha, TRUE.beta - 0.1)
    assert bs.wald_test(res, wrong)[1] < 1e-6
    d = res.to_dict()
    assert d["bootstrap"]["ci"]["beta"][0] < d["beta"] < d["bootstrap"]["ci"]["beta"][1]


def test_epoch_240_rows_land_on_epochs_optimum(mirror):
    res = F.fit_arrays(*epoch_rows())
    assert res.status == "converged" and res.n_rows == 240
    # The acceptance window: Epoch's grid optimum, to ±0.002.
    assert res.E == pytest.approx(1.817, abs=0.002)
    assert res.alpha == pytest.approx(0.3473, abs=0.002)
    assert res.beta == pytest.approx(0.3672, abs=0.002)


def test_averaging_the_loss_stops_lbfgs_early(mirror):
    """Epoch's diagnosis of Hoffmann's fit: the mean makes L-BFGS-B quit with a wrong β; the sum does not."""
    N, D, L = epoch_rows()
    best = F.fit_arrays(N, D, L)
    logN, logD, logL = F.check_identifiable(N, D, L)
    G = F.hoffmann_grid()
    starts = G[np.argsort(F.objective(G, logN, logD, logL))[:10]]  # the 10 best grid points keep this fast
    for reduction in ("sum", "mean"):
        th, f = F.lbfgs_per_start(N, D, L, starts, reduction=reduction)
        beta = th[np.argmin(f), 4]
        if reduction == "sum":
            assert beta == pytest.approx(best.beta, abs=1e-3)
        else:
            # Stopped ≥ 0.03 short (≈ 1.5 bootstrap SEs), at a higher objective.
            assert abs(beta - best.beta) > 0.03 and f.min() > best.objective * 1.01


def test_bootstrap_replicates_on_real_data_all_converge(mirror):
    N, D, L = epoch_rows()
    res = F.fit_arrays(N, D, L, n_boot=200, seed=1)
    bs = res.bootstrap
    assert bs.n_failed == 0
    # Epoch reports SEs of 0.02 for α and β from their bootstrap; ours must be of that size.
    assert 0.008 < bs.se["alpha"] < 0.03 and 0.01 < bs.se["beta"] < 0.035
