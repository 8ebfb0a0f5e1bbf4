"""Big inputs, tested small: the fit's sums over rows go in blocks and its start grid is
screened on a subsample; the bootstraps draw their resamples chunk by chunk and refuse more than
MAX_RESAMPLES up front; the isoFLOP parabola bootstrap adds its noisy losses a block of rows at a time;
the exponent's WLS line is closed-form numpy, with no statsmodels on the CLI's path. Each blocked
computation is checked against the unblocked one on small data (blocks of a few rows), and one memory
test bounds a fit's peak allocation with tracemalloc. The timings on 20k and 1M rows are in
bench/bench_big_inputs.py."""

import subprocess
import sys
import tracemalloc
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
from scalinglab.cli import main
from scalinglab.errors import UserError
from scalinglab.fitting.chinchilla import approach3 as F
from scalinglab.fitting.chinchilla.law import ScalingLaw
from scalinglab.fitting.chinchilla.newton import batched_solve, objective, row_blocks
from scalinglab.fitting.chinchilla.settings import NewtonSettings
from scalinglab.fitting.frontier import envelope, isoflop
from scalinglab.fitting.frontier.wls import t_quantile, wls_line
from scalinglab.fitting.options import MAX_RESAMPLES, FitOptions

TRUE = ScalingLaw(E=1.69, A=406.4, B=410.7, alpha=0.34, beta=0.28)


def runs(n: int, seed: int = 0, noise: float = 0.01):
    rng = np.random.default_rng(seed)
    N = np.exp(rng.uniform(np.log(1e7), np.log(1e10), n))
    D = np.exp(rng.uniform(np.log(1e9), np.log(1e12), n))
    return N, D, TRUE.loss(N, D) * np.exp(noise * rng.standard_normal(n))


# --- the fit -------------------------------------------------------------------------------------------


def test_row_blocks_cover_every_row_once_within_the_budget():
    for K, n, block in ((50, 1000, 1 << 20), (4500, 1001, 10_000), (3, 17, 5), (10**6, 7, 100)):
        blocks = row_blocks(K, n, block)
        assert np.array_equal(np.concatenate([np.arange(n)[s] for s in blocks]), np.arange(n))
        assert all(K * (s.stop - s.start) <= max(block, K) for s in blocks)


def test_blocked_objective_and_solver_agree_with_one_block():
    N, D, L = runs(300)
    logN, logD, logL = np.log(N), np.log(D), np.log(L)
    starts = F.hoffmann_grid()[::90]
    # One block is the unblocked arithmetic; blocks of a few rows only reorder the sums (rounding, ~1e-13).
    whole = objective(starts, logN, logD, logL, block=10**9)
    parts = objective(starts, logN, logD, logL, block=len(starts) * 7)
    np.testing.assert_allclose(parts, whole, rtol=1e-12)
    th0 = np.repeat(F.fit_arrays(N, D, L).theta[None] + 0.05, 3, axis=0)
    a = batched_solve(th0, logN, logD, logL, block=10**9)
    b = batched_solve(th0, logN, logD, logL, block=3 * 11)
    np.testing.assert_allclose(b[0], a[0], atol=1e-9)  # both converge to the same optimum
    assert a[2].all() and b[2].all()


def test_screening_on_a_subsample_finds_the_full_data_optimum():
    N, D, L = runs(800, seed=1)
    full = F.fit_arrays(N, D, L, FitOptions(settings=NewtonSettings(screen_rows=10_000)))  # every row screened, as before
    screened = F.fit_arrays(N, D, L, FitOptions(settings=NewtonSettings(screen_rows=150, block=4096)))
    assert full.status == screened.status == "converged"
    # The final solve sees every row in both, so they stop at the same optimum (to the solver's tolerance).
    np.testing.assert_allclose(screened.theta, full.theta, atol=1e-7)
    assert abs(screened.alpha - TRUE.alpha) < 0.03 and abs(screened.beta - TRUE.beta) < 0.03  # 1% noise, 800 runs


