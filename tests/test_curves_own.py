"""Our schedule sweep read as curves, and the "one run, many points" pieces."""

import numpy as np
from conftest import ROOT
from scalinglab.curves import own_runs
from scalinglab.curves.data import own_curves

DB = ROOT / "data/sweeps/schedules/schedules.db"


def test_own_curves_rebuild_the_rates_the_runs_recorded():
    # own_curves raises if any run's rebuilt schedule differs from a recorded rate (rtol 1e-9)
    curves = own_curves(DB)
    assert len(curves) == 20
    assert {c.meta["schedule"] for c in curves} == {"constant", "cosine", "wsd", "step"}
    g = own_runs.groups(DB)
    assert all(c.at[0] > int(np.argmax(c.lrs)) + 1 for gg in g.values() for c in gg.values())


def test_wsd_branch_has_the_runs_warmup_and_peak_and_ends_at_the_floor():
    run = own_runs.groups(DB)[(64, 0)]["constant"]
    c = own_runs.wsd_curve(run, 0.5)
    assert len(c.lrs) == round(0.5 * len(run.lrs)) and c.at[-1] == len(c.lrs)
    assert np.isclose(c.lrs.max(), run.lrs.max()) and np.argmax(c.lrs) == np.argmax(run.lrs)
    # the last step starts one step before the end of a linear decay to 0.1·peak
    assert 0.1 * run.lrs.max() < c.lrs[-1] < 0.11 * run.lrs.max()


def test_separate_runs_at_one_tokens_per_parameter_cannot_identify_the_exponent():
    pts = [dict(n=n, d=20 * n, loss=3.0 - 0.2 * k) for k, n in enumerate((1e5, 2e5, 4e5))]
    assert own_runs.approach3_exponent(pts) is None
