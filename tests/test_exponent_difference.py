"""Differences of exponents between independent sweeps: Welch's t for WLS fits, all pairs for bootstraps."""

import numpy as np
import pandas as pd
import pytest
from scalinglab import sweeps
from scalinglab.fitting.frontier import isoflop
from scalinglab.harness import sweeps as notebook_sweeps
from scalinglab.harness.workbook import project_root

rng = np.random.default_rng(0)


def _optima(n_budgets, a, sd):
    c = np.geomspace(1e10, 1e12, n_budgets)
    log_n = np.log(1e3) + a * np.log(c / 1e10) + sd * rng.standard_normal(n_budgets)
    return pd.DataFrame(dict(flops=c, n_opt=np.exp(log_n), edge=False))


def test_welch_interval_covers_the_true_difference_at_its_level():
    hits = normal_hits = 0
    reps = 400
    for _ in range(reps):
        # Six and five budgets, as in the committed CPU sweeps: 4 and 3 residual degrees of freedom.
        f1, f2 = isoflop.fit_exponent(_optima(6, 0.6, 0.15)), isoflop.fit_exponent(_optima(5, 0.4, 0.08))
        d = isoflop.exponent_difference(f1, f2)
        assert d.difference == pytest.approx(f1.exponent - f2.exponent) and 3 <= d.df <= 7
        hits += d.ci[0] <= 0.2 <= d.ci[1]
        normal_hits += abs(d.difference - 0.2) <= 1.96 * np.hypot(f1.se, f2.se)
    # 400 replications: the binomial sd of a 95% coverage is 0.011, so [0.91, 0.98] is ±3 sd.
    assert 0.91 <= hits / reps <= 0.98
    # At these degrees of freedom a normal quantile under-covers (≈ 0.89), which is why t is used.
    assert normal_hits / reps < 0.92


def test_one_fit_without_an_interval_gives_no_interval():
    f1 = isoflop.fit_exponent(_optima(5, 0.5, 0.1))
    two = isoflop.fit_exponent(_optima(2, 0.5, 0.1))   # two budgets: an exact line, no residual variance
    d = isoflop.exponent_difference(f1, two)
    assert np.isfinite(d.difference) and np.isnan(d.ci[0]) and np.isnan(d.ci[1])


def test_bootstrap_difference_of_independent_resamples():
    a = rng.normal(0.6, 0.1, 800)
    b = rng.normal(0.4, 0.05, 500)
    d = isoflop.bootstrap_difference(a, b, 0.2)
    # Independent normals: the difference is N(0.2, 0.1² + 0.05²), so ±1.96·0.112, to Monte Carlo error.
    half = 1.96 * np.hypot(0.1, 0.05)
    assert d.ci[0] == pytest.approx(0.2 - half, abs=0.015) and d.ci[1] == pytest.approx(0.2 + half, abs=0.015)
    # A skewed bootstrap keeps its skew: an exponential tail to the right stays on the right.
    skew = isoflop.bootstrap_difference(0.5 + rng.exponential(0.1, 800), np.full(10, 0.4), 0.1)
    assert skew.ci[1] - 0.1 > 2 * (0.1 - skew.ci[0])


def test_committed_sweeps_differences_are_of_the_reported_exponents():
    folder = project_root() / "data" / "sweeps"
    if not (folder / "kaplan.db").is_file():
        pytest.skip("no committed sweeps")
    diffs = sweeps.exponent_differences(folder / "kaplan.db", folder / "hoffmann.db")
    reports = {p: sweeps.report(folder / f"{p}.db").to_dict() for p in notebook_sweeps.WORKBOOK_PRESETS}
    for key, field in (("spline", "exponent"), ("parabola", "exponent_parabola"), ("envelope", "exponent_envelope"),
                       ("seeds", "exponent_seed_bootstrap")):
        d = diffs[key]
        # report rounds a to 4 decimals
        want = reports["kaplan"][field]["a"] - reports["hoffmann"][field]["a"]
        assert d["difference"] == pytest.approx(want, abs=1e-4)
        lo, hi = d["ci"]
        assert lo < d["difference"] < hi
        # Independent sweeps: the difference is less certain than the better-determined exponent. (Not
        # necessarily than the other: Welch's df can exceed that fit's own, so its t quantile is smaller.)
        width = min(r[field]["ci"][1] - r[field]["ci"][0] for r in reports.values())
        assert hi - lo > width