def test_screening_rows_keep_every_distinct_size_and_are_repeatable():
    N, D, L = runs(5000)
    N = np.repeat([1e7, 1e8, 1e9, 1e10], 1250)  # four sizes, each in a contiguous block of rows
    logN, logD = np.log(N), np.log(D)
    sub = F.screening_rows(logN, logD, 100)
    assert len(sub) == 100 and np.array_equal(sub, F.screening_rows(logN, logD, 100))
    assert set(np.round(logN[sub], 6)) == set(np.round(logN, 6))  # a random 2% could miss one
    assert F.screening_rows(logN, logD, 5000) == slice(None)


def test_a_fit_on_many_rows_allocates_a_bounded_amount():
    # Before: 4,500 starts × 3,000 rows scored at once, several 108 MB arrays. Now the screen is 1,000
    # rows and every sum goes in blocks of 2^16 elements (0.5 MB arrays): the peak stays near 16 MB.
    N, D, L = runs(3000, seed=2)
    tracemalloc.start()
    try:
        res = F.fit_arrays(N, D, L, FitOptions(settings=NewtonSettings(block=1 << 16)))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert res.status == "converged"
    assert peak < 40e6, f"peak {peak / 1e6:.0f} MB"


def test_bootstrap_in_small_chunks_draws_the_same_resamples():
    N, D, L = runs(60, seed=3, noise=0.02)
    res = F.fit_arrays(N, D, L)
    whole = F.bootstrap(res, N, D, L, n_boot=20, seed=5)
    # chunk 7 and a block that forces 2-row slices: the same counts, drawn 7 resamples at a time
    small = F.bootstrap(replace(res, options=FitOptions(settings=NewtonSettings(block=16))), N, D, L, n_boot=20,
                        seed=5, chunk=7)
    assert np.array_equal(whole.converged, small.converged)
    # Blocks reorder the sums' rounding, and a replicate's solve stops within its tolerance along the flat
    # directions of 60 runs (B moves ~1e-7 relative): equal to 1e-6, a thousandth of any SE.
    np.testing.assert_allclose(small.samples, whole.samples, rtol=1e-6)
    groups = np.arange(60) // 3
    np.testing.assert_allclose(F.bootstrap(res, N, D, L, n_boot=20, seed=5, groups=groups, chunk=3).samples,
                               F.bootstrap(res, N, D, L, n_boot=20, seed=5, groups=groups).samples, rtol=1e-6)


def test_too_many_resamples_are_refused_before_any_work():
    N, D, L = runs(60)
    with pytest.raises(UserError, match=f"at most {MAX_RESAMPLES:,} resamples"):
        F.fit_arrays(N, D, L, n_boot=100_000_000)
    with pytest.raises(UserError, match="at most"):
        isoflop.budget_optima(pd.DataFrame({"n": [1.0, 2, 3], "flops": 1.0, "loss": [3.0, 2, 3]}), n_boot=10**8,
                              noise=0.01)
    with pytest.raises(UserError, match="at most"):
        envelope.fit_envelope(pd.DataFrame({"run": ["a"], "n": [1.0], "loss": [3.0], "flops": [1.0], "tokens": [1.0]}),
                              envelope.EnvelopeOptions(n_boot=10**8))


