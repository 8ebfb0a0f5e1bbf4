"""Trend classification on synthetic series of known shape, its error rate on flat data, the pooled
quasi-binomial scale and multiple-testing adjustment."""

import json

import numpy as np
import pandas as pd
import pytest
from scalinglab.errors import UserError
from scalinglab.inverse_scaling.trend import (
    TRENDS,
    Dispersion,
    TrendOptions,
    adjust_pvalues,
    adjust_trends,
    between_model_sd,
    classify_groups,
    classify_trend,
    critical_scale,
    pooled_dispersion,
)

X = np.logspace(8, 11, 7)          # seven models over three decades
Z = np.log10(X) - 9.5              # centred log scale, -1.5 .. 1.5
N = 2000                           # large n: noise-free shapes must be detected


@pytest.mark.parametrize("accuracy, expected", [
    (0.6 - 0.08 * Z, "inverse"),
    (0.5 + 0.1 * Z, "positive"),
    (0.45 + 0.08 * Z**2, "u-shaped"),          # dips then recovers: vertex at the centre
    (0.7 - 0.08 * (Z - 0.5) ** 2, "inverted-u"),
    (0.5 + 0 * Z, "flat"),
    (1 / (1 + np.exp(1 - 0.15 * (Z + 2.5) ** 2)), "positive"),  # curved, vertex left of the data: monotone
])
def test_noise_free_series_of_known_shape(accuracy, expected):
    result = classify_trend(X, accuracy, N)
    assert result.trend == expected, result


def test_a_trend_carried_by_curvature_alone_is_curved_not_named_by_a_null_slope():
    # A symmetric dip: the linear slope is exactly zero (p_linear = 1), the quadratic is significant, but
    # with 60 examples a point one side's line is not (p_above ~ 0.08), so no turn is confirmed. Calling it
    # positive or inverse would report a direction the data do not have.
    r = classify_trend(X, 0.45 + 0.08 * Z**2, 60)
    assert r.p_trend < 0.05 and r.p_quadratic < 0.05 and r.p_linear > 0.5
    assert not (r.p_below < 0.05 and r.p_above < 0.05)
    assert r.trend == "curved"
    # With more examples per point both sides are significant and the same curve is a confirmed U.
    assert classify_trend(X, 0.45 + 0.08 * Z**2, 200).trend == "u-shaped"


def test_a_gate_that_passes_with_neither_slope_nor_curvature_significant_is_unresolved():
    # A referee's series: six log-spaced sizes, n = 400. The joint 2-df test passes (p 0.046), but neither the
    # slope (p 0.074) nor the curvature (p 0.086) does on its own: accuracy changes, in no shape the data show.
    r = classify_trend(np.logspace(8, 11, 6), [0.475, 0.509, 0.528, 0.527, 0.579, 0.508], 400)
    assert r.p_trend < 0.05 and r.p_linear >= 0.05 and r.p_quadratic >= 0.05
    assert r.trend == "unresolved" and "unresolved" in TRENDS
    # At alpha = 0.08 the slope is significant: the same series is positive (its slope is > 0).
    assert classify_trend(np.logspace(8, 11, 6), [0.475, 0.509, 0.528, 0.527, 0.579, 0.508], 400,
                          opts=TrendOptions(alpha=0.08)).trend == "positive"


def test_every_call_follows_its_stated_rule_on_random_series():
    rng = np.random.default_rng(12)
    x = np.logspace(8, 11, 6)
    calls = []
    for _ in range(400):
        p = np.clip(0.5 + rng.normal(0, 0.03) * (np.log10(x) - 9.5) + rng.normal(0, 0.02, 6), 0.05, 0.95)
        r = classify_trend(x, rng.binomial(400, p) / 400, 400)
        calls.append(r.trend)
        if r.trend == "flat":
            assert r.p_trend >= 0.05
        elif r.trend in ("positive", "inverse"):
            assert r.p_trend < 0.05 and r.p_linear < 0.05 and np.sign(r.slope) == (1 if r.trend == "positive" else -1)
        elif r.trend == "curved":
            assert r.p_trend < 0.05 and r.p_linear >= 0.05 and r.p_quadratic < 0.05
        elif r.trend == "unresolved":
            assert r.p_trend < 0.05 and r.p_linear >= 0.05 and r.p_quadratic >= 0.05
        else:
            assert r.trend in ("u-shaped", "inverted-u") and r.p_quadratic < 0.05 and r.vertex_inside
    # Scatter beyond binomial makes every branch turn up; both the curvature-only and the shapeless calls must.
    assert {"curved", "unresolved", "flat", "positive", "inverse"} <= set(calls), sorted(set(calls))


