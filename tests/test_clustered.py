"""Trend tests clustered by item (inverse_scaling.clustered), on simulated families that share their items."""

import numpy as np
import pandas as pd
import pytest
from scalinglab.inverse_scaling import clustered


def shared_items(rng, n_items=150, models=6, sd_intercept=0.5, sd_slope=3.0, slope=0.0):
    """Every model answers the same items. Item i has its own logit intercept and its own slope per decade
    (items that get easier or harder with scale, as inverse-scaling tasks have), both centred on 0: averaged
    over items, accuracy is exactly 0.5 at every scale (a symmetric logit), so the null of no trend holds."""
    z = np.linspace(-1.2, 1.2, models)
    a = rng.normal(0, sd_intercept, n_items)
    b = rng.normal(slope, sd_slope, n_items)
    p = 1 / (1 + np.exp(-(a[None, :] + b[None, :] * z[:, None])))
    y = (rng.random(p.shape) < p).astype(float)
    return pd.DataFrame(dict(compute=np.repeat(10.0 ** (z + 12), n_items), correct=y.ravel(),
                             id=np.tile(np.arange(n_items), models)))


def test_clustered_test_holds_its_level_where_the_naive_binomial_one_does_not():
    rng = np.random.default_rng(20261203)
    reps = 200
    res = [clustered.clustered_trend(shared_items(rng), exchangeable=False) for _ in range(reps)]
    clustered_rate = np.mean([r.p_linear < 0.05 for r in res])
    naive_rate = np.mean([r.naive_p_linear < 0.05 for r in res])
    gate_rate = np.mean([r.p_trend < 0.05 for r in res])
    # Monte Carlo sd of a 5% rate over 200 replicates is 0.015; the sandwich with 150 clusters runs a little
    # liberal, so allow 0.02-0.10 (about -2 and +3 sd).
    assert 0.02 <= clustered_rate <= 0.10
    assert 0.02 <= gate_rate <= 0.10
    # Treating 6 x 150 answers as independent ignores that each item's slope is shared by all models:
    # its false-positive rate is over three times nominal in this design (0.175 with this seed); 0.12 is
    # 4.5 Monte Carlo sd above 0.05, and 2 sd below the naive test's rate.
    assert naive_rate >= 0.12
    # the clustered 95% interval of the slope covers the true average slope, 0, as often as the test holds
    cover = np.mean([r.ci[0] <= 0 <= r.ci[1] for r in res])
    assert cover == pytest.approx(1 - clustered_rate)


def test_clustered_call_finds_a_real_inverse_trend_and_names_its_unit():
    rng = np.random.default_rng(7)
    r = clustered.clustered_trend(shared_items(rng, n_items=300, sd_slope=0.5, slope=-0.8))
    # average slope -0.8 logit per decade over 300 items: the marginal slope is attenuated by the item
    # effects but far from 0 (its SE is ~0.06)
    assert r.trend == "inverse" and r.slope < -0.4 and r.ci[1] < 0
    assert r.unit == "item" and r.n_items == 300 and r.n_models == 6 and r.rows == 1800
    assert np.isfinite(r.exchangeable_p_linear) and -1 < r.exchangeable_rho < 1


def test_no_variation_within_items_is_flat_with_a_note_and_too_few_models_is_insufficient():
    df = pd.DataFrame(dict(compute=np.repeat([1e10, 1e11, 1e12], 4), correct=np.tile([1.0, 0, 1, 0], 3),
                           id=np.tile(range(4), 3)))
    r = clustered.clustered_trend(df)
    assert r.trend == "flat" and r.slope == 0 and r.p_trend == 1 and "exactly 0" in r.note
    assert clustered.clustered_trend(df[df.compute < 1e12]).trend == "insufficient"
    table = clustered.clustered_trends(df.assign(task="t"), ["task"])
    assert list(table.group) == ["t"] and table.trend.item() == "flat"
