"""The calibration core: intervals calibrated on units left out reach their nominal coverage on designs where the
truth is known, and the same procedure with each point as its own unit (the naive one) does not."""

import numpy as np
import pytest
from scalinglab.errors import UserError
from scalinglab.fitting.prediction.calibration import (
    UnitCalibration,
    UnitResiduals,
    calibrate,
    coverage,
    out_of_unit_residuals,
    variance_components,
)


def _design(rng, k, m, sigma_unit, sigma_point):
    """k + 1 units at x = 1..k+1 (m points each) of a power law in x with a shared misfit per unit; the last
    unit is the new one the interval must cover."""
    x = np.repeat(np.arange(1, k + 2, dtype=float), m)
    unit = np.repeat(np.arange(k + 1), m)
    y = np.exp(1.0 - 0.3 * np.log(x) + rng.normal(0, sigma_unit, k + 1)[unit]
               + rng.normal(0, sigma_point, len(x)))
    return x, y, unit


def _coverage(scheme, naive, *, reps=400, k=6, m=3, sigma_unit=0.05, sigma_point=0.01, new="last", seed=0):
    rng = np.random.default_rng(seed)
    held = []
    for _ in range(reps):
        x, y, unit = _design(rng, k, m, sigma_unit, sigma_point)
        new_unit = k if new == "last" else k // 2
        fit = unit != new_unit
        X = np.column_stack([np.ones(fit.sum()), np.log(x[fit])])
        ly = np.log(y[fit])

        def fit_predict(train, test):
            beta, *_ = np.linalg.lstsq(X[train], ly[train], rcond=None)
            return np.exp(X[test] @ beta)

        labels = np.arange(fit.sum()) if naive else unit[fit]
        cal = calibrate(y[fit], labels, fit_predict, scheme=scheme, order=x[fit])
        beta, *_ = np.linalg.lstsq(X, ly, rcond=None)
        pred = np.exp(np.column_stack([np.ones((~fit).sum()), np.log(x[~fit])]) @ beta)
        lo, hi = cal.interval(pred)
        held.append(coverage(y[~fit], lo, hi, unit[~fit]).coverage)
    return float(np.mean(held))


def test_leave_one_unit_out_reaches_nominal_and_the_naive_unit_does_not():
    # 400 replicates: the coverage's standard error is about 0.011, so [0.92, 0.98] is a 3-SE band around 0.95;
    # the naive interval (each point its own unit) sees only the point noise and lands near 0.82 here.
    # The new unit sits inside the fitted range: leave-one-out is the scheme for exchangeable units.
    right = _coverage("leave-one-out", naive=False, new="middle")
    naive = _coverage("leave-one-out", naive=True, new="middle")
    assert 0.92 <= right <= 0.98, right
    assert naive < 0.90, naive


def test_forward_scheme_covers_one_step_beyond_the_fitted_units():
    # The new unit lies one step beyond the fitted ones; forward residuals are each one step out from fewer
    # units, so the interval may be conservative but must not undercover.
    cov = _coverage("forward", naive=False)
    assert 0.92 <= cov <= 0.995, cov


def test_one_point_units_put_all_spread_between_units():
    rng = np.random.default_rng(1)
    r = rng.normal(0.1, 0.2, 50)
    mu, s_u2, s_e2, k = variance_components(r, np.arange(50))
    assert k == 50 and s_e2 == 0.0
    assert mu == pytest.approx(r.mean()) and s_u2 == pytest.approx(r.var(ddof=1))


def test_variance_components_recover_the_planted_spread():
    rng = np.random.default_rng(2)
    unit = np.repeat(np.arange(400), 5)
    r = 0.3 + rng.normal(0, 0.2, 400)[unit] + rng.normal(0, 0.05, unit.size)
    mu, s_u2, s_e2, _ = variance_components(r, unit)
    # 400 units: the SE of sigma_u is about 0.2/sqrt(800) = 0.007; of the mean about 0.01
    assert np.sqrt(s_u2) == pytest.approx(0.2, abs=0.025)
    assert np.sqrt(s_e2) == pytest.approx(0.05, abs=0.005)
    assert mu == pytest.approx(0.3, abs=0.04)


def test_fewer_than_two_units_give_no_interval_and_say_why():
    y = np.array([1.0, 1.1, 0.9])
    cal = calibrate(y, ["a", "b", "b"], lambda tr, te: np.ones(te.sum()), scheme="forward", order=[1, 2, 2],
                    min_train_units=1)
    assert not cal.ok and "needs at least 2" in cal.reason
    lo, hi = cal.interval([1.0, 2.0])
    assert np.isnan(lo).all() and np.isnan(hi).all()