def test_vertex_and_p_values_are_reported():
    r = classify_trend(X, 0.45 + 0.08 * (Z - 0.3) ** 2, N)
    assert r.trend == "u-shaped" and r.p_quadratic < 1e-6 and r.vertex_inside
    assert np.log10(r.vertex_x) == pytest.approx(9.8, abs=0.1)  # logit vs identity bends it a little
    flat = classify_trend(X, np.full(7, 0.5), N)
    assert flat.p_trend == pytest.approx(1.0) and flat.scale == 1.0


def test_noisy_inverse_series_are_found_most_of_the_time():
    rng = np.random.default_rng(1)
    p = 0.6 - 0.05 * Z
    hits = sum(classify_trend(X, rng.binomial(300, p) / 300, 300).trend == "inverse" for _ in range(50))
    # the expected power here is about 0.97; 40 of 50 leaves room for sampling (binomial sd ~1.2)
    assert hits >= 40


def test_type_one_error_on_flat_data_is_near_alpha():
    rng = np.random.default_rng(7)
    x = np.logspace(8, 11, 5)
    calls = [classify_trend(x, rng.binomial(300, 0.5, 5) / 300, 300).trend for _ in range(300)]
    rate = np.mean([c != "flat" for c in calls])
    # One gate at alpha = 0.05; 300 draws give a binomial sd of 0.013, so [0.01, 0.10] is a ~4 sd band.
    assert 0.01 <= rate <= 0.10, rate


def test_groups_and_bad_input():
    df = pd.DataFrame(dict(fam=["a"] * 7 + ["b"] * 7, x=np.r_[X, X], acc=np.r_[0.6 - 0.08 * Z, 0.5 + 0.1 * Z], n=N))
    by = {r.group: r.trend for r in classify_groups(df, "x", "acc", "n", "fam")}
    assert by == {"a": "inverse", "b": "positive"}
    assert classify_trend(X[:2], [0.5, 0.6], 100).trend == "insufficient"
    with pytest.raises(UserError, match="accuracy must lie in"):
        classify_trend(X, np.full(7, 1.5), 100)
    with pytest.raises(UserError, match="no column 'acc2'"):
        classify_groups(df, "x", "acc2", "n")
    with pytest.raises(UserError, match="column 'fam' is not numeric"):
        classify_groups(df, "x", "fam", "n")


def test_rows_without_a_group_are_a_group_of_their_own():
    # Two families plus four rows whose family was left empty (NaN from read_csv, "" or spaces by hand).
    df = pd.DataFrame(dict(fam=["a"] * 7 + ["b"] * 7 + [None, "", "  ", np.nan],
                           x=np.r_[X, X, X[:4]], acc=np.r_[0.6 - 0.08 * Z, 0.5 + 0.1 * Z, 0.5, 0.5, 0.5, 0.5], n=N))
    results = classify_groups(df, "x", "acc", "n", "fam")
    # every row is accounted for: pandas' groupby alone would drop the four
    assert sum(r.n_points for r in results) == len(df)
    assert [r.group for r in results] == ["a", "b", "(blank)"]
    assert results[-1].n_points == 4 and results[-1].trend == "flat"


def test_a_groups_own_dispersion_is_estimated_but_has_no_power_with_four_points():
    rng = np.random.default_rng(3)
    # Model-to-model scatter (sd 0.04) far above binomial noise (sd ~0.005 at n=10000) and no trend.
    y = 0.5 + rng.normal(0, 0.04, 7)
    plain = classify_trend(X, y, 10000)
    wide = classify_trend(X, y, 10000, dispersion="group")
    assert wide.scale > 10 and wide.df_scale == 4 and wide.p_trend > plain.p_trend
    # Four points leave 1 residual df. Four accuracies within 0.005 of a logit line (own scale about 2) fall by
    # 0.07 over three decades, at n = 10000 a trend at p < 1e-20, yet F(2, 1) calls it flat.
    x4 = X[::2]
    near_line = 1 / (1 + np.exp(0.1 * Z[::2])) + 0.005 * np.array([1, -3, 3, -1]) / 3
    assert classify_trend(x4, near_line, 10000).p_trend < 1e-20
    own = classify_trend(x4, near_line, 10000, dispersion="group")
    assert 1.5 < own.scale == own.scale_group < 3 and own.df_scale == 1 and own.trend == "flat"
    # Exactly on the line the own scale is floored at 1, the binomial variance: binomial tests, not F(2, 1).
    exact = classify_trend(x4, 1 / (1 + np.exp(0.1 * Z[::2])), 10000, dispersion="group")
    assert exact.dispersion == "group (floored: binomial tests)" and np.isnan(exact.df_scale)
    assert exact.p_trend == classify_trend(x4, 1 / (1 + np.exp(0.1 * Z[::2])), 10000).p_trend < 1e-20


