"""The downstream chain on simulated ladders: known parameters recovered, intervals over runs that cover,
refusals, and loss-to-loss fits and translation."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scalinglab.downstream import loss_to_loss as T
from scalinglab.downstream.chain import check_accuracy, fit_chain, warn_if_outside
from scalinglab.downstream.intervals import bootstrap_by_run
from scalinglab.errors import UserError

TRUE1 = {"E": 0.5, "A": 40.0, "alpha": 0.25, "B": 90.0, "beta": 0.24}
TRUE2 = {"a": -0.7, "x0": 0.75, "k": 8.0, "b": 0.95}


def _loss(n, d):
    return TRUE1["E"] + TRUE1["A"] / n ** TRUE1["alpha"] + TRUE1["B"] / d ** TRUE1["beta"]


def _acc(loss):
    return TRUE2["a"] / (1 + np.exp(-TRUE2["k"] * (loss - TRUE2["x0"]))) + TRUE2["b"]


def _ladder(rng, noise=0.0005):
    """16 runs (4 sizes × 4 token multipliers), 12 checkpoints each: loss from TRUE1, accuracy from TRUE2."""
    rows = []
    for n in (2e8, 4e8, 8e8, 1.3e9):
        for m in (20, 40, 100, 200):
            for d in np.geomspace(0.3, 1.0, 12) * m * n:
                L = _loss(n, d) * (1 + noise * rng.standard_normal())
                rows.append({"run": f"{n:.0e}-{m}", "n": n, "d": d, "loss": L,
                             "acc": _acc(L) + noise * rng.standard_normal()})
    ev = pd.DataFrame(rows)
    return ev.groupby("run", sort=False).tail(1).reset_index(drop=True), ev


def test_chain_recovers_known_parameters():
    s1, s2 = _ladder(np.random.default_rng(0))
    fit = fit_chain(s1, s2, "loss", "acc", anchor=False)
    # 0.05% noise on 16 runs (E, A and alpha trade off: at 0.2% alpha moves by 0.04): exponents to within 0.03,
    # the sigmoid's centre to within 0.02 in loss
    assert abs(fit.step1.params["alpha"] - TRUE1["alpha"]) < 0.03
    assert abs(fit.step1.params["beta"] - TRUE1["beta"]) < 0.03
    assert abs(fit.step2.params["x0"] - TRUE2["x0"]) < 0.02
    n, d = 7e9, 4e12   # five times the largest run, far beyond its tokens
    assert abs(fit.predict(n, d)[0] - _acc(_loss(n, d))) < 0.01
    assert "step 1" in fit.summary() and fit.to_dict()["step1"]["params"]


def test_run_bootstrap_covers_where_checkpoint_bootstrap_does_not():
    """A run effect shared by its checkpoints: resampling runs covers the mean near nominal, resampling
    checkpoints (each its own 'run') treats 10 correlated rows as independent and covers far less."""
    rng = np.random.default_rng(1)
    hits = {"run": 0, "checkpoint": 0}
    reps = 60
    for r in range(reps):
        run_effect = np.repeat(rng.normal(0, 1.0, 12), 10)
        df = pd.DataFrame({"run": np.repeat(np.arange(12), 10).astype(str),
                           "y": run_effect + rng.normal(0, 0.3, 120)})
        for unit, frame in (("run", df), ("checkpoint", df.assign(run=np.arange(120).astype(str)))):
            draws = bootstrap_by_run([frame], lambda t: t["y"].mean(), 150, seed=r)
            lo, hi = np.quantile(draws, [0.025, 0.975])
            hits[unit] += lo <= 0.0 <= hi
    # 60 replicates: a binomial SD of ~3 points at 0.9; 12 clusters give a percentile interval near 0.88,
    # rows treated as independent about 0.4 (the design effect is ~10).
    assert hits["run"] / reps >= 0.8
    assert hits["checkpoint"] / reps <= 0.6


def test_refusals_and_extrapolation_warning():
    with pytest.raises(UserError, match=r"accuracy must lie in \[0, 1\].*row 2 has 73"):
        check_accuracy([0.5, 73.0], "runs.csv, column 'acc'")
    s1, s2 = _ladder(np.random.default_rng(2))
    with pytest.raises(UserError, match="no column 'arc_loss'"):
        fit_chain(s1, s2, "arc_loss", "acc")
    with pytest.raises(UserError, match="accuracy must lie"):
        fit_chain(s1, s2.assign(acc=s2["acc"] * 100), "loss", "acc")
    fit = fit_chain(s1, s2, "loss", "acc", anchor=False)
    with pytest.warns(UserWarning, match="below the ladder's lowest"):
        lines = warn_if_outside(fit, [2e8, 7e10], [4e9, 1e13], labels=["small", "big"])
    assert len(lines) == 1 and "big" in lines[0]


def test_loss_to_loss_recovers_and_translates():
    rng = np.random.default_rng(3)
    n = np.geomspace(2e7, 2e9, 40)
    d = 20 * n * rng.uniform(0.5, 2, 40)
    law = {"A": 3e7, "B": 5e8, "E": 1.9, "alpha": 0.4, "beta": 0.45}
    L0 = T._kaplan_e({"n": n, "d": d}, law)
    kappa, K, E1 = 1.1, 0.6, 0.85
    L1 = K * (L0 - law["E"]) ** kappa + E1
    fit = T.fit_loss_to_loss(L0, L1 * (1 + 1e-4 * rng.standard_normal(40)), law["E"], E1)
    assert abs(fit.kappa - kappa) < 0.01 and abs(fit.K - K) < 0.01
    # translating the source law through the exact relation gives the target's losses (an identity)
    moved = T.translate(law, T.LossToLoss("a", "b", kappa, K, law["E"], E1, 1.0, 40))
    assert np.allclose(T._kaplan_e({"n": n, "d": d}, moved), L1, rtol=1e-9)
    point, lo, hi = T.extrapolation_interval(fit, float(L0.min()) - 0.05, n_boot=100)
    assert lo < point < hi
