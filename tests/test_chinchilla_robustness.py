"""The robustness checks of notebook 01 (scalinglab.papers.chinchilla_robustness): known answers on simulated data."""

import numpy as np
import pandas as pd
import pytest
from scalinglab.errors import UserError
from scalinglab.fitting.chinchilla import approach3 as F
from scalinglab.fitting.chinchilla.law import ScalingLaw
from scalinglab.fitting.frontier import envelope as E
from scalinglab.fitting.rows import resample_counts, subsample_counts
from scalinglab.papers import chinchilla_robustness as R

LAW = ScalingLaw(E=1.8, A=480.0, B=2100.0, alpha=0.35, beta=0.37)


def simulated_runs(n=120, noise=0.01, seed=0):
    """Runs on a grid of N and C like Hoffmann's (D = C/(6N)), losses from LAW with log-normal noise."""
    rng = np.random.default_rng(seed)
    N = 10 ** rng.uniform(7.7, 10.2, n)
    C = 10 ** rng.uniform(18.5, 21.5, n)
    D = C / (6 * N)
    return N, C, LAW.loss(N, D) * np.exp(noise * rng.standard_normal(n))


def test_two_modes_recovers_a_known_mixture_and_calls_a_normal_unimodal():
    rng = np.random.default_rng(1)
    x = np.concatenate([rng.normal(0, 1, 600), rng.normal(4, 1, 1400)])
    m = R.two_modes(x)
    # 2,000 draws: the shares' sampling SE is ~0.01 and the means' ~0.04, so 0.03 and 0.1 are 2.5-3 SEs.
    assert abs(m.shares[0] - 0.3) < 0.03 and abs(m.means[0]) < 0.1 and abs(m.means[1] - 4) < 0.1
    assert m.bimodal and 1 < m.antimode < 3 and abs(m.peak - 4) < 0.2
    assert abs((m.labels == 0).mean() - 0.3) < 0.03
    # One normal: BIC prefers one component (the mixture's 3 extra parameters buy nothing), one peak.
    one = R.two_modes(rng.normal(0, 1, 4000))
    assert not one.bimodal and one.n_peaks == 1
    # Means 1.5 SD apart with equal shares: two components, but a density with one flat top: not bimodal.
    flat = R.two_modes(np.concatenate([rng.normal(0, 1, 2000), rng.normal(1.5, 1, 2000)]))
    assert flat.n_peaks == 1 and not flat.bimodal
    with pytest.raises(UserError, match="at least 10"):
        R.two_modes([1.0, 2.0])


def test_mode_table_splits_the_replicates_by_label():
    samples = np.array([[1.8, 480.0, 2100.0, al, 0.37] for al in (0.33, 0.34, 0.36, 0.37)])
    t = R.mode_table(samples, np.array([0, 0, 1, 1]), 5.88e23, level=0.5)
    assert t.loc["lower alpha", "share"] == 0.5 and t.loc["all", "share"] == 1.0
    # a = β/(α+β) falls as α rises: the lower-α mode has the larger a and the larger N_opt.
    assert t.loc["lower alpha", "a"] == pytest.approx(np.median([0.37 / 0.70, 0.37 / 0.71]))
    assert t.loc["lower alpha", "n_opt"] > t.loc["higher alpha", "n_opt"]


def test_subsamples_without_replacement_give_half_the_bootstrap_width():
    # For a mean, refits on m = 0.8n runs drawn without replacement vary as σ²(1/m − 1/n) = σ²/(4n), a
    # bootstrap's as σ²/n: the 10th-90th width halves. 4,000 draws put the widths' Monte-Carlo error
    # near 2%, so ±0.06 around 0.5 is three of them.
    rng = np.random.default_rng(2)
    x = rng.normal(0, 1, 200)
    sub = subsample_counts(200, 4000, 0.8, seed=3)
    assert set(np.unique(sub)) == {0.0, 1.0} and (sub.sum(axis=1) == 160).all()
    boot = resample_counts(200, 4000, seed=4)
    ratio = R.percentile_width(sub @ x / 160) / R.percentile_width(boot @ x / 200)
    assert abs(ratio - 0.5) < 0.06
    with pytest.raises(UserError):
        subsample_counts(10, 2, 1.5)


