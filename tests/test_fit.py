"""scalinglab.fitting.chinchilla.approach3: Hoffmann's parametric fit, its batched solver and bootstrap."""

import numpy as np
import pytest
from scalinglab.errors import UserError
from scalinglab.fitting.chinchilla import approach3 as F
from scalinglab.fitting.chinchilla.lbfgs_reference import lbfgs_per_start
from scalinglab.fitting.chinchilla.newton import _newton_and_irls as newton_and_irls
from scalinglab.fitting.chinchilla.settings import MIN_ROWS
from scalinglab.fitting.rows import resample_counts

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
    f, g = F.value_and_grad(theta, logN, logD, logL, 1e-3)
    h = 1e-6
    num = np.array([(F.objective(theta + h * e, logN, logD, logL) - F.objective(theta - h * e, logN, logD, logL))
                    / (2 * h) for e in np.eye(5)])
    # Central differences on a C¹ objective: error O(h²·f''') plus rounding ≈ 1e-9 at this scale.
    np.testing.assert_allclose(g, num, rtol=1e-5, atol=1e-9)
    g2, H, _ = newton_and_irls(theta[None], np.ones((1, N.size)), logN, logD, logL, 1e-3)
    num_H = np.array([(F.value_and_grad(theta + h * e, logN, logD, logL, 1e-3)[1]
                       - F.value_and_grad(theta - h * e, logN, logD, logL, 1e-3)[1]) / (2 * h) for e in np.eye(5)])
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
    W = resample_counts(N.size, 6, seed=3)
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
    opts = F.FitOptions(settings=F.NewtonSettings(lower=(-1.0, -20.0, -20.0, 0.0, 0.0)))
    res = F.fit_arrays(N, D, L, opts)
    assert res.status == "at_bound" and res.at_bound == ("E",)
    assert res.E == pytest.approx(np.exp(-1.0))
    assert F.fit_arrays(N, D, L).status == "converged"


def test_bootstrap_of_a_fit_on_its_bound_reports_nan_not_a_crash():
    N, D, L = isoflop_runs(law=F.ScalingLaw(E=0.05, A=480.0, B=2100.0, alpha=0.35, beta=0.37))
    # Warm-started on the bound E = e^-1, every replicate ends there too and is excluded.
    res = F.fit_arrays(N, D, L, F.FitOptions(settings=F.NewtonSettings(lower=(-1.0, -20.0, -20.0, 0.0, 0.0))), n_boot=20)
    bs = res.bootstrap
    assert bs.n_failed == 20 and bs.samples.shape == (0, 5)
    d = res.to_dict()["bootstrap"]
    assert all(d["se"][k] is None and d["ci"][k] == [None, None] for k in bs.names)  # NaN: null in JSON


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
    assert d["bootstrap"]["ci"]["beta"][0] < d["params"]["beta"] < d["bootstrap"]["ci"]["beta"][1]


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
        th, f = lbfgs_per_start(N, D, L, starts, reduction=reduction)
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


# --- constraints: fixed parameters and tied exponents ------------------------

TIED = F.ScalingLaw(E=1.8, A=480.0, B=2100.0, alpha=0.36, beta=0.36)  # a law that meets every constraint below


@pytest.mark.parametrize("fixed, tie, n_free, n_starts", [
    ({}, True, 4, 900),                     # the grid's 5 × 5 exponent pairs collapse to 5
    ({"E": 1.8}, False, 4, 900),
    ({"alpha": 0.36}, False, 4, 900),
    ({"e": 1.8}, True, 3, 180),             # names are case-insensitive
    ({"A": 480.0, "beta": 0.36}, False, 3, 150),
])
def test_constrained_fits_recover_the_law_that_made_the_runs(fixed, tie, n_free, n_starts):
    opts = F.FitOptions(fixed=fixed, tied={"beta": "alpha"} if tie else ())
    N, D, L = isoflop_runs(law=TIED, per_budget=6, seed=2)
    res = F.fit_arrays(N, D, L, opts)
    assert res.status == "converged" and res.n_free == n_free and res.n_starts == n_starts
    # Noiseless runs of a law that meets the constraints: the constrained optimum is that law, found
    # to the solver's gradient tolerance (1e-9 on an objective of ~1e-3), far below 1e-6.
    for k in F.PARAMS:
        assert getattr(res, k) == pytest.approx(getattr(TIED, k), rel=1e-6)
    for k, v in res.fixed.items():   # by the law's names ("e" given is E)
        assert getattr(res, k) == dict((n.upper() if n == "e" else n, x) for n, x in opts.fixed)[k]  # exactly, not exp(log)
    # With 0.3% noise the free parameters stay within 4 bootstrap SEs of the truth (a 1-in-10⁴ miss
    # for each, were the SEs exact), and the fixed ones do not move at all.
    N, D, L = isoflop_runs(law=TIED, noise=0.003, per_budget=6, seed=2)
    noisy = F.fit_arrays(N, D, L, opts, n_boot=200, seed=0)
    se = noisy.bootstrap.se
    for k in noisy.free:
        assert abs(getattr(noisy, k) - getattr(TIED, k)) < 4 * se[k] and se[k] > 0
    assert all(se[k] == 0.0 for k in noisy.fixed)