def test_a_unit_whose_refit_fails_is_left_out_and_counted():
    y = np.exp(np.arange(8.0) / 10)
    units = np.repeat(list("abcd"), 2)

    def fit_predict(train, test):
        if not train[0]:
            raise UserError("no fit without a")
        return np.exp(np.full(test.sum(), 0.3))

    res = out_of_unit_residuals(y, units, fit_predict)
    assert res.failed == ("a",) and res.n_units == 3


def test_linear_and_logit_spaces_keep_bounds_where_they_belong():
    res = out_of_unit_residuals(np.array([0.5, 0.6, 0.7, 0.55]), ["a", "b", "c", "d"],
                                lambda tr, te: np.full(te.sum(), 0.6), space="logit")
    lo, hi = UnitCalibration.from_residuals(res).interval([0.99, 0.01])
    assert np.all((lo > 0) & (hi < 1))
    res = out_of_unit_residuals(np.array([2.0, 3.0, 2.5]), ["a", "b", "c"],
                                lambda tr, te: np.full(te.sum(), 2.5), space="log")
    lo, _ = UnitCalibration.from_residuals(res).interval([0.01])
    assert lo[0] > 0  # a log-space interval never reaches a negative loss


def test_coverage_counts_each_unit_once():
    cov = coverage([1, 1, 1, 5], [0, 0, 0, 0], [2, 2, 2, 2], ["a", "a", "a", "b"])
    assert cov.n_units == 2 and cov.units_inside == 1.0 and cov.coverage == 0.5
    assert cov.points_inside == 3 and cov.n_points == 4


def test_refusals_are_one_line_user_errors():
    with pytest.raises(UserError, match="scheme"):
        out_of_unit_residuals([1.0], ["a"], lambda a, b: b, scheme="sideways")
    with pytest.raises(UserError, match="needs a scale"):
        out_of_unit_residuals([1.0, 2.0], ["a", "b"], lambda a, b: b, scheme="forward")
    with pytest.raises(UserError, match="one label per value"):
        out_of_unit_residuals([1.0, 2.0], ["a"], lambda a, b: b)
    res = out_of_unit_residuals([1.0, 2.0, 3.0], list("abc"), lambda a, b: np.full(b.sum(), 2.0))
    with pytest.raises(UserError, match="level"):
        UnitCalibration.from_residuals(res, level=2)


def _strata(rng, sigma_units, k, m=4, sigma_point=0.01):
    """One draw of strata (model sizes, say), each with its own bias, k units of m residuals and the spread of
    sigma_units[s] between its units; and one point of a new unit per stratum."""
    sets, new = {}, {}
    for s, su in enumerate(sigma_units):
        mu = rng.normal(0, 0.1)
        u = np.repeat(np.arange(k), m)
        r = mu + rng.normal(0, su, k)[u] + rng.normal(0, sigma_point, k * m)
        sets[s] = UnitResiduals(r, u.astype(object), "leave-one-out", "linear", "schedule")
        new[s] = mu + rng.normal(0, su) + rng.normal(0, sigma_point)
    return sets, new


def _pooled_coverage(sigma_units, k, reps=2000, seed=0):
    """Per stratum: coverage of the new unit's point by its own calibration, by the pooled one (whatever the
    strata's spreads say) and by the moderated pooling; and the median half-width of each."""
    rng = np.random.default_rng(seed)
    names = ("own", "pooled", "moderated")
    inside = {n: np.zeros((reps, len(sigma_units))) for n in names}
    width = {n: [] for n in names}
    for i in range(reps):
        sets, new = _strata(rng, sigma_units, k)
        pooled, moderated = UnitCalibration.pooled(sets), UnitCalibration.pooled(sets, moderate=True)
        for s in sets:
            for name, cal in zip(names, (UnitCalibration.from_residuals(sets[s]), pooled[s], moderated[s])):
                lo, hi = cal.interval(np.zeros(1))
                inside[name][i, s] = lo[0] <= new[s] <= hi[0]
                width[name].append(cal.half_width)
    return ({k: v.mean(axis=0) for k, v in inside.items()}, {k: float(np.median(v)) for k, v in width.items()})


