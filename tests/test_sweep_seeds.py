"""The seed-noise and exponent tables of notebook 02, section 5 (scalinglab.sweeps.seeds), on hand-made inputs."""

import numpy as np
import pandas as pd
import pytest
from scalinglab.sweeps import seeds


def _points():
    """Two budgets of three sizes, three seeds each; the seeds' losses are chosen so each point's sd is known."""
    rows = []
    spread = {(1e10, 100): 0.01, (1e10, 200): 0.0, (1e10, 400): 0.1, (1e11, 200): 0.02, (1e11, 400): 0.0,
              (1e11, 800): 0.3}
    base = {(1e10, 100): 3.2, (1e10, 200): 3.0, (1e10, 400): 3.1, (1e11, 200): 2.9, (1e11, 400): 2.7, (1e11, 800): 2.8}
    for (c, n), s in spread.items():
        for rep, dev in enumerate((-s, 0.0, s)):   # sample sd of (−s, 0, s) is s
            rows.append(dict(flops=c, n=n, n_total=2 * n, loss=base[c, n] + dev, replicate=rep))
    return pd.DataFrame(rows)


def test_noisiest_points_are_the_largest_sd_with_their_seeds_sorted():
    top = seeds.noisiest_points(_points(), n=2, floor=0.01)
    assert list(top["n"]) == [800, 400]
    assert top["sd"].tolist() == pytest.approx([0.3, 0.1])
    assert top["sd / floor"].tolist() == pytest.approx([30.0, 10.0])
    assert top["seeds"][0] == "2.50, 2.80, 3.10"


def test_sd_by_side_takes_the_median_on_each_side_of_the_best_size():
    # best sizes: 200 at 1e10 (sd 0), 400 at 1e11 (sd 0); smaller: 100 (0.01), 200 (0.02); larger: 400 (0.1), 800 (0.3)
    t = seeds.sd_by_side({"k": _points()})
    assert t.loc["k", "best"] == pytest.approx(0.0)
    assert t.loc["k", "smaller"] == pytest.approx(0.015)
    assert t.loc["k", "larger"] == pytest.approx(0.2)


def test_grid_table_counts_sizes_and_the_widest_step():
    g = seeds.grid_table({"k": _points()}).loc["k"]
    assert (g["sizes"], g["N min"], g["N max"], g["all parameters, max"]) == (4, 100, 800, 1600)
    assert g["neighbours apart (max)"] == pytest.approx(2.0)


def _report(a=0.5, ci=(0.4, 0.6), seed_sd=0.02, median=0.01, fallback=0.2):
    return {"finished": 3, "planned": 4, "exponent": {"a": a, "ci": list(ci)}, "exponent_parabola": {"a": None},
            "exponent_envelope": {"a": 0.6, "ci": [0.3, 0.9]},
            "exponent_seed_bootstrap": {"a": a, "ci": [0.45, 0.55], "scatter": {"a": 0.49, "ci": [None, None]}},
            "replicates": {"seeds": 3, "points_with_replicates": 6, "seed_sd": seed_sd, "median_point_sd": median,
                           "noise_floor": 0.01, "noise_slope": 0.1, "parabola_sd": fallback}}


def test_exponent_table_shows_intervals_and_marks_what_is_missing():
    t = seeds.exponent_table({"kaplan": _report()})
    row = t.loc["kaplan"]
    assert row["runs"] == "3/4"
    assert row["spline optima"] == "0.50 [0.40, 0.60]"
    assert row["parabola, 5 sizes"] == "—"
    assert row["seeds + scatter, GLS"] == "0.49"   # an estimate without an interval prints alone
    assert seeds.has_exponent({"kaplan": _report()})
    assert not seeds.has_exponent({"kaplan": _report(a=None)})


def test_noise_table_gives_the_fallback_in_typical_sds():
    t = seeds.noise_table({"kaplan": _report(median=0.01, fallback=0.2), "one-seed": {"replicates": {"seed_sd": None}}})
    assert list(t.index) == ["kaplan"]    # a sweep without replicates has no row
    assert t.loc["kaplan", "fallback / median"] == pytest.approx(20.0)


def test_seed_exponent_table_pairs_each_seed_with_its_one_seed_analysis():
    measured = {"kaplan": [{"replicate": 0, "a": 0.5}, {"replicate": 1, "a": None, "reason": "edge"}]}
    fallback = {"kaplan": [{"replicate": 1, "a": 0.7}, {"replicate": 0, "a": 0.6}]}
    t = seeds.seed_exponent_table(measured, fallback)
    assert t.loc[("kaplan", 0)].tolist() == pytest.approx([0.5, 0.6])
    assert np.isnan(t.loc[("kaplan", 1), "a, measured noise"])
    assert t.loc[("kaplan", 1), "a, as a one-seed sweep"] == pytest.approx(0.7)


def test_difference_table_drops_estimators_without_an_interval_and_flags_exclusion():
    diffs = {"spline": {"difference": 0.15, "ci": [0.02, 0.28], "method": "welch_t", "df": 6.8,
                        "ci_min_df": [-0.02, 0.33], "assumption_holds": False},
             "envelope": {"difference": 0.25, "ci": [-0.09, 0.65], "method": "bootstrap_pairs"},
             "parabola": {"difference": None, "reason": "no optimum"},
             "block": {"difference": 0.15, "ci": [-0.16, 0.56], "method": "block_bootstrap", "assumption_holds": True}}
    t = seeds.difference_table(diffs)
    assert list(t.index) == ["spline, shapes resampled", "spline optima", "Approach 1"]   # the block interval first
    assert t.loc["spline, shapes resampled", "interval"] == "shapes resampled"
    assert t.loc["spline, shapes resampled", "independent optima"] == "yes"
    assert bool(t.loc["spline optima", "excludes 0"]) and not bool(t.loc["Approach 1", "excludes 0"])
    assert t.loc["spline optima", "smaller fit's df"] == "+0.15 [-0.02, +0.33]"
    assert t.loc["spline optima", "independent optima"] == "no"
