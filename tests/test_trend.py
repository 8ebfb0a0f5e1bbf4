"""Trend classification on synthetic series of known shape, and its error rate on flat data."""

import numpy as np
import pandas as pd
import pytest

from scalinglab.errors import UserError
from scalinglab.trend import TrendOptions, classify_groups, classify_trend

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


def test_overdispersion_widens_the_test():
    rng = np.random.default_rng(3)
    # Model-to-model scatter (sd 0.04) far above binomial noise (sd ~0.005 at n=10000) and no trend.
    y = 0.5 + rng.normal(0, 0.04, 7)
    plain = classify_trend(X, y, 10000)
    wide = classify_trend(X, y, 10000, opts=TrendOptions(overdispersion=True))
    assert wide.scale > 10 and wide.p_trend > plain.p_trend


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