# -- pooled dispersion ------------------------------------------------------------------------------


def _quadratic_pearson_by_hand(x, y, n):
    """Pearson chi2 of a binomial logit fit quadratic in log10(x), by Newton-Raphson written out here,
    so the check does not lean on statsmodels (which trend.py uses)."""
    z = np.log10(x) - np.log10(x).mean()
    design = np.column_stack([np.ones_like(z), z, z**2])
    beta = np.zeros(3)
    for _ in range(50):
        mu = 1 / (1 + np.exp(-design @ beta))
        w = n * mu * (1 - mu)
        beta = beta + np.linalg.solve(design.T @ (w[:, None] * design), design.T @ (n * (y - mu)))
    mu = 1 / (1 + np.exp(-design @ beta))
    return float(np.sum(n * (y - mu) ** 2 / (mu * (1 - mu))))


def test_pooled_dispersion_is_summed_pearson_chi2_over_summed_residual_df():
    x5, x4 = np.logspace(8, 11, 5), np.logspace(9, 10, 4)
    df = pd.DataFrame(dict(
        fam=["a"] * 5 + ["b"] * 4 + ["c"] * 3 + ["d"] * 2,
        x=np.r_[x5, x4, X[:3], X[:2]],
        acc=[0.50, 0.58, 0.52, 0.66, 0.61, 0.30, 0.36, 0.31, 0.40, 0.7, 0.6, 0.65, 0.2, 0.3],
        n=[800, 800, 900, 900, 1000, 500, 500, 500, 600, 300, 300, 300, 100, 100]))
    by_hand = {f: _quadratic_pearson_by_hand(g.x.to_numpy(), g.acc.to_numpy(), g.n.to_numpy().astype(float))
               for f, g in df[df.fam.isin(["a", "b"])].groupby("fam")}
    chi2 = sum(by_hand.values())
    pooled = pooled_dispersion(df, "x", "acc", "n", "fam")
    # c (3 points) fits exactly and adds no df; d (2 points) cannot be fitted: df = (5 - 3) + (4 - 3).
    assert pooled.df == 3 and pooled.n_groups == 2
    assert pooled.pearson_chi2 == pytest.approx(chi2, rel=1e-6)  # two Newton solvers agree to far below this
    assert pooled.raw == pytest.approx(chi2 / 3, rel=1e-6) and pooled.raw > 1
    assert pooled.scale == pooled.raw
    top = max(by_hand, key=by_hand.get)
    assert pooled.largest() == (top, pytest.approx(by_hand[top] / chi2, rel=1e-6))
    # Every testable group, the 3-point one included, is tested against F(2, 3) with that scale.
    results = {r.group: r for r in classify_groups(df, "x", "acc", "n", "fam", dispersion="pooled")}
    assert [results[g].df_scale for g in "abc"] == [3, 3, 3] and results["d"].trend == "insufficient"
    assert results["c"].scale == pytest.approx(pooled.scale) and results["c"].dispersion == "pooled"


def test_pooled_dispersion_is_floored_at_one_and_needs_residual_df():
    df = pd.DataFrame(dict(fam=["a"] * 7, x=X, acc=1 / (1 + np.exp(-0.2 * Z)), n=N))  # exactly on a logit line
    pooled = pooled_dispersion(df, "x", "acc", "n", "fam")
    assert pooled.raw < 1e-6 and pooled.scale == 1.0 and pooled.df == 4
    assert pooled.floored and pooled.test_df is None and pooled.method == "pooled (floored: binomial tests)"
    with pytest.raises(UserError, match="4 or more points"):
        pooled_dispersion(df.head(3), "x", "acc", "n", "fam")


