"""The notebooks' table helpers (fitting.studies.tables) and the interval helpers on held-out predictions:
known inputs, known text; blanks where a value does not exist."""

import numpy as np
import pandas as pd
import pytest
from scalinglab.fitting.chinchilla import approach3 as F
from scalinglab.fitting.prediction.held_out import Predictions
from scalinglab.fitting.studies import holdout as H
from scalinglab.fitting.studies import tables as T

NAN = float("nan")


def preds(lower=None, upper=None):
    N, D = np.array([1e8, 1e9]), np.array([2e9, 8e10])  # M = 1 and 4 at 20 tokens per parameter
    actual, predicted = np.array([3.0, 2.0]), np.array([2.7, 2.1])
    lower = np.full(2, NAN) if lower is None else np.asarray(lower, float)
    upper = np.full(2, NAN) if upper is None else np.asarray(upper, float)
    return Predictions(rows=np.array([5, 9]), actual=actual, predicted=predicted, lower=lower, upper=upper,
                       level=0.95, inputs={"n": N, "d": D})


def test_interval_text_and_blanks():
    assert T.interval_text((-0.25, 0.125), "+.1f", scale=100) == "[-25.0, +12.5]"
    assert T.interval_text([0.41, 0.6], ".2f") == "[0.41, 0.60]"
    for missing in (None, (NAN, 1.0), (0.1, float("inf")), ()):
        assert T.interval_text(missing) == ""
    assert T.formatted([1.25, NAN, None, "x", 3], ".1f") == ["1.2", "", "", "", "3.0"]


def test_interval_helpers_on_predictions():
    p = preds(lower=[2.4, 1.8], upper=[3.3, 2.5])
    lo, hi = p.rel_error_bounds()
    # 2.4/3 - 1 = -0.2, 3.3/3 - 1 = +0.1; 1.8/2 - 1 = -0.1, 2.5/2 - 1 = +0.25
    assert lo == pytest.approx([-0.2, -0.1]) and hi == pytest.approx([0.1, 0.25])
    # widths (3.3-2.4)/2.7 = 1/3 and (2.5-1.8)/2.1 = 1/3: the median is 1/3
    assert p.median_relative_width() == pytest.approx(1 / 3)
    assert np.isnan(preds().median_relative_width()) and np.isnan(preds().rel_error_bounds()[0]).all()


def test_heldout_frame():
    f = T.heldout_frame(preds(lower=[2.4, 1.8], upper=[3.3, 2.5]))
    assert list(f.index) == [5, 9] and f.index.name == "row"
    assert f["M"].tolist() == pytest.approx([1.0, 4.0])
    assert f["rel_error"].tolist() == pytest.approx([-0.1, 0.05])
    assert f["upper"].tolist() == [3.3, 2.5]
    assert T.heldout_frame(preds(), tokens_per_param=1.0)["M"].tolist() == pytest.approx([20.0, 80.0])


LAW = F.ScalingLaw(E=1.8, A=400.0, B=900.0, alpha=0.34, beta=0.30)


def runs():
    """Five sizes × four token multipliers on a known law, no noise; the largest two held out below."""
    N = np.repeat(np.geomspace(3e7, 3e9, 5), 4)
    D = N * np.tile([5.0, 10.0, 20.0, 40.0], 5)
    return pd.DataFrame({"N": N, "D": D, "loss": LAW.loss(N, D)})


def test_holdout_row_and_training_set_row_on_an_exact_law():
    t = runs()
    res = H.holdout(t, "N>1e9", n_boot=20, seed=0)
    row = T.holdout_row(res)
    # Exact data: the fit recovers the law, so every held-out error is rounding (1e-4 %, i.e. 1e-6, is far above the
    # solver's tolerance on noise-free runs and far below any real misfit).
    assert row["runs"] == 16 and row["held out"] == 4
    assert row["alpha"] == pytest.approx(0.34, rel=1e-4) and row["a"] == pytest.approx(0.30 / 0.64, rel=1e-4)  # a = beta/(alpha+beta)
    assert abs(row["max %"]) < 1e-4 and abs(row["mean signed %"]) < 1e-4

    big = H.training_sets(t, {"small": "N<1e9"}, "N>1e9", n_boot=20, seed=0)["small"]
    r = T.training_set_row(big, t, focus=big.heldout.D == big.heldout.D.max(), focus_label="3B")
    train = t.loc[big.train_rows]
    assert r["runs"] == 16 and r["compute"] == pytest.approx(float((6 * train["N"] * train["D"]).sum()))
    assert r["target runs"] == 4 and abs(r["3B err %"]) < 1e-4
    lo, hi = r["3B err 95%"]
    assert lo <= r["3B err %"] + 1e-6 and r["3B err %"] - 1e-6 <= hi  # exact data: every replicate agrees
    assert len(r["a 95%"]) == 2 and r["replicates"] <= 20
    with pytest.raises(ValueError, match="one held-out run, not 4"):  # the default, the largest N: 4 runs here
        T.training_set_row(big, t)


def summary_rows():
    base = dict(draws=10, not_converged=0)
    return [
        {**base, "variant": "free", "size": 8, "refused": 10},
        {**base, "variant": "free", "size": 12, "refused": 0, "not_converged": 1, "a_median": 0.512, "a_lo": 0.4,
         "a_hi": 0.6, "a_rmse": 0.1, "n_opt_ratio_median": 0.95, "n_opt_ratio_lo": 0.42, "n_opt_ratio_hi": 2.58,
         "ln_n_opt_bias": 0.04, "ln_n_opt_rmse": 1.0, "n_opt_within_2x": 0.48, "boot_fits": 5, "a_covered": 1.0,
         "n_opt_covered": 0.8, "n_opt_ci_span": 280.49},
    ]


def test_subset_table_spread_and_coverage():
    spread = T.subset_table(summary_rows())
    assert list(spread.index) == [("free", 8), ("free", 12)]
    refused, fitted = spread.iloc[0], spread.iloc[1]
    assert refused["fits"] == 0 and refused["a"] == "" and refused["N 16-84%"] == ""
    assert fitted["fits"] == 10 and fitted["flagged"] == 1
    assert (fitted["a"], fitted["a 16-84%"], fitted["N 16-84%"]) == ("0.51", "[0.40, 0.60]", "[0.42, 2.58]")
    assert (fitted["ln N bias"], fitted["within 2x"]) == ("+0.04", "48%")
    cov = T.subset_table(pd.DataFrame(summary_rows()).set_index(["variant", "size"]), "coverage")
    assert list(cov.index) == [("free", 12)]  # only bootstrapped sizes
    assert cov.iloc[0].tolist() == ["5", "100%", "80%", "280.5x"]
    with pytest.raises(ValueError):
        T.subset_table(summary_rows(), "both")