def test_tied_exponents_are_equal_exactly_and_cost_objective_when_the_data_disagree():
    N, D, L = isoflop_runs(noise=0.002, per_budget=8)  # TRUE has alpha 0.35, beta 0.37
    free = F.fit_arrays(N, D, L)
    tied = F.fit_arrays(N, D, L, F.FitOptions(tied={"beta": "alpha"}), n_boot=100)
    assert tied.alpha == tied.beta and tied.a == 0.5 and tied.b == 0.5
    assert tied.tied and tied.free == ("E", "A", "B", "alpha") and tied.to_dict()["tie_exponents"] is True
    # A constraint cannot lower the minimum; here the data want beta − alpha ≈ 0.02, so it must cost.
    assert tied.objective > free.objective * 1.01
    bs = tied.bootstrap
    np.testing.assert_array_equal(bs.column("alpha"), bs.column("beta"))
    assert np.all(bs.column("a") == 0.5) and bs.se["a"] == 0.0 and bs.se["alpha"] > 0


@pytest.mark.parametrize("name", F.PARAMS)
def test_fixing_a_parameter_at_its_free_optimum_reproduces_the_free_fit(name):
    N, D, L = isoflop_runs(noise=0.005, per_budget=10, seed=1)
    free = F.fit_arrays(N, D, L)
    held = F.fit_arrays(N, D, L, F.FitOptions(fixed={name: getattr(free, name)}))
    assert held.status == "converged" and held.fixed == {name: getattr(free, name)}
    # The free optimum is a stationary point of the constrained problem too, so both solvers stop
    # there; they agree to their gradient tolerance, ~1e-8 relative on B along the flat B–beta ridge.
    for k in F.PARAMS:
        assert getattr(held, k) == pytest.approx(getattr(free, k), rel=1e-6)
    assert held.objective == pytest.approx(free.objective, rel=1e-10)


def test_a_constrained_fit_is_not_the_free_fit_with_a_value_pasted_in():
    """Fixing E away from its optimum moves the other parameters to compensate."""
    N, D, L = isoflop_runs(noise=0.005, per_budget=10, seed=1)
    free = F.fit_arrays(N, D, L)
    held = F.fit_arrays(N, D, L, F.FitOptions(fixed={"E": 1.6}))
    assert held.E == 1.6 and held.status == "converged"
    # Less irreducible loss must be made up by the power-law terms: larger A or B, smaller exponents.
    assert held.alpha < free.alpha - 0.02 and held.objective > free.objective


def test_the_solver_gradient_in_free_coordinates_is_the_chain_rule():
    N, D, L = isoflop_runs(noise=0.01)
    logN, logD, logL = np.log(N), np.log(D), np.log(L)
    P = F.parametrisation(F.FitOptions(fixed={"E": 1.7}, tied={"beta": "alpha"}))
    assert P.names == ("A", "B", "alpha") and P.T.shape == (5, 3)
    phi = P.phi(TRUE.theta + np.array([0.0, 0.05, -0.05, 0.01, 0.03]))
    theta = P.theta(phi)
    assert theta[0] == np.log(1.7) and theta[3] == theta[4]
    g, H, _ = newton_and_irls(theta[None], np.ones((1, N.size)), logN, logD, logL, 1e-3)
    h = 1e-6
    num = np.array([(F.objective(P.theta(phi + h * e), logN, logD, logL)
                     - F.objective(P.theta(phi - h * e), logN, logD, logL)) / (2 * h) for e in np.eye(3)])
    # Central differences on a C¹ objective, as in the unconstrained test above.
    np.testing.assert_allclose(P.grad(g)[0], num, rtol=1e-5, atol=1e-9)
    gphi = [P.grad(F.value_and_grad(P.theta(phi + s * e), logN, logD, logL, 1e-3)[1]) for e in np.eye(3)
            for s in (h, -h)]
    num_H = np.array([(gphi[2 * i] - gphi[2 * i + 1]) / (2 * h) for i in range(3)])
    np.testing.assert_allclose(P.hessian(H)[0], num_H, rtol=1e-4, atol=1e-6)