def _fields_of_the_tests(r):
    return {k: v for k, v in r.to_dict().items() if k not in ("dispersion", "test")}


def test_a_floored_pooled_scale_gives_exactly_the_binomial_tests():
    # Binomial data (no scatter between models): the pooled Pearson chi2 / df falls below 1 here.
    rng = np.random.default_rng(8)
    df = _family_table(rng, (4, 5, 6, 4, 3), n=300, slope=-0.15)
    pooled = pooled_dispersion(df, "x", "acc", "n", "fam")
    assert pooled.raw < 1 and pooled.floored, pooled
    plain = classify_groups(df, "x", "acc", "n", "fam")
    floored = classify_groups(df, "x", "acc", "n", "fam", dispersion="pooled")
    given = classify_groups(df, "x", "acc", "n", "fam", dispersion=pooled)
    for a, b, c in zip(plain, floored, given):
        # every p-value, slope and call identical, not merely close: the same chi-squared tests (NaN == NaN here)
        np.testing.assert_equal(_fields_of_the_tests(b), _fields_of_the_tests(a))
        np.testing.assert_equal(_fields_of_the_tests(c), _fields_of_the_tests(a))
        assert b.dispersion == "pooled (floored: binomial tests)" and "floored at 1" in b.test and "chi2" in b.test
    assert sum(r.trend != "flat" for r in plain) >= 1  # something to compare beyond flat calls
    # A scale of exactly 1 stated by a caller with df is still an estimate: F tests, larger p-values.
    stated = classify_groups(df, "x", "acc", "n", "fam", dispersion=Dispersion(1.0, pooled.df, "given"))
    assert all(s.p_trend > p.p_trend for s, p in zip(stated, plain) if p.trend != "insufficient")


def test_five_points_on_a_line_keep_their_binomial_p_value_under_a_pooled_scale():
    # The referee's example: accuracy 0.5 .. 0.7 exactly linear over five log-spaced sizes, n = 500. The
    # binomial p_trend is 4e-12; F(2, 2) at the floored scale 1 gave 0.037, a trend nearly lost to a variance
    # that was not being estimated (raw Pearson chi2 / df 0.000656 on 2 df).
    df = pd.DataFrame(dict(fam="a", x=np.logspace(8, 11, 5), acc=np.linspace(0.5, 0.7, 5), n=500))
    pooled = pooled_dispersion(df, "x", "acc", "n", "fam")
    assert pooled.raw == pytest.approx(0.000656, rel=1e-2) and pooled.df == 2 and pooled.floored
    (r,) = classify_groups(df, "x", "acc", "n", "fam", dispersion="pooled")
    binomial = classify_trend(df.x, df.acc, 500)
    assert r.p_trend == binomial.p_trend < 1e-11 and r.trend == "positive"
    # what the old rule computed, to show the size of the error: F(2, 2) on the binomial deviance
    old = classify_trend(df.x, df.acc, 500, dispersion=Dispersion(1.0, 2.0, "given"))
    assert 0.03 < old.p_trend < 0.04


def _family_table(rng, sizes, n=1000, rho=0.0, slope=0.0):
    """Families of models at log-spaced x; each model's true accuracy is beta-distributed around a logit
    line (intra-class correlation rho, i.e. a quasi-binomial scale 1 + (n - 1) * rho), rho = 0: binomial."""
    parts = []
    for i, k in enumerate(sizes):
        x = np.logspace(8, 11, k)
        mean = 1 / (1 + np.exp(-slope * (np.log10(x) - 9.5)))
        p = mean if rho == 0 else rng.beta(mean * (1 - rho) / rho, (1 - mean) * (1 - rho) / rho)
        parts.append(pd.DataFrame(dict(fam=f"f{i}", x=x, acc=rng.binomial(n, p) / n, n=n)))
    return pd.concat(parts, ignore_index=True)


def test_pooled_test_keeps_false_trends_near_alpha_on_overdispersed_flat_data():
    rng = np.random.default_rng(11)
    calls = {"binomial": [], "pooled": []}
    for _ in range(30):
        # no trend; between-model scatter gives a scale of about 1 + 999 * 0.01 = 11
        df = _family_table(rng, (4, 4, 4, 5, 5, 6), rho=0.01)
        for how in calls:
            calls[how] += [r.trend != "flat" for r in classify_groups(df, "x", "acc", "n", "fam", dispersion=how)]
    binomial, pooled = np.mean(calls["binomial"]), np.mean(calls["pooled"])
    # 180 tests: at a true rate of 0.05 the sd is 0.016 (a little more: tests of one table share a scale), so
    # [0.01, 0.10] is about +-3 sd. The binomial test mistakes the scatter for trends most of the time (~0.8).
    assert 0.01 <= pooled <= 0.10, pooled
    assert binomial >= 0.5, binomial


