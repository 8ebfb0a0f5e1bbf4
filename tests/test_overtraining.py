"""Gadre et al.'s tied-exponent law: recovered from its own data, refused on bad input, and their
published fit reproduced from the released runs (which the M ≤ 1 training set cannot do)."""

import numpy as np
import pytest
from scalinglab.errors import UserError
from scalinglab.fitting.studies import holdout as H
from scalinglab.papers import gadre as O

# Near their RedPajama fit (E ≈ 1.84, α ≈ 0.27), so the synthetic tests exercise the same basin.
TRUE = O.OvertrainingLaw(E=1.8, A=170.0, B=290.0, alpha=0.27)


def table(loss=None):
    """Four sizes, 10M to 400M, each at 5, 20, 80 and 320 tokens per parameter."""
    N = np.repeat(np.geomspace(1e7, 4e8, 4), 4)
    D = N * np.tile([5.0, 20.0, 80.0, 320.0], 4)
    return {"N": N, "D": D, "loss": TRUE.loss(N, D) if loss is None else loss}


def test_noise_free_runs_give_back_the_law():
    res = O.fit_overtraining_law(table())
    assert res.status == "converged" and res.n_rows == 16 and res.n_starts == 128
    # Exact data: Levenberg-Marquardt drives the residual to rounding level (1e-14 relative error in
    # every parameter when written); 1e-8 is the solver's own step tolerance, so anything above it
    # means a wrong form, a wrong conversion from their coordinates, or a local minimum.
    for k in O.PARAMS:
        assert getattr(res, k) == pytest.approx(getattr(TRUE, k), rel=1e-8), k


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_noisy_runs_extrapolate_to_an_over_trained_large_model(seed):
    t = table()
    t["loss"] = t["loss"] + np.random.default_rng(seed).normal(0, 0.005, len(t["loss"]))
    res = O.fit_overtraining_law(t)
    N, D = 1.4e9, 640 * 1.4e9  # 3.5× beyond the largest fitted size, at 2× the largest D/N
    off = abs(res.loss(N, D) / TRUE.loss(N, D) - 1)
    # 0.005 nats of noise on 16 runs cost 0.2-0.5% at this extrapolation (seeds 0-2 when written);
    # 1.5% leaves room for platforms, and stays below the 3% that a fit ignoring the D/N = 320 runs
    # would need to be caught by the real-data tests below.
    assert res.status == "converged" and off < 0.015


def test_the_compute_form_is_the_same_law_and_a_is_one_half():
    from scipy.optimize import minimize_scalar

    N, D = np.geomspace(1e7, 1e10, 5), np.geomspace(1e8, 1e13, 5)
    assert TRUE.loss_cm(6 * N * D, D / N) == pytest.approx(TRUE.loss(N, D), rel=1e-12)
    assert TRUE.paper_params()["eta"] == pytest.approx(TRUE.alpha / 2)
    # a = 0.5 is claimed by construction; check it by minimising the loss at two budgets, not by reading it back.
    n_opt = [np.exp(minimize_scalar(lambda x: TRUE.loss(np.exp(x), C / (6 * np.exp(x))), bounds=(5, 40),
                                    method="bounded", options={"xatol": 1e-10}).x) for C in (1e20, 1e24)]
    assert np.log(n_opt[1] / n_opt[0]) / np.log(1e4) == pytest.approx(0.5, abs=1e-6)
    assert TRUE.a == 0.5


def test_no_start_converging_is_a_status_not_an_exception():
    res = O.fit_overtraining_law(table(), options=O.OvertrainingOptions(maxfev=5))
    assert res.status == "failed" and res.n_failed_starts == 128 and np.isnan(res.E)


def test_rows_select_by_conditions_and_predictions_keep_table_rows():
    t = table()
    res = O.fit_overtraining_law(t, rows="N<1e8")  # the two smaller sizes: 8 rows
    assert res.n_rows == 8
    pred = O.predict(res, t, "N>1e8")
    assert list(pred.rows) == list(range(8, 16)) and not pred.has_interval
    assert np.max(np.abs(pred.rel_error)) < 1e-6  # exact data: the 8-row fit is the law too