def test_budget_sharing_counts_runs_read_at_several_budgets(tmp_path):
    # A Kaplan-style table (one run per size, read at every budget it passes) and a Hoffmann-style one.
    kaplan = pd.DataFrame({"run_id": ["s1", "s2", "s1", "s2", "s3"], "flops": [1e10, 1e10, 1e11, 1e11, 1e11],
                           "n": 1.0, "loss": 1.0})
    hoffmann = kaplan.assign(run_id=[f"r{i}" for i in range(5)])
    for name, table in (("kaplan", kaplan), ("hoffmann", hoffmann)):
        table.to_csv(tmp_path / f"{name}.csv", index=False)
    assert sweeps.budget_sharing(tmp_path / "kaplan.csv") == dict(runs=3, budgets=2, shared_runs=2,
                                                                 independent_budgets=False)
    assert sweeps.budget_sharing(tmp_path / "hoffmann.csv")["independent_budgets"]


def test_committed_sweeps_say_which_intervals_assume_independent_budgets():
    folder = project_root() / "data" / "sweeps"
    if not (folder / "kaplan.db").is_file():
        pytest.skip("no committed sweeps")
    # Every run of the Kaplan sweep gives a point at several budgets; no Hoffmann run does.
    share = {p: sweeps.budget_sharing(folder / f"{p}.db") for p in notebook_sweeps.WORKBOOK_PRESETS}
    assert share["kaplan"]["shared_runs"] == share["kaplan"]["runs"] > 0
    assert share["hoffmann"]["shared_runs"] == 0 and share["hoffmann"]["independent_budgets"]
    diffs = sweeps.exponent_differences(folder / "kaplan.db", folder / "hoffmann.db")
    # The WLS-based intervals assume independent optima, which the Kaplan sweep breaks; Approach 1
    # resamples whole runs, which carries the sharing.
    for key in ("spline", "parabola"):
        assert diffs[key]["assumes_independent_budgets"] and not diffs[key]["assumption_holds"]
        assert diffs[key]["shared_runs"] == {"kaplan": share["kaplan"]["shared_runs"], "hoffmann": 0}
    assert diffs["envelope"]["assumption_holds"] and diffs["seeds"]["assumption_holds"]
    # shapes resampled whole: the same spline estimate of the seed means (to the second decimal: the block fit
    # takes unweighted optima), an interval that carries the shared runs and so is wider than the Welch one
    block = diffs["block"]
    assert block["assumption_holds"] and block["difference"] == pytest.approx(diffs["spline"]["difference"], abs=0.01)
    assert block["ci"][1] - block["ci"][0] > diffs["spline"]["ci"][1] - diffs["spline"]["ci"][0]
    assert set(block["by_sweep"]) == {"kaplan", "hoffmann"} and block["n_kept"] > 0.9 * block["n_boot"]
    # seeds + scatter: the two GLS fits' difference, wider than seed noise alone; its scatter term is
    # independent across budgets, so the Kaplan sweep's shared runs break it like the WLS entries
    both, seeds_only = diffs["seeds_scatter"], diffs["seeds"]
    assert not both["assumption_holds"] and both["method"] == "welch_t"
    assert both["ci"][1] - both["ci"][0] > seeds_only["ci"][1] - seeds_only["ci"][0]
    for key in ("spline", "parabola", "seeds_scatter"):  # the smaller fit's df: a wider interval, same centre
        d = diffs[key]
        assert d["ci_min_df"][0] < d["ci"][0] and d["ci_min_df"][1] > d["ci"][1]
        assert np.mean(d["ci_min_df"]) == pytest.approx(d["difference"])
    assert sweeps.report(folder / "kaplan.db").budget_sharing == share["kaplan"]