def test_pooled_test_finds_trends_that_a_groups_own_scale_cannot():
    rng = np.random.default_rng(5)
    calls = {"group": [], "pooled": []}
    for _ in range(10):
        df = _family_table(rng, (4,) * 8, rho=0.01, slope=-0.3)  # a real inverse trend, overdispersed
        pooled = classify_groups(df, "x", "acc", "n", "fam", dispersion="pooled")
        calls["pooled"] += [r.trend == "inverse" for r in pooled]
        # A family whose own estimate happens to fall below 1 (about a quarter of them here: chi2 on 1 df) is
        # floored and tested as binomial; the F(2, 1) tests are the others.
        calls["group"] += [r.trend == "inverse" for r in classify_groups(df, "x", "acc", "n", "fam", dispersion="group")
                           if r.dispersion == "group"]
    # 80 families: the pooled test (F(2, 8)) finds ~60%; F(2, 1) finds next to none (its 5% critical value is ~200).
    assert np.mean(calls["pooled"]) >= 0.35 and np.mean(calls["group"]) <= 0.1 and len(calls["group"]) >= 40, calls


def test_with_binomial_data_the_pooled_scale_is_about_one_and_the_calls_match():
    rng = np.random.default_rng(2)
    df = _family_table(rng, (6,) * 20, n=500, slope=0.0)
    df["acc"] = np.where(df.fam < "f10", df.acc, np.clip(df.acc + 0.04 * (np.log10(df.x) - 9.5), 0, 1))
    pooled = pooled_dispersion(df, "x", "acc", "n", "fam")
    # chi2 on 60 df divided by 60 has sd 0.18: [0.6, 1.5] is about +-2.5 sd around 1.
    assert pooled.df == 60 and 0.6 <= pooled.raw <= 1.5, pooled
    plain = classify_groups(df, "x", "acc", "n", "fam")
    wide = classify_groups(df, "x", "acc", "n", "fam", dispersion="pooled")
    agree = [a.trend == b.trend for a, b in zip(plain, wide)]
    # Same statistic; only the scale (1 to 1.5) and F(2, 60) instead of chi2(2) differ: a call may flip near alpha.
    assert np.mean(agree) >= 0.85 and sum(b.trend != "flat" for b in wide) >= 8, (pooled, agree)


def test_unknown_dispersion_is_a_user_error():
    with pytest.raises(UserError, match="unknown dispersion 'pool'"):
        classify_trend(X, np.full(7, 0.5), 100, dispersion="pool")
    with pytest.raises(UserError, match="unknown dispersion 'pooled'"):  # pooling needs a table of groups
        classify_trend(X, np.full(7, 0.5), 100, dispersion="pooled")


def test_critical_scale_is_where_the_gate_stops_passing():
    r = classify_trend(X, 0.6 - 0.03 * Z, 300)
    phi = critical_scale(r)
    assert phi > 1 and r.trend == "inverse"
    at = {f: classify_trend(X, 0.6 - 0.03 * Z, 300, dispersion=Dispersion(phi * f, None, "given")) for f in (0.99, 1.01)}
    assert at[0.99].p_trend < 0.05 < at[1.01].p_trend
    # a scale of 1 + 300 sd^2 / (p(1 - p)) is what an extra accuracy sd of sd means at n = 300
    assert between_model_sd(1 + 300 * 0.03**2 / 0.25, 0.5, 300) == pytest.approx(0.03)


# -- multiple testing -------------------------------------------------------------------------------

P = np.array([0.001, 0.008, 0.039, 0.041, 0.042, 0.06, 0.074, 0.205, 0.212, 0.216, 0.222, 0.251, 0.269, 0.275,
              0.34, 0.341, 0.384, 0.569, 0.594, 0.696, 0.762, 0.94, 0.942, 0.975, 0.986, 0.008, 0.5])