@pytest.mark.parametrize("change, rows, message", [
    (lambda t: t.pop("loss"), None, "no column 'loss'"),
    (lambda t: t["N"].__setitem__(3, 0.0), None, "column 'N' must be positive; row 3 is 0"),
    (lambda t: t["loss"].__setitem__(5, np.nan), None, "column 'loss' has 1 missing or non-finite value(s) (first at row 5)"),
    (lambda t: t.update(D=list(t["D"][:6]) + ["many"] + list(t["D"][7:])), None,
     "column 'D' holds a non-number at row 6: 'many'"),
    (None, "N<2e7", "need at least 5 runs"),
    (None, "D>1e99", "'D>1e99' matches none of the 16 rows"),
    (None, "tokens>1", "no column 'tokens'"),
])
def test_bad_input_is_a_one_line_user_error(change, rows, message):
    t = table()
    if change:
        change(t)
    with pytest.raises(UserError) as err:
        O.fit_overtraining_law(t, rows=rows)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_one_tokens_per_parameter_ratio_cannot_separate_a_from_b():
    N = np.geomspace(1e7, 4e9, 6)  # every run Chinchilla-optimal, as Gadre et al.'s M = 20 runs alone
    with pytest.raises(UserError, match=r"D/N is 20 on every fitted row.*cannot be told apart") as err:
        O.fit_overtraining_law({"N": N, "D": 20 * N, "loss": TRUE.loss(N, 20 * N)})
    assert "\n" not in str(err.value)


# --- their fit, on the released runs ------------------------------------------------------------

PAPER_PCT = {k: 100 * v for k, v in O.PAPER_RELATIVE_ERRORS.items()}
TARGETS = O.PAPER_TARGETS


@pytest.fixture(scope="module")
def rpj_c4():
    from conftest import mirror_or_skip
    from scalinglab import data

    mirror_or_skip()
    runs = data.load("gadre2024-final-losses")
    return runs, H.where(runs, ["dataset==rpj", "val_data~c4_val"])


def errors_pct(runs, sel, fit):
    return {k: 100 * O.predict(fit, runs, H.where(runs, c) & sel, "params", "tokens", "loss").rel_error.item()
            for k, c in TARGETS.items()}


def test_the_paper_targets_pick_one_run_each(rpj_c4):
    runs, sel = rpj_c4
    # Each target must be one run, and the run its name says: their Figure 1 predicts the 1.4B model at
    # 640 tokens per parameter and the 6.9B model at 20. The 5% windows cover the parameter-count
    # conventions (N here excludes the input embedding); the next sizes are 0.4B and 1.4B away.
    expect = {"1.4B, M=32": (1.4e9, 640), "6.9B, M=1": (6.9e9, 20)}
    assert set(TARGETS) == set(O.PAPER_RELATIVE_ERRORS) == set(expect)
    for k, conds in TARGETS.items():
        picked = runs[H.where(runs, conds) & sel]
        assert len(picked) == 1, k
        n, tpp = expect[k]
        assert picked["params"].item() == pytest.approx(n, rel=0.05), k
        assert picked["tokens"].item() / picked["params"].item() == pytest.approx(tpp, rel=0.05), k


def test_their_five_run_fit_reproduces_the_published_errors(rpj_c4):
    runs, sel = rpj_c4
    fit = O.fit_overtraining_law(runs, "params", "tokens", "loss",
                                 rows=O.matching_any_group(runs, O.PAPER_TRAINING_RUNS) & sel)
    assert fit.status == "converged" and fit.n_rows == 5
    # They print |error| to 4 decimals of a percent (half a unit: 5e-5 points). The solver stops
    # within its tolerance, which moves the error by about 2e-5 points with the row order (theirs is
    # sorted by compute, ours is the table's), so 1e-4 points covers both; a different start grid,
    # objective (log loss, Huber) or run set moves it by 0.1 points or more.
    for k, got in errors_pct(runs, sel, fit).items():
        assert got > 0 and abs(got - PAPER_PCT[k]) < 1e-4, (k, got)


def test_their_form_on_the_m_le_1_runs_is_far_worse(rpj_c4):
    runs, sel = rpj_c4
    fit = O.fit_overtraining_law(runs, "params", "tokens", "loss",
                                 rows=H.where(runs, ["chinchilla_multiplier<=1", "params<1e9"]) & sel)
    assert fit.n_rows == 12
    # Same form and procedure, 12 runs at M = 0.25-1 and none over-trained: -45% and -27% when written.
    # Above 5% (7× the paper's) on both targets says the training runs, not the form, carry their 0.7%.
    errs = errors_pct(runs, sel, fit)
    assert all(e < -5 for e in errs.values()), errs
    # The unbounded least squares lands on a negative E here, and the status says so.
    assert fit.status == "unidentified" and "E" in fit.unphysical
