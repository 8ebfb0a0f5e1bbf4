"""Scale parameters carry their uncertainty on the log scale, and a parameter the runs cannot pin is said to be."""

from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
from scalinglab.fitting.chinchilla import approach3
from scalinglab.fitting.chinchilla.law import ScalingLaw
from scalinglab.fitting.results import WEAK_SE_LOG

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "cpu_sweep_runs.csv"


def _fit(N, D, L, n_boot=200):
    res = approach3.fit_arrays(N, D, L)
    return replace(res, bootstrap=approach3.bootstrap(res, N, D, L, n_boot=n_boot, seed=0))


def test_narrow_grid_leaves_A_and_B_unpinned_but_not_a():
    runs = pd.read_csv(EXAMPLE)
    res = _fit(runs.N.to_numpy(float), runs.D.to_numpy(float), runs.loss.to_numpy(float))
    bs = res.bootstrap
    # 33 runs spanning one decade of N: A and B trade off against alpha and beta along a ridge, so their logs
    # spread by several units while a = beta/(alpha+beta) stays within ±0.1.
    assert {"A", "B"} <= set(res.weakly_identified)
    assert bs.se_log["A"] > WEAK_SE_LOG and bs.se["a"] < 0.1
    d = res.to_dict()
    assert set(d["weakly_identified"]) == set(res.weakly_identified)
    assert set(d["bootstrap"]["se_log"]) == {"E", "A", "B"}
    text = res.summary()
    assert "not pinned: " in text and " ln " in text


def test_wide_grid_pins_every_parameter():
    # A grid over three decades of N and D with 1% noise: every parameter is determined, nothing is flagged,
    # and the SE of ln A is the relative spread of A (checked against the replicates directly).
    rng = np.random.default_rng(1)
    law = ScalingLaw(1.7, 400.0, 1800.0, 0.34, 0.28)
    N = np.repeat(np.logspace(7, 10, 8), 8)
    D = np.tile(np.logspace(9, 12, 8), 8)
    L = law.loss(N, D) * np.exp(rng.normal(0, 0.01, N.size))
    res = _fit(N, D, L)
    assert res.weakly_identified == ()
    col = res.bootstrap.column("A")
    assert abs(res.bootstrap.se_log["A"] - np.std(np.log(col), ddof=1)) < 1e-12
    assert "not pinned" not in res.summary()