def test_spreads_pooled_over_strata_keep_nominal_coverage_with_a_narrower_interval():
    # Three strata of three units, one common spread: each stratum's own interval (t on 2 df) and the pooled one
    # (t on 6 df) both reach nominal; the pooled one is narrower (about 0.64 of the width here). 6,000 checks: the
    # coverage's SE is about 0.003, so [0.935, 0.965] is a 5-SE band.
    cov, width = _pooled_coverage((0.05, 0.05, 0.05), k=3)
    assert 0.935 <= cov["own"].mean() <= 0.975, cov
    assert 0.935 <= cov["pooled"].mean() <= 0.965, cov
    assert width["pooled"] < 0.8 * width["own"], width
    cal = UnitCalibration.pooled(_strata(np.random.default_rng(5), (0.05,) * 3, 3)[0])
    assert all(c.df == 6 and c.pooled_over == ("0", "1", "2") for c in cal.values())
    assert cal[0].to_dict()["spreads_pooled_over"] == ["0", "1", "2"] and "pooled over 0, 1, 2" in cal[0].summary()


def test_with_two_units_a_stratum_alone_is_uselessly_wide_and_pooling_is_not():
    # Two units: t on 1 df (12.7) makes each stratum's interval cover about 99% at several times the width;
    # pooled over three strata (3 df) it is nominal.
    cov, width = _pooled_coverage((0.05, 0.05, 0.05), k=2)
    assert cov["own"].mean() > 0.975, cov
    assert 0.935 <= cov["pooled"].mean() <= 0.965, cov
    assert width["pooled"] < 0.5 * width["own"], width


def test_pooling_strata_whose_spreads_differ_undercovers_the_widest_and_moderating_recovers_most():
    # The pooled interval assumes one spread: where the strata's differ (0.01, 0.05, 0.15) it falls well below
    # nominal on the widest (about 0.76 here) while each stratum's own stays near nominal on it. Moderated, the
    # spreads are shrunk toward the common one only as far as their disagreement allows: about 0.87 on the widest
    # with three units per stratum, about 0.93 with six, still narrower than the own intervals.
    cov, width = _pooled_coverage((0.01, 0.05, 0.15), k=3)
    assert cov["pooled"][2] < 0.8 and cov["own"][2] > 0.93, cov
    assert cov["moderated"][2] > 0.85 and cov["moderated"][2] > cov["pooled"][2] + 0.08, cov
    assert width["moderated"] < width["own"], width
    cov, _ = _pooled_coverage((0.01, 0.05, 0.15), k=6, reps=1000)
    assert cov["pooled"][2] < 0.8 and cov["moderated"][2] > 0.92, cov


def test_moderating_agreeing_spreads_is_pooling_them():
    # Where the strata's spreads are one, moderation mostly pools outright (prior df infinite) and the coverage
    # stays near nominal over 6,000 checks (it pays a little for the times chance makes them look different).
    cov, width = _pooled_coverage((0.05, 0.05, 0.05), k=3)
    assert 0.93 <= cov["moderated"].mean() <= 0.965, cov
    assert width["moderated"] < 0.8 * width["own"], width
    rng = np.random.default_rng(5)
    agree = sum(np.isinf(UnitCalibration.pooled(_strata(rng, (0.05,) * 3, 3)[0], moderate=True)[0].prior_df)
                for _ in range(200))
    assert agree > 100, agree
    differ = UnitCalibration.pooled(_strata(np.random.default_rng(1), (0.005, 0.05, 0.3), 6)[0], moderate=True)
    assert all(np.isfinite(c.prior_df) and 5 < c.df <= 15 for c in differ.values())
    assert "moderated" in differ[0].summary() and differ[0].to_dict()["prior_df"] == differ[0].prior_df


def test_a_pooled_stratum_needs_a_unit_and_the_strata_a_degree_of_freedom():
    one = UnitResiduals(np.array([0.1, 0.12]), np.array(["a", "a"], dtype=object), "leave-one-out", "log", "size")
    alone = UnitCalibration.pooled({"25M": one, "100M": one})
    assert not alone["25M"].ok and "0 degrees of freedom pooled over 2 strata" in alone["25M"].reason
    lo, hi = alone["25M"].interval(np.array([3.0]))
    assert np.isnan(lo).all() and np.isnan(hi).all()
    two = UnitResiduals(np.array([0.1, 0.2]), np.array(["a", "b"], dtype=object), "leave-one-out", "log", "size")
    mixed = UnitCalibration.pooled({"25M": one, "100M": two})
    assert mixed["25M"].ok and mixed["25M"].df == 1 and mixed["25M"].mu == pytest.approx(0.11)
    with pytest.raises(UserError, match="strictly between 0 and 1"):
        UnitCalibration.pooled({"25M": two}, level=1.5)


def test_a_fractional_df_takes_the_exact_t_quantile():
    from scalinglab.fitting.prediction.calibration import t_interval_quantile
    from scipy.stats import t

    for df in (1.0, 1.3, 2.5, 4.7, 6.0, 10.2):
        assert t_interval_quantile(0.975, df) == pytest.approx(t.ppf(0.975, df), rel=1e-9), df