@pytest.mark.parametrize("command, csv", [
    ("fit", "N,D,loss\n1e8,1e9,3.0\n"), ("isoflop", "N,C,loss\n1e8,1e18,3.0\n"),
    ("envelope", "run,n,flops,tokens,loss\na,1e8,1e15,1e6,3.0\n"),
])
def test_the_cli_refuses_a_hundred_million_resamples_in_one_line(tmp_path, capsys, command, csv):
    path = tmp_path / "runs.csv"
    path.write_text(csv)
    assert main([command, str(path), "--bootstrap", "100000000"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "at most 100,000 resamples" in err and "Traceback" not in err, err


# --- isoflop -------------------------------------------------------------------------------------------


def test_blocked_parabola_bootstrap_matches_the_whole_noise_matrix():
    rng = np.random.default_rng(4)
    log_n = np.sort(rng.uniform(17, 21, 40))
    loss = 2 + 0.05 * (log_n - 19) ** 2
    sd = np.full(40, 0.01)
    # The old path: all 40 × 300 draws at once, np.polyfit; the new one in blocks of 3 rows (900 elements).
    noisy = np.maximum(loss[:, None] + sd[:, None] * np.random.default_rng(9).standard_normal((40, 300)),
                       np.finfo(float).tiny)
    ref = isoflop._minimise(log_n, np.log(noisy), "parabola", None)
    got = isoflop._noisy_parabola_optima(log_n, loss, sd, 300, np.random.default_rng(9), block=900)
    np.testing.assert_allclose(got[0], ref[0], atol=1e-10)
    np.testing.assert_allclose(got[1], ref[1], atol=1e-10)
    assert np.array_equal(got[2], ref[2])


def test_budget_optima_do_not_depend_on_the_block():
    rng = np.random.default_rng(5)
    rows = []
    for c in np.geomspace(1e17, 1e20, 4):
        n = np.geomspace(1e7, 1e10, 30) * (c / 1e17) ** 0.3
        rows += [(x, c, float(TRUE.loss(x, c / (6 * x)) * np.exp(0.003 * rng.standard_normal()))) for x in n]
    df = pd.DataFrame(rows, columns=["n", "flops", "loss"])
    a = isoflop.budget_optima(df, n_boot=200, seed=1)
    b = isoflop.budget_optima(df, n_boot=200, seed=1, block=200 * 4)
    pd.testing.assert_frame_equal(a, b, rtol=1e-9)


def test_wls_line_gives_statsmodels_numbers():
    sm = pytest.importorskip("statsmodels.api")
    rng = np.random.default_rng(6)
    for n, weighted, level in ((5, True, 0.95), (3, True, 0.9), (8, False, 0.95), (4, True, 0.99)):
        x = np.log(np.geomspace(1e17, 1e21, n))
        y = 0.5 * x - 3 + 0.05 * rng.standard_normal(n)
        w = 1 / rng.uniform(0.01, 0.2, n) ** 2 if weighted else None
        ref = sm.WLS(y, sm.add_constant(x), weights=w if weighted else 1.0).fit()
        got = wls_line(x, y, w, level)
        np.testing.assert_allclose([got.intercept, got.slope, got.se, got.r2],
                                   [ref.params[0], ref.params[1], ref.bse[1], ref.rsquared], rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(got.ci, ref.conf_int(alpha=1 - level)[1], rtol=1e-10)


def test_t_quantile_matches_scipy():
    stats = pytest.importorskip("scipy.stats")
    for df in (1, 2, 3, 4, 7, 30, 201):
        for p in (0.6, 0.95, 0.975, 0.995):
            assert abs(t_quantile(p, df) - stats.t.ppf(p, df)) < 1e-10 * stats.t.ppf(p, df)


def test_isoflop_and_fit_cli_do_not_import_statsmodels(tmp_path):
    rows = ["N,C,loss"]
    for c in (1e18, 1e19, 1e20, 1e21):
        n_opt = 0.6 * c**0.45
        rows += [f"{n_opt * f:.6g},{c:g},{2 + 0.1 * np.log(f) ** 2:.6g}" for f in np.geomspace(0.1, 10, 7)]
    iso = tmp_path / "iso.csv"
    iso.write_text("\n".join(rows) + "\n")
    fit = tmp_path / "fit.csv"
    N, D, L = runs(40)
    fit.write_text("N,D,loss\n" + "".join(f"{a:.6g},{b:.6g},{c:.6g}\n" for a, b, c in zip(N, D, L)))
    code = ("import sys; from scalinglab.cli import main\n"
            f"assert main(['isoflop', {str(iso)!r}, '--bootstrap', '50']) == 0\n"
            f"assert main(['fit', {str(fit)!r}]) == 0\n"
            "print('statsmodels loaded:', 'statsmodels' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().endswith("statsmodels loaded: False"), out.stdout[-300:]