def test_runs_needed_scales_as_the_inverse_square_of_the_width():
    assert R.runs_needed(240, 0.05, 0.025) == pytest.approx(960)
    assert R.runs_needed(240, 0.05, 0.001) == pytest.approx(240 * 50**2)
    with pytest.raises(UserError):
        R.runs_needed(240, 0.05, 0.0)


def test_hoffmanns_subsample_refits_run_through_the_batched_bootstrap():
    N, C, L = simulated_runs()
    fit = F.fit_arrays(N, C / (6 * N), L, n_boot=300, seed=0)
    sub = F.bootstrap(fit, N, C / (6 * N), L, counts=subsample_counts(len(L), 300, 0.8, seed=1))
    assert sub.n_boot == 300 and sub.n_failed == 0
    # The same halving as for a mean, for a smooth estimator; 300 draws leave ~5% Monte-Carlo error per width.
    ratio = R.percentile_width(sub.column("a")) / R.percentile_width(fit.bootstrap.column("a"))
    assert 0.35 < ratio < 0.65
    with pytest.raises(UserError, match="shape"):
        F.bootstrap(fit, N, C / (6 * N), L, counts=np.ones((3, 5)))


def test_a_uniform_change_of_parameter_convention_moves_only_the_allocation():
    # N' = kN with D' = C/(6N') is the same law with A' = A·k^α, B' = B·k^−β: E, α, β and a stay, and at a
    # fixed C the optimum moves to N' = k·N_opt, so tokens per parameter divide by k². Only the optimiser's
    # tolerance separates the fits (1e-6).
    N, C, L = simulated_runs(noise=0.005)
    items = [R.Variant("reading", f"× {k}", *R._runs(N * k, C, L, 0)) for k in (1.0, 1.15)]
    t = R.sensitivity(items, 5.88e23)
    for p in ("E", "alpha", "beta", "a"):
        assert t.loc[1, p] == pytest.approx(t.loc[0, p], abs=1e-6)
    assert t.loc[1, "tokens_per_param"] / t.loc[0, "tokens_per_param"] == pytest.approx(1 / 1.15**2, rel=1e-5)


def test_least_squares_variant_is_exact_and_duplicates_are_fitted_once():
    N, C, L = simulated_runs(noise=0.02)
    base = R._runs(N, C, L, 0)
    items = [R.Variant("δ", "ls", *base, F.FitOptions(delta=R.LEAST_SQUARES_DELTA)),
             R.Variant("δ", "1e-3", *base), R.Variant("again", "1e-3", *base)]
    t = R.sensitivity(items, 5.88e23)
    assert t.loc[0, "max_abs_log_residual"] < R.LEAST_SQUARES_DELTA  # so the Huber loss was ½r² at every run
    assert t.loc[1, "a"] == t.loc[2, "a"]


def test_snap_and_the_manual_digitisation_reader():
    assert list(R.snap([1.02e8, 9.6e8, 5e9], [1e8, 1e9, 1e10])) == [1e8, 1e9, 1e10]
    table = pd.DataFrame({"model size": ["1,234,000.5", "16,450,387,383.84"], "training FLOP": [1e18, 2e20],
                          "loss": [3.0, 2.5]})
    N, C, L = R.manual_digitization_runs(table)
    assert N.tolist() == [1234000.5, 16450387383.84] and C.tolist() == [1e18, 2e20]
    with pytest.raises(UserError, match="model size"):
        R.manual_digitization_runs(table.assign(**{"model size": ["1,2x", "3"]}))


def test_loglinear_at_matches_the_ols_mean_interval():
    # Equal weights: WLS is OLS, whose mean at x0 has SE s·√(1/m + (x0 − x̄)²/Sxx), a t interval on m − 2 df.
    from scipy import stats

    rng = np.random.default_rng(5)
    flops = np.logspace(18, 21, 8)
    n_opt = 0.1 * flops**0.5 * np.exp(0.05 * rng.standard_normal(8))
    a, n_c, (lo, hi) = R.loglinear_at(flops, n_opt, np.ones(8), 5.88e23, level=0.8)
    x, y = np.log(flops), np.log(n_opt)
    slope, icpt = np.polyfit(x, y, 1)
    s = np.sqrt(np.sum((y - icpt - slope * x) ** 2) / 6)
    x0 = np.log(5.88e23)
    half = stats.t.ppf(0.9, 6) * s * np.sqrt(1 / 8 + (x0 - x.mean()) ** 2 / np.sum((x - x.mean()) ** 2))
    assert a == pytest.approx(slope) and np.log(n_c) == pytest.approx(icpt + slope * x0)
    assert np.log(hi) - np.log(n_c) == pytest.approx(half) and np.log(n_c) - np.log(lo) == pytest.approx(half)


