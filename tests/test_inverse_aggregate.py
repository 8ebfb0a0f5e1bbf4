"""Notebook 03's aggregation, binomial errors and family-table tests (scalinglab.inverse_scaling.aggregate),
the unfloored scale for bounded scores (trend, floor=False), and the scoring path on random-weight GPTs."""

import numpy as np
import pandas as pd
import pytest
from scalinglab.errors import UserError
from scalinglab.inverse_scaling import aggregate as A
from scalinglab.inverse_scaling import trend


def test_binomial_se_and_wilson_interval_known_values():
    assert A.binomial_se(0.5, 100) == pytest.approx(0.05)
    # Wilson at p = 0.5, n = 100, z = 1.959964: centre 0.5, half-width z·sqrt(0.0025 + z²/40000)/(1 + z²/100)
    lo, hi = A.wilson_interval(0.5, 100)
    assert (lo, hi) == pytest.approx((0.403832, 0.596168), abs=1e-6)
    # statsmodels' independent implementation agrees, including at the boundary, where p ± z·se collapses
    from statsmodels.stats.proportion import proportion_confint

    for k, n in ((0, 20), (3, 17), (300, 300)):
        assert A.wilson_interval(k / n, n) == pytest.approx(proportion_confint(k, n, method="wilson"), abs=1e-12)


def test_accuracy_table_groups_in_order_with_errors():
    per = pd.DataFrame(dict(model=["b", "b", "b", "b", "a", "a"], correct=[1, 1, 1, 0, 0, 1],
                            loss=[0.1, 0.2, 0.3, 0.4, 1.0, 2.0]))
    t = A.accuracy_table(per, "model")
    assert list(t.model) == ["b", "a"] and list(t.n) == [4, 2]
    assert list(t.accuracy) == [0.75, 0.5] and t.mean_loss.tolist() == pytest.approx([0.25, 1.5])
    assert t.accuracy_se.tolist() == pytest.approx([np.sqrt(0.75 * 0.25 / 4), np.sqrt(0.25 / 2)])
    assert (t.ci_low < t.accuracy).all() and (t.accuracy < t.ci_high).all()
    with pytest.raises(UserError, match="0/1"):
        A.accuracy_table(per.assign(correct=[1, 2, 0, 0, 1, 1]), "model")
    with pytest.raises(UserError, match="'params'"):
        A.accuracy_table(per, ["model", "params"])


def test_matches_table_rounds_like_the_table():
    assert A.matches_table([0.38333333, 0.54], [0.3833, 0.54], 4)
    assert not A.matches_table([0.38336, 0.54], [0.3833, 0.54], 4)
    assert not A.matches_table([0.5], [np.nan], 4) and not A.matches_table([], [], 4)


def test_whole_count_share_tells_counts_from_scores():
    n = 817
    rng = np.random.default_rng(0)
    counts = rng.integers(100, 700, 20) / n                               # k of n: every one is whole
    scores = rng.beta(2, 3, size=(20, n)).mean(axis=1)                   # means of per-item scores
    df = pd.DataFrame(dict(bench=["count"] * 20 + ["score"] * 20, value=np.r_[counts, scores], n=n))
    share = A.whole_count_share(df, "value", "n", "bench")
    assert share["count"] == 1.0 and share["score"] == 0.0


def _family_table(seed=0):
    """Two benchmarks x four families x five models: 'count' accuracies are binomial draws around a
    rising logit line; 'score' values sit exactly on their lines (no scatter), so their Pearson chi2 is ~0."""
    rng = np.random.default_rng(seed)
    rows = []
    for f, fam in enumerate(["A", "B", "C", "D"]):
        for i, x in enumerate(np.logspace(20, 22, 5)):
            z = np.log10(x) - 21
            p_count = 1 / (1 + np.exp(-(0.4 * z + 0.1 * f)))
            rows.append(dict(family=fam, flops=x, benchmark="count", n=1000,
                             accuracy=rng.binomial(1000, p_count) / 1000))
            p_score = 1 / (1 + np.exp(-(-0.3 * z + 0.05 * f + 0.01 * (i % 2))))
            rows.append(dict(family=fam, flops=x, benchmark="score", n=800, accuracy=p_score))
    return pd.DataFrame(rows)


