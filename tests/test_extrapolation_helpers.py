"""Notebook 04's helpers in the library: Gadre et al.'s fit against Hoffmann's on named training sets
(papers.gadre.compare_procedures), held-out errors by kind, and the subset study's allocation,
exclusion shares and flagged fits (fitting.studies.subsets)."""

import numpy as np
import pandas as pd
import pytest
from scalinglab.fitting.chinchilla import approach3 as F
from scalinglab.fitting.studies import subsets as S
from scalinglab.papers import gadre as O

TRUE = O.OvertrainingLaw(E=1.8, A=170.0, B=290.0, alpha=0.27)  # near their RedPajama fit, as test_overtraining


def table():
    """Four sizes, 10M to 400M, each at 5, 20, 80 and 320 tokens per parameter, plus one 1.4B target run."""
    N = np.append(np.repeat(np.geomspace(1e7, 4e8, 4), 4), 1.4e9)
    D = N * np.append(np.tile([5.0, 20.0, 80.0, 320.0], 4), 640.0)
    return pd.DataFrame({"N": N, "D": D, "loss": TRUE.loss(N, D)})


def test_compare_procedures_recovers_an_exact_tied_law_and_records_refusals():
    t = table()
    target = {"1.4B": (t["N"] > 1e9).to_numpy()}
    small = (t["N"] < 1e9).to_numpy()
    sets = {"all 16": small, "5 runs": small & (t["D"] / t["N"] == 20).to_numpy() | (np.arange(17) == 3)}
    rows = O.compare_procedures(t, sets, target, hoffmann={"tied": F.FitOptions(tied={"beta": "alpha"})},
                                n_boot=10, seed=0)
    assert [(r["training set"], r["fit"]) for r in rows] == [
        ("all 16", O.GADRE_FIT), ("all 16", "tied"), ("5 runs", O.GADRE_FIT), ("5 runs", "tied")]
    gadre16, tied16, gadre5, tied5 = rows
    # The data follow a tied law exactly: both procedures give it back, so the 1.4B run is predicted to
    # rounding (1e-4 % = 1e-6 relative; a wrong form or conversion misses by percent).
    for r in (gadre16, tied16):
        assert r["status"] == "converged" and abs(r["1.4B %"]) < 1e-4 and r["alpha"] == r["beta"]
    assert gadre16["alpha"] == pytest.approx(0.27, rel=1e-6)
    assert np.isnan(gadre16["1.4B 95%"]).all()  # their procedure has no bootstrap
    lo, hi = tied16["1.4B 95%"]
    assert lo <= tied16["1.4B %"] + 1e-6 <= hi + 2e-6
    # 5 runs: their fit takes them (4 parameters), Hoffmann's tied fit needs 8 and says so.
    assert gadre5["runs"] == 5 and gadre5["status"] in ("converged", "unidentified")
    assert tied5["status"] == "not fitted" and "at least 8 runs" in tied5["note"]


def test_compare_procedures_wants_one_run_per_target():
    t = table()
    with pytest.raises(Exception, match="one run"):
        O.compare_procedures(t, {"all": np.ones(17, bool)}, {"two": (t["N"] > 3e8).to_numpy()})


def test_errors_by_kind():
    N = np.array([1e8, 1e8, 4e8, 1.4e9, 6.9e9, 1.4e9])
    M = np.array([2.0, 32.0, 4.0, 1.0, 1.0, 32.0])
    err = np.array([-0.01, -0.2, -0.05, -0.013, 0.02, -0.19])
    out = O.errors_by_kind(N, M, err)
    assert out["over_trained"]["n"] == 4 and out["over_trained"]["all_below"] is True
    assert out["over_trained"]["mean_rel_error"] == pytest.approx((-0.01 - 0.2 - 0.05 - 0.19) / 4)
    assert out["large_at_m1"] == {"1.4B": pytest.approx(-0.013), "6.9B": pytest.approx(0.02)}
    # by size: 1e8 (two runs), 4e8 and 1.4e9 have over-trained runs; 6.9e9 and the 1.4e9 run at M = 1 do not count
    assert out["over_trained"]["sizes"] == 3 and out["over_trained"]["sizes_all_below"] == 3
    err[0] = 0.001  # one over-trained run above its actual loss: its size is no longer all below
    out = O.errors_by_kind(N, M, err)["over_trained"]
    assert out["all_below"] is False and out["sizes"] == 3 and out["sizes_all_below"] == 2


LAW = F.ScalingLaw(E=1.8, A=400.0, B=900.0, alpha=0.34, beta=0.30)


def test_allocation_is_n_opt_and_its_ratio():
    other = F.ScalingLaw(E=1.8, A=400.0, B=900.0, alpha=0.30, beta=0.30)
    C = 5.88e23
    out = S.allocation({"ref": LAW, "tied": other}, C, LAW.n_opt(C))
    assert out["ref"]["n_opt_ratio"] == pytest.approx(1.0)
    assert out["tied"]["n_opt"] == pytest.approx(float(other.n_opt(C)))
    assert out["tied"]["n_opt_ratio"] == pytest.approx(float(other.n_opt(C) / LAW.n_opt(C)))
    assert out["tied"]["a"] == pytest.approx(0.5) and out["ref"]["alpha"] == 0.34


def study(records):
    return S.SubsetFits(records=tuple(records), sizes=(12, 40), variants=("free", "tied"), n_draws=2, budget=1e23,
                        seed=0, n_boot=10, boot_draws=2, boot_sizes=(12, 40))


def test_excludes_and_flagged():
    rec = [{"variant": "free", "size": 12, "draw": 0, "status": "converged", "a_ci": (0.40, 0.60), "n_opt_ci": (1, 2)},
           {"variant": "free", "size": 12, "draw": 1, "status": "at_bound", "a_ci": (0.55, 0.70), "n_opt_ci": (1, 2)},
           {"variant": "free", "size": 40, "draw": 0, "status": "converged", "a_ci": (0.51, 0.60), "n_opt_ci": (1, 2)},
           {"variant": "free", "size": 40, "draw": 1, "status": "converged", "a_ci": (0.52, 0.58), "n_opt_ci": (1, 2)},
           {"variant": "tied", "size": 12, "draw": 0, "status": "refused", "reason": "too few"}]
    st = study(rec)
    # at 12 runs one interval of two excludes 0.5; at 40 both do
    assert S.excludes(st, 0.5) == {12: pytest.approx(0.5), 40: pytest.approx(1.0)}
    assert S.excludes(st, 0.56) == {12: pytest.approx(0.0), 40: pytest.approx(0.0)}
    assert [(r["size"], r["draw"]) for r in S.flagged(st)] == [(12, 1)]
