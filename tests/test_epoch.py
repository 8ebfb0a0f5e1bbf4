"""papers.epoch: the comparisons notebook 01 prints, on laws and runs with known answers."""

from types import SimpleNamespace

import numpy as np
import pytest
from scalinglab.fitting.chinchilla import approach3 as F
from scalinglab.fitting.chinchilla.law import ScalingLaw
from scalinglab.papers import epoch

TRUE = ScalingLaw(E=1.8, A=480.0, B=2100.0, alpha=0.35, beta=0.37)


def test_law_row_at_chinchilla_compute():
    # Chinchilla's own allocation, 70B parameters on 1.4T tokens, is 20 tokens per parameter at 5.88e23 FLOP:
    # n_opt and tokens_per_param must be the law's, and D = C / (6 N) ties them together.
    C = 5.88e23
    row = epoch.law_row(TRUE, C, suffix="_at_c")
    assert row["a"] == pytest.approx(0.37 / 0.72)
    assert row["n_opt_at_c"] == pytest.approx(TRUE.n_opt(C))
    assert row["tokens_per_param_at_c"] == pytest.approx(C / (6 * row["n_opt_at_c"] ** 2))
    assert {"E", "A", "B", "alpha", "beta"} <= set(row)


@pytest.fixture(scope="module")
def runs_and_fit():
    rng = np.random.default_rng(0)
    N = np.exp(rng.uniform(np.log(5e7), np.log(1e10), 200))
    D = np.exp(rng.uniform(np.log(1e9), np.log(5e11), 200))
    L = TRUE.loss(N, D) * np.exp(0.01 * rng.standard_normal(200))  # 1% noise in log loss
    return N, D, L, F.fit_arrays(N, D, L, n_boot=200, seed=0)


def test_consistency_accepts_the_truth_and_rejects_a_shifted_law(runs_and_fit):
    N, D, L, fit = runs_and_fit
    shifted = ScalingLaw(E=TRUE.E + 0.05, A=TRUE.A, B=TRUE.B, alpha=TRUE.alpha, beta=TRUE.beta)
    t = epoch.consistency({"fit": fit.scaling_law, "true": TRUE, "shifted": shifted}, fit, N, D, L)
    # The fit against itself: χ² exactly 0, p 1, and the lowest objective of all (it is the minimiser).
    assert t.loc["fit", "chi2"] == pytest.approx(0.0, abs=1e-12)
    assert t.loc["fit", "p"] == pytest.approx(1.0)
    assert t.loc["fit", "huber_objective"] <= t["huber_objective"].min() + 1e-12
    # The law that generated the runs is not rejected (a false rejection at p < 0.001 is that rare)...
    assert t.loc["true", "p"] > 1e-3
    assert abs(t.loc["true", "median_log_residual"]) < 0.005  # 1% noise: the median is within a fraction of it
    # ...while E + 0.05 predicts every loss 0.05 too high: log(1 + 0.05 / L) ≈ 0.015-0.02 at these losses.
    assert t.loc["shifted", "p"] < 1e-6
    assert 0.01 < t.loc["shifted", "median_log_residual"] < 0.03


def test_consistency_needs_a_bootstrap(runs_and_fit):
    N, D, L, _ = runs_and_fit
    with pytest.raises(ValueError, match="bootstrap"):
        epoch.consistency({"true": TRUE}, F.fit_arrays(N, D, L), N, D, L)


def test_envelope_line_fits_120_characters_and_says_what_was_dropped():
    fit = SimpleNamespace(exponent=0.5879, ci=(0.308, 0.9056), d_exponent=0.4121, n_sizes=3, status="converged",
                          level=0.95, n_boot=1000, n_boot_failed=342)
    line = epoch.envelope_line("Kaplan sweep, grid", fit)
    assert line.startswith("Kaplan sweep, grid ")
    assert "a = 0.588 (95% 0.308, 0.906)" in line and "b = 0.412" in line
    assert line.endswith("34% of resamples dropped")
    assert len(line) <= 120
    assert "dropped" not in epoch.envelope_line("x", SimpleNamespace(**{**vars(fit), "n_boot_failed": 0}))
    assert "status" not in line
    assert "status unidentified" in epoch.envelope_line("x", SimpleNamespace(**{**vars(fit), "status": "unidentified"}))


def test_p_text_prints_tiny_p_values_as_the_floor():
    assert epoch.p_text(0.98699) == "p = 0.99"
    assert epoch.p_text(2.8e-62) == "p < 1e-10" and epoch.p_text(5.7e-48) == "p < 1e-10"
    assert epoch.p_text(2e-10) == "p = 2e-10"   # above the floor: the value itself


def test_detectable_shift_has_the_power_it_claims():
    # A shift of detectable_shift(1) along one coordinate of a 5-dim standard normal is rejected by the 5%
    # χ²(5) test in 80% of draws. 40,000 draws give a Monte Carlo SE of 0.002, so ±0.01 is 5 SE; a shift
    # 20% smaller has power near 0.62, far outside the tolerance.
    from scipy import stats

    shift = epoch.detectable_shift(1.0)
    assert 3.4 < shift < 3.8                    # √λ with λ ≈ 12.8 for 5 df at 5% and 80% power
    rng = np.random.default_rng(0)
    z = rng.standard_normal((40_000, 5))
    z[:, 0] += shift
    power = np.mean((z ** 2).sum(axis=1) > stats.chi2.ppf(0.95, 5))
    assert power == pytest.approx(0.8, abs=0.01)
    assert epoch.detectable_shift(0.02) == pytest.approx(0.02 * shift)   # scales with the SE