@pytest.mark.parametrize("method", ["fdr_bh", "holm"])
def test_adjusted_p_values_match_statsmodels_and_keep_the_order(method):
    from statsmodels.stats.multitest import multipletests

    shuffled = np.random.default_rng(0).permutation(P)  # unsorted, with a tie
    ours = adjust_pvalues(shuffled, method)
    assert np.allclose(ours, multipletests(shuffled, method=method)[1], rtol=0, atol=1e-12)
    order = np.argsort(shuffled)
    assert np.all(np.diff(ours[order]) >= 0)  # a smaller p never gets a larger adjusted p
    assert np.all(ours >= shuffled) and np.all(ours <= 1)


def test_untested_entries_stay_nan_and_do_not_count():
    with_nan = np.r_[np.nan, P[:5], np.nan]
    adj = adjust_pvalues(with_nan)
    assert np.isnan(adj[[0, -1]]).all()
    assert np.allclose(adj[1:-1], adjust_pvalues(P[:5]))
    with pytest.raises(UserError, match="unknown p-value adjustment"):
        adjust_pvalues(P, "bonferoni")
    with pytest.raises(UserError, match=r"must lie in \[0, 1\]"):
        adjust_pvalues([0.5, 1.2])


def test_adjusted_trends_turn_only_non_surviving_calls_flat():
    table = pd.DataFrame(dict(trend=["inverse", "positive", "positive", "flat", "insufficient"],
                              p_trend=[0.04, 0.001, 0.02, 0.6, np.nan]))
    out = adjust_trends(table)
    # BH over the 4 tests: 0.001 -> 0.004, 0.02 -> 0.04, 0.04 -> 0.0533, 0.6 -> 0.6
    assert out.p_trend_adj.round(4).tolist()[:4] == [0.0533, 0.004, 0.04, 0.6]
    assert out.trend_adj.tolist() == ["flat", "positive", "positive", "flat", "insufficient"]


def test_cli_pooled_dispersion_and_adjusted_p_values(tmp_path, capsys):
    from scalinglab.cli import main

    rng = np.random.default_rng(4)
    df = _family_table(rng, (5,) * 6, rho=0.02)  # flat but overdispersed (scale ~ 21)
    path = tmp_path / "fams.csv"
    df.to_csv(path, index=False)
    argv = ["trend", str(path), "--x-col", "x", "--y-col", "acc", "--count-col", "n", "--group-by", "fam", "--json"]
    assert main(argv + ["--dispersion", "pooled"]) == 0
    rows = json.loads(capsys.readouterr().out)
    expected = pooled_dispersion(df, "x", "acc", "n", "fam")
    assert [r["scale"] for r in rows] == pytest.approx([expected.scale] * 6) and expected.scale > 5
    assert [r["df_scale"] for r in rows] == [12] * 6
    assert np.allclose([r["p_trend_adj"] for r in rows], adjust_pvalues([r["p_trend"] for r in rows]))
    assert main(argv + ["--adjust", "none"]) == 0
    assert "p_trend_adj" not in json.loads(capsys.readouterr().out)[0]
    assert main(argv[:-1] + ["--dispersion", "pooled", "--adjust", "holm"]) == 0
    out = capsys.readouterr().out
    assert f"scale {expected.scale:.3g}, F(2, 12)" in out and "holm over 6 tests" in out
    # A floored pooled scale: the output says so, and the tests are the binomial ones.
    on_line = pd.DataFrame(dict(fam="a", x=np.logspace(8, 11, 5), acc=np.linspace(0.5, 0.7, 5), n=500))
    line_path = tmp_path / "line.csv"
    on_line.to_csv(line_path, index=False)
    line_argv = [str(line_path)] + argv[2:]
    assert main(["trend", *line_argv, "--dispersion", "pooled"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert row["dispersion"] == "pooled (floored: binomial tests)" and row["df_scale"] is None
    assert row["p_trend"] == classify_trend(on_line.x, on_line.acc, 500).p_trend
    assert main(["trend", *line_argv[:-1], "--dispersion", "pooled"]) == 0
    assert "below 1, so the scale is floored at 1" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exit_:  # argparse's usage errors exit; the parser makes them one line
        main(argv + ["--dispersion", "pool"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "invalid choice: 'pool'" in err and err.count("\n") == 1
    df.head(3).to_csv(path, index=False)
    assert main(argv + ["--dispersion", "pooled"]) == 2
    err = capsys.readouterr().err
    assert f"{path}: a pooled dispersion needs" in err and err.count("\n") == 1