def test_a_score_keeps_its_estimated_scale_below_one_and_uses_f_tests():
    df = _family_table()
    g = df[df.benchmark == "score"]
    floored = trend.pooled_dispersion(g, "flops", "accuracy", "n", "family")
    kept = trend.pooled_dispersion(g, "flops", "accuracy", "n", "family", floor=False)
    assert floored.floored and floored.scale == 1.0 and floored.test_df is None
    assert not kept.floored and kept.scale == kept.raw < 1 and kept.test_df == kept.df == 8  # 4 x (5 - 3)
    # With the scale estimated, the gate is F(2, 8) on the deviance difference / 2 / scale, by hand:
    from scipy import stats

    r = trend.classify_trend(g[g.family == "A"].flops, g[g.family == "A"].accuracy, 800, dispersion=kept)
    assert r.p_trend == pytest.approx(stats.f.sf(r.deviance_trend / 2 / kept.scale, 2, 8), rel=1e-9)
    assert "score" in r.dispersion
    # and n cancels: the same values with n = 1 give the same tests
    one = trend.classify_groups(g.assign(n=1), "flops", "accuracy", "n", "family", dispersion="pooled", floor=False)
    many = trend.classify_groups(g, "flops", "accuracy", "n", "family", dispersion="pooled", floor=False)
    assert [r.p_trend for r in one] == pytest.approx([r.p_trend for r in many], rel=1e-6)


def test_family_tests_four_schemes_same_families_scores_unfloored():
    df = _family_table()
    ft = A.family_tests(df, scores=("score",), left_out="D")
    assert set(ft.tests) == set(A.SCHEMES)
    keys = {k: set(t.index) for k, t in ft.tests.items()}
    assert all(v == keys["binomial"] for v in keys.values()) and len(keys["binomial"]) == 8
    d = ft.dispersion
    assert d.loc["score", "score"] and not d.loc["score", "floored"] and d.loc["score", "scale"] < 1
    assert not d.loc["count", "score"]
    assert 0 < d.loc["count", "left_out_share"] < 1
    # the rising count benchmark is called positive in every family under the binomial test
    assert (ft.tests["binomial"].loc["count"].trend == "positive").all()
    assert (ft.called("binomial") <= 4).all() and ft.called("pooled", "trend_adj").index.tolist() == ["count", "score"]
    # every scheme's adjusted p-values are Benjamini-Hochberg over its 8 tests
    t = ft.tests["pooled"]
    assert t.p_trend_adj.to_numpy() == pytest.approx(trend.adjust_pvalues(t.p_trend.to_numpy()))


def test_trend_counts_keeps_every_call_in_order():
    t = pd.DataFrame(dict(b=["x", "x", "y"], trend=["inverse", "flat", "inverse"]))
    c = A.trend_counts(t, "b")
    assert list(c.columns) == list(trend.TRENDS) and c.loc["x", "inverse"] == 1 and c.loc["y", "positive"] == 0


def test_scoring_path_on_random_weight_gpts():
    """The plumbing check that notebook 03 used to plot: random-weight GPTs through the prize scoring,
    the family table and the trend test. Random weights carry no signal, so only the path is checked."""
    torch = pytest.importorskip("torch")
    from scalinglab.inverse_scaling import scoring
    from scalinglab.inverse_scaling.adapters import GPTCheckpointLM
    from scalinglab.training.model import GPT, GPTConfig

    class ByteTokenizer:
        def encode(self, text, add_special_tokens=False):
            return list(text.encode())

    torch.manual_seed(0)
    models = [GPTCheckpointLM(GPT(GPTConfig(vocab_size=256, seq_len=128, width=w, depth=d, head_dim=16)),
                              ByteTokenizer(), name=f"random-w{w}-d{d}") for w, d in ((16, 1), (32, 1), (32, 2))]
    rows = pd.DataFrame(dict(prompt=["Question: is ice not cold?\nA. yes\nB. no\nAnswer:",
                                     "Write a quote that ends in the word \"heavy\": Absence makes the heart grow"] * 3,
                             classes=[[" A", " B"], [" heavy.", " fonder."]] * 3, answer_index=[0, 0, 1, 0, 1, 1]))
    evals = A.evaluate_family(models, {"toy": rows})
    assert list(evals.model) == [m.name for m in models] and (evals.n == 6).all()
    assert len(set(evals.params)) == 3 and ((evals.ci_low <= evals.accuracy) & (evals.accuracy <= evals.ci_high)).all()
    _, direct = scoring.evaluate_rows(models[1], rows)
    assert evals.accuracy[1] == direct["accuracy"] and evals.loss[1] == pytest.approx(direct["loss"])
    (res,) = trend.classify_groups(evals, "params", "accuracy", "n", "task")
    assert res.n_points == 3 and res.trend in (*trend.TRENDS, "insufficient")


def test_wilson_interval_holds_its_estimate_at_zero_and_one():
    # found scoring a 2-model smoke ladder: 0 of 6 gave a lower end of 2.8e-17, above the estimate itself
    lo, hi = A.wilson_interval([0.0, 1.0, 0.0], [6, 6, 817])
    assert lo[0] == 0.0 and hi[1] == 1.0 and lo[2] == 0.0
    assert (lo <= [0.0, 1.0, 0.0]).all() and (hi >= [0.0, 1.0, 0.0]).all()