def test_minimum_runs_is_twice_the_free_parameters():
    assert MIN_ROWS == F.min_rows(5) == 10 and F.min_rows(4) == 8 and F.min_rows(3) == 6
    N, D, L = isoflop_runs(law=TIED, per_budget=8)
    rows = np.random.default_rng(0).permutation(N.size)
    for opts, needed in ((F.FitOptions(), 10), (F.FitOptions(tied={"beta": "alpha"}), 8),
                         (F.FitOptions(fixed={"E": 1.8}, tied={"beta": "alpha"}), 6),
                         (F.FitOptions(fixed={"E": 1.8, "alpha": 0.36, "beta": 0.36}), 4)):
        few, enough = rows[:needed - 1], rows[:needed]
        with pytest.raises(UserError, match=f"need at least {needed} runs to fit .*; got {needed - 1}"):
            F.fit_arrays(N[few], D[few], L[few], opts)
        res = F.fit_arrays(N[enough], D[enough], L[enough], opts)
        assert res.n_rows == needed and res.alpha == pytest.approx(TIED.alpha, rel=1e-6)


def two_sizes(k_n=2, n=20, seed=1):
    rng = np.random.default_rng(seed)
    N = np.resize(np.geomspace(1e8, 1e9, k_n), n)
    D = 10 ** rng.uniform(9, 11, n)
    return N, D, TRUE.loss(N, D)


@pytest.mark.parametrize("k_n, fixed, message", [
    (2, {}, "'N' takes fewer than 3 distinct values: A and alpha"),
    (2, {"alpha": 0.35}, None),          # one difference between two sizes gives A
    (1, {"alpha": 0.35}, "'N' takes fewer than 2 distinct values: A cannot"),
    (1, {"alpha": 0.35, "E": 1.8}, None),  # the level gives A once E is known
    (2, {"E": 1.8}, None),               # ...or alpha, with A from the one difference
    (1, {"E": 1.8}, "'N' takes fewer than 2 distinct values: A and alpha"),
])
def test_distinct_sizes_needed_follow_the_free_parameters(k_n, fixed, message):
    N, D, L = two_sizes(k_n)
    opts = F.FitOptions(fixed=fixed)
    if message:
        with pytest.raises(UserError, match=message):
            F.fit_arrays(N, D, L, opts)
    else:
        res = F.fit_arrays(N, D, L, opts)
        # Noiseless: identified means recovered, to the solver's tolerance.
        assert res.status == "converged"
        assert all(getattr(res, k) == pytest.approx(getattr(TRUE, k), rel=1e-6) for k in F.PARAMS)


def test_tied_exponent_needs_three_values_of_n_or_d():
    N = np.resize([1e8, 1e8, 1e9, 1e9], 20)  # 2 sizes × 2 token counts, crossed: one difference each
    D = np.resize([1e10, 1e11], 20)
    L = TIED.loss(N, D)
    with pytest.raises(UserError, match="tied exponent"):
        F.fit_arrays(N, D, L, F.FitOptions(tied={"beta": "alpha"}))
    # E fixed frees the level for the exponent.
    res = F.fit_arrays(N, D, L, F.FitOptions(fixed={"E": 1.8}, tied={"beta": "alpha"}))
    assert res.alpha == pytest.approx(0.36, rel=1e-6)


def test_fixed_ratio_runs_can_be_fitted_once_one_term_is_fixed():
    N, D, L = isoflop_runs()
    D = 20 * N
    L = TRUE.loss(N, D)
    with pytest.raises(UserError, match="D ∝ N"):
        F.fit_arrays(N, D, L, F.FitOptions(fixed={"B": TRUE.B}))
    res = F.fit_arrays(N, D, L, F.FitOptions(fixed={"B": TRUE.B, "beta": TRUE.beta}))
    assert res.alpha == pytest.approx(TRUE.alpha, rel=1e-6)


@pytest.mark.parametrize("fixed, tie, message", [
    ({"alpha": 0, "beta": 0}, False, "fixed alpha must be positive, not 0"),
    ({"beta": 0}, True, "fixed beta must be positive, not 0"),
    ({"E": -1}, False, "fixed E must be a positive number, not -1"),
    ({"A": float("inf")}, False, "fixed A must be a finite number, not inf"),
    ({"B": "lots"}, False, "fixed B must be a number, not 'lots'"),
    ([("E", 1.7), ("e", 1.8)], False, "E is fixed twice"),
    ({"alpha": 0.3, "beta": 0.4}, True, "tied exponents need alpha = beta"),
    ({"E": 1, "A": 1, "B": 1, "alpha": 1, "beta": 1}, False, "nothing to fit"),
    ({"E": 1, "A": 1, "B": 1, "beta": 0.3}, True, "nothing to fit"),
])
def test_degenerate_constraints_are_one_line_errors(fixed, tie, message):
    with pytest.raises(UserError, match=message) as err:
        # FitOptions is law-agnostic; Chinchilla's solver applies its own rules (``chinchilla_options``).
        F.chinchilla_options(F.FitOptions(fixed=fixed, tied={"beta": "alpha"} if tie else ()))
    assert "\n" not in str(err.value)