def test_envelope_tokens_per_param_has_a_bootstrap_interval():
    # Curves that follow LAW exactly (checkpoints every 11% in D): the envelope's lines give D_opt/N_opt at any C.
    parts = [pd.DataFrame({"run": f"r{i:02d}", "n": n, "tokens": np.logspace(7, 12.5, 120)})
             for i, n in enumerate(np.logspace(7, 10, 16))]
    curves = pd.concat(parts, ignore_index=True)
    curves["loss"] = LAW.loss(curves["n"], curves["tokens"])
    fit = E.fit_envelope(curves, E.EnvelopeOptions(n_boot=30), flops_col=None)
    assert fit.boot.shape[1] == 4
    point, (lo, hi) = fit.tokens_per_param(5.88e23)
    assert point == pytest.approx(fit.d_opt(5.88e23) / fit.n_opt(5.88e23))
    assert lo <= point <= hi
    # Within the fitted compute (1e16-1e22) the envelope follows the law's own optimum to its size grid's
    # staircase (sizes a factor 1.58 apart, so N_opt within ~±25% and tokens per parameter within a factor 1.6).
    c = 1e20
    assert 1 / 1.6 < fit.tokens_per_param(c)[0] / LAW.tokens_per_param(c) < 1.6
    narrow = fit.tokens_per_param(5.88e23, level=0.5)[1]
    assert lo <= narrow[0] <= narrow[1] <= hi


def _approach_table(ours_a3=(0.514, 0.492, 0.542), ours_a2=(0.507, 0.476, 0.538)):
    """approach_rows' shape: Hoffmann's Table 2 values of a beside ours (point, lo, hi)."""
    rows = []
    for name, (a, lo, hi) in (("Approach 1", (0.50, 0.488, 0.502)), ("Approach 2", (0.49, 0.462, 0.534)),
                              ("Approach 3", (0.46, 0.454, 0.455))):
        rows.append(R._row(name, "Hoffmann Table 2", "Hoffmann's runs", a, (lo, hi), 1 - a, (1 - hi, 1 - lo),
                           np.nan, (np.nan, np.nan), "10th-90th"))
        mine = {"Approach 2": ours_a2, "Approach 3": ours_a3}.get(name, (0.597, 0.571, 0.607))
        rows.append(R._row(name, "ours", "x", mine[0], mine[1:], 1 - mine[0], (1 - mine[2], 1 - mine[1]),
                           np.nan, (np.nan, np.nan), "80%", note="other suite" if name == "Approach 1" else ""))
    return pd.DataFrame(rows)


def test_held_values_names_what_each_interval_holds_and_excludes():
    # Our Approach-3 interval (0.492, 0.542) holds Hoffmann's Approach-1 value 0.50 but not his Approach-2
    # 0.49 (0.002 below its lower end) nor his Approach-3 0.46; the wider Approach-2 interval holds both 0.50 and 0.49.
    held = R.held_values(_approach_table()).set_index(["ours", "hoffmann"])["held"]
    assert held[("Approach 3", "Approach 1")] and not held[("Approach 3", "Approach 2")]
    assert not held[("Approach 3", "Approach 3")]
    assert held[("Approach 2", "Approach 1")] and held[("Approach 2", "Approach 2")]
    assert not held[("Approach 2", "Approach 3")]
    assert len(held) == 6                       # our Approach 1 (another suite) is not compared by default
    # A closed interval: a value exactly at an end is held.
    edge = R.held_values(_approach_table(ours_a3=(0.514, 0.49, 0.542))).set_index(["ours", "hoffmann"])["held"]
    assert edge[("Approach 3", "Approach 2")]


def test_decades_beyond_the_largest_run():
    # The largest run is 6 · 1e9 · 2e11 = 1.2e21 FLOP; 5.88e23 lies log10(490) = 2.69 decades beyond it.
    largest, decades = R.decades_beyond(5.88e23, [1e8, 1e9, 5e8], [1e10, 2e11, 1e11])
    assert largest == pytest.approx(1.2e21)
    assert decades == pytest.approx(np.log10(490))
