"""Notebook 02's helpers for Kaplan's law and the counting-shift tables (scalinglab.papers.law_constants, .pearce_song)."""

import numpy as np
import pandas as pd
import pytest
from scalinglab.papers import law_constants as laws
from scalinglab.papers import pearce_song


def test_finite_data_loss_never_falls_below_its_own_infinite_data_limit():
    n = np.geomspace(1e6, 1e11, 50)
    limit = laws.KAPLAN.loss_n_joint(n)
    for d in (1e9, 1e10, 1e11, 1e14):
        assert np.all(laws.KAPLAN.loss(n, d) > limit)
    assert laws.KAPLAN.loss(n, np.inf) == pytest.approx(limit)
    # Eq. 1.1's separate fit has the larger N_c (8.8e13 against 6.4e13): at equal α_N it lies above the joint limit
    # by the factor (8.8/6.4)^0.076, which is why drawing it beside Eq. 1.5 made L(N, D) look lower than L(N).
    assert laws.KAPLAN.loss_n(n) / limit == pytest.approx((8.8 / 6.4) ** 0.076)


def _shift(total, kaplan, ci=(0.0, 1.0), floor=(np.nan, np.nan), status="ok"):
    return pearce_song.CountingShift(total=total, total_ci=ci, kaplan=kaplan, kaplan_ci=ci, shift=kaplan - total,
                                     shift_ci=(kaplan - total - 0.01, kaplan - total + 0.02), status=status,
                                     floor_share=floor)


def test_format_ci_signs_and_rounds():
    assert pearce_song.format_ci(0.1234, (0.1, 0.2)) == "0.12 [0.10, 0.20]"
    assert pearce_song.format_ci(-0.05, (-0.1, 0.02), places=3, sign=True) == "-0.050 [-0.100, +0.020]"


def test_shift_table_rows_follow_the_keys_with_simulated_and_gap_columns():
    measured = {("C4", "Kaplan"): _shift(0.5, 0.75, floor=(0.0, 0.25)), ("C4", "standard"): _shift(0.5, 0.53)}
    simulated = {k: _shift(0.5, 0.68) for k in measured}
    gaps = {k: pearce_song.ShiftDifference(difference=v.shift - 0.18, ci=(-0.1, 0.1), n_paired=10)
            for k, v in measured.items()}
    t = pearce_song.shift_table(measured, simulated, gaps, index=("corpus", "counting"))
    assert t.index.names == ["corpus", "counting"]
    assert t.loc[("C4", "Kaplan"), "shift"] == "+0.25 [+0.24, +0.27]"
    assert t.loc[("C4", "Kaplan"), "simulated shift"] == "+0.18 [+0.17, +0.20]"
    assert t.loc[("C4", "Kaplan"), "measured − sim."] == "+0.07 [-0.10, +0.10]"
    assert t.loc[("C4", "Kaplan"), "detects"] == "0.14"   # 0.71 × the gap interval's width 0.2
    assert t.loc[("C4", "Kaplan"), "E = 0"] == "25%"
    assert pd.isna(t.loc[("C4", "standard"), "E = 0"])   # no floor share recorded: no number
    assert "simulated shift" not in pearce_song.shift_table(measured).columns


def test_e_profile_table_measures_a_from_the_total_fit_and_the_objective_from_the_lowest():
    p = pd.DataFrame(dict(E=[0.0, 1.0, 0.3], held=[True, True, False], a=[0.8, 0.7, 0.78],
                          objective=[2.0, 2.2, 2.0]))
    t = pearce_song.e_profile_table({"C4": p}, {"C4": 0.5})
    assert list(t.index) == ["0.0", "1.0", "free"]
    assert t.loc["1.0", ("C4", "a (shift)")] == "0.70 (+0.20)"
    assert t.loc["1.0", ("C4", "objective")] == "+10%"


def test_shift_table_without_exponents_and_the_summaries_keep_their_keys():
    s = _shift(0.5, 0.6)
    assert list(pearce_song.shift_table({"hot": s}, exponents=False).columns) == ["shift", "status"]
    out = pearce_song.shift_summary(s)
    assert out["shift"] == pytest.approx(0.1) and out["shift_ci"] == pytest.approx([0.09, 0.12])
    assert "kaplan_e_held" not in out   # only row-resampled (Approach 3) shifts carry E
    g = pearce_song.gap_summary(pearce_song.ShiftDifference(difference=0.1, ci=(0.0, 0.2), n_paired=5))
    # a 95% interval 0.2 wide detects a gap of (1.96 + 0.84)/(2·1.96) × 0.2 = 0.143 at 80% power
    assert g == {"difference": 0.1, "ci": [0.0, 0.2], "n_paired": 5, "width": 0.2,
                 "detectable": pytest.approx(0.1429, abs=1e-4)}