def test_a_name_chinchillas_law_lacks_is_refused_when_it_is_fitted():
    # FitOptions is law-agnostic, so it holds any name; the law it is fitted with refuses one it lacks.
    opts = F.FitOptions(fixed={"gamma": 1})
    with pytest.raises(UserError, match="fixed gamma: Chinchilla's law has no such parameter") as err:
        F.parametrisation(opts)
    assert "\n" not in str(err.value)


def test_fixing_one_tied_exponent_fixes_both():
    opts = F.FitOptions(fixed={"beta": 0.36}, tied={"beta": "alpha"})
    assert F.chinchilla_options(opts).fixed == (("alpha", 0.36), ("beta", 0.36))
    assert F.parametrisation(opts).names == ("E", "A", "B")


def test_fixed_e_above_a_loss_is_refused():
    N, D, L = isoflop_runs()
    with pytest.raises(UserError, match=r"E = 2.5 puts the law at 2.5 or above, but the run with N \S+, D \S+ has loss"):
        F.fit_arrays(N, D, L, F.FitOptions(fixed={"E": 2.5}))


def test_constrained_fit_serves_compute_optimal_holdout_and_wald():
    from scalinglab.fitting.studies import holdout as H

    N, D, L = isoflop_runs(law=TIED, noise=0.003, per_budget=8, seed=4)
    opts = F.FitOptions(fixed={"E": 1.8}, tied={"beta": "alpha"})
    res = F.fit_arrays(N, D, L, opts, n_boot=200, seed=0)
    bs = res.bootstrap
    assert bs.n_failed == 0 and np.all(bs.column("E") == 1.8) and bs.free == ("A", "B", "alpha")
    lo, hi = bs.ci["alpha"]
    assert lo < res.alpha < hi and bs.ci["E"] == (1.8, 1.8)
    # The Wald test has one degree of freedom per free parameter: the truth is a typical draw, a law
    # with alpha off by 0.05 (≈ 10 SEs here) is not.
    assert bs.wald_test(res, TIED)[1] > 1e-3
    assert bs.wald_test(res, F.ScalingLaw(1.8, TIED.A, TIED.B, 0.41, 0.41))[1] < 1e-6
    (row,) = res.allocate(1e22)
    assert row["ci"]["n_opt"][0] < row["n_opt"] < row["ci"]["n_opt"][1]
    assert row["n_opt"] == pytest.approx(TIED.n_opt(1e22), rel=0.1)  # 0.3% noise, 32 runs
    table = {"N": N, "D": D, "loss": L}
    check = H.holdout(table, "D>3e10", options=opts, n_boot=50)
    assert check.fit.fixed == {"E": 1.8} and check.fit.tied
    assert check.stats()["max_abs_rel_error"] < 0.02 and check.heldout.has_interval


def test_unconstrained_results_say_so():
    N, D, L = isoflop_runs(noise=0.003)
    d = F.fit_arrays(N, D, L).to_dict()
    assert d["fixed"] == {} and d["tie_exponents"] is False and d["n_free"] == 5


def test_fixed_values_are_exact_and_never_on_the_search_box():
    law = F.ScalingLaw(E=0.05, A=406.4, B=2100.0, alpha=0.35, beta=0.37)
    N, D, L = isoflop_runs(law=law)
    # The box keeps E >= e^-1 ≈ 0.37 (see test_parameter_on_its_bound_is_flagged), but a fixed E is
    # given, not searched for: 0.05 is allowed, used as is, and not reported as "at a bound".
    opts = F.FitOptions(settings=F.NewtonSettings(lower=(-1.0, -20.0, -20.0, 0.0, 0.0)), fixed={"E": 0.05, "A": 406.4})
    res = F.fit_arrays(N, D, L, opts, n_boot=20)
    assert res.status == "converged" and res.at_bound == ()
    # exp(log(0.05)) and exp(log(406.4)) are each one ulp off; the result holds the values given.
    assert np.exp(np.log(0.05)) != 0.05 and res.E == 0.05 and res.A == 406.4
    assert np.all(res.bootstrap.column("A") == 406.4) and res.bootstrap.n_failed == 0
    assert res.beta == pytest.approx(law.beta, rel=1e-6)
