"""Held-out checks: a fitted law predicts runs it did not see, and the check can fail."""

import numpy as np
import pytest
from scalinglab.errors import UserError
from scalinglab.fitting.chinchilla import approach3 as F
from scalinglab.fitting.chinchilla.law import ScalingLaw
from scalinglab.fitting.studies import holdout as H

TRUE = ScalingLaw(E=1.8, A=480.0, B=2100.0, alpha=0.35, beta=0.37)


def design():
    """Five sizes at 5 to 160 tokens per parameter, plus a 2B model: Gadre et al.'s shape of grid."""
    N = np.repeat(np.logspace(7, 8.6, 5), 6)
    D = N * np.tile([5.0, 10, 20, 40, 80, 160], 5)
    N, D = np.r_[N, 2e9, 2e9], np.r_[D, 4e10, 3.2e11]
    return N, D, (D / N > 20) | (N > 1e9)  # held out: over-trained runs and the larger model


def test_noise_free_law_predicts_held_out_rows_exactly():
    N, D, held = design()
    res = H.holdout({"N": N, "D": D, "loss": TRUE.loss(N, D)}, held)
    assert res.fit.status == "converged" and len(res.train_rows) == (~held).sum()
    assert list(res.heldout.rows) == list(np.flatnonzero(held))
    # The fit recovers the law to the solver's tolerance, so its predictions do too, even 8× beyond in D.
    assert np.max(np.abs(res.heldout.rel_error)) < 1e-6
    assert not res.heldout.has_interval and "n_inside_interval" not in res.stats()


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_noisy_law_predicts_held_out_rows_within_tolerance(seed):
    N, D, held = design()
    truth = TRUE.loss(N, D)
    loss = truth * np.exp(np.random.default_rng(seed).normal(0, 0.005, len(N)))  # 0.5% run-to-run noise
    res = H.holdout({"N": N, "D": D, "loss": loss}, held, n_boot=200, seed=seed)
    h = res.heldout
    off = np.abs(h.predicted - truth[held]) / truth[held]
    # 15 runs with 0.5% noise pin the law well enough that extrapolating 8× in D or 5× in N costs
    # about 1% (0.7% median, 1.5% worst over 20 seeds when this test was written). 3% leaves room for
    # other seeds and platforms while staying well below the 12% the wrong-law test below produces.
    assert off.mean() < 0.03
    # Against the noisy runs the error adds the 0.4% mean |noise|, and the summary reports that.
    assert res.stats()["mean_abs_rel_error"] == pytest.approx(np.abs(h.rel_error).mean())
    # The law is right, so its 95% bootstrap interval should hold the true loss at nearly every row;
    # below 80% would mean the intervals are too narrow to trust.
    assert np.mean((truth[held] >= h.lower) & (truth[held] <= h.upper)) >= 0.8
    assert np.all(h.lower <= h.upper)


def test_held_out_rows_from_a_different_law_show_a_large_error():
    N, D, held = design()
    # The held-out runs stop improving with data faster (beta 0.25 instead of 0.37): a law fitted to
    # the short runs cannot know, and the check must say so.
    other = ScalingLaw(E=1.8, A=480.0, B=2100.0, alpha=0.35, beta=0.25)
    loss = np.where(held, other.loss(N, D), TRUE.loss(N, D))
    res = H.holdout({"N": N, "D": D, "loss": loss}, held, n_boot=50)
    h = res.heldout
    # Noise-free training rows: the fit is the truth, so the error is exactly the gap between the laws.
    expected = (TRUE.loss(h.N, h.D) - other.loss(h.N, h.D)) / other.loss(h.N, h.D)
    np.testing.assert_allclose(h.rel_error, expected, rtol=1e-5)
    assert res.stats()["mean_abs_rel_error"] > 0.05 and np.all(h.rel_error < 0)
    # Every replicate refits the same noise-free runs, so the intervals are points that miss every run.
    assert res.stats()["n_inside_interval"] == 0


def test_conditions_parse_and_select():
    table = {"dataset": ["rpj", "c4", "rpj", "rw"], "M": ["0.25", "1", "1.0", "32"],
             "path": ["a/c4_val/x", "a/openlm", "a/c4_val/y", "b"]}
    assert H.parse_condition(" M >= 1 ") == H.Condition("M", ">=", "1", " M >= 1 ")
    assert H.parse_condition("dataset=='rpj'").value == "rpj"
    assert list(H.where(table, ["dataset==rpj", "M==1"])) == [False, False, True, False]  # 1 == 1.0
    assert list(H.where(table, "dataset!=rpj")) == [False, True, False, True]
    assert list(H.where(table, "path~c4_val")) == [True, False, True, False]
    assert list(H.any_of(table, ["M>1", "M<0.5"])) == [True, False, False, True]
    assert list(H.where(table, None)) == [True] * 4


@pytest.mark.parametrize("cond, message", [
    ("M", "expected COL OP VALUE"),
    (">1", "expected COL OP VALUE"),
    ("M>", "expected COL OP VALUE"),
    ("nope>1", "no column 'nope'"),
    ("M>big", "'big' is not a number"),
    ("dataset<2", "holds a non-number at row 0: 'rpj'"),
])
def test_bad_conditions_are_one_line_user_errors(cond, message):
    table = {"dataset": ["rpj", "c4"], "M": ["1", "2"]}
    with pytest.raises(UserError, match=message) as exc:
        H.where(table, cond)
    assert "\n" not in str(exc.value)


def test_holdout_refuses_empty_splits_and_names_table_rows():
    N, D, held = design()
    table = {"N": list(N), "D": list(D), "loss": list(TRUE.loss(N, D))}
    with pytest.raises(UserError, match="holds out none"):
        H.holdout(table, "D>1e15")
    with pytest.raises(UserError, match="leaving none to fit"):
        H.holdout(table, "D>0")
    with pytest.raises(UserError, match="matches none"):
        H.holdout(table, "D>1e10", select="N<0")
    table["loss"][31] = "nan"  # a held-out row: the message names the table's row, not the held-out part's
    with pytest.raises(UserError, match="at row 31"):
        H.holdout(table, held)


def test_sweep_training_range_keeps_one_target():
    N, D, _ = design()
    M = D / N
    table = {"N": N, "D": D, "M": M, "loss": TRUE.loss(N, D)}
    target = (M >= 160) | (N > 1e9)
    runs = H.sweep_training_range(table, "M", [20, 40, 80], target)
    assert [len(r.train_rows) for r in runs] == [15, 20, 25]
    for r in runs:
        assert list(r.heldout.rows) == list(np.flatnonzero(target))
        assert np.max(np.abs(r.heldout.rel_error)) < 1e-6


def test_training_sets_bootstrap_gives_intervals_for_the_error_statistics():
    N, D, _ = design()
    M = D / N
    truth = TRUE.loss(N, D)
    loss = truth * np.exp(np.random.default_rng(5).normal(0, 0.005, len(N)))
    table = {"N": N, "D": D, "M": M, "loss": loss}
    target = (M >= 160) | (N > 1e9)
    sets = {"M<=20": M <= 20, "M<=80": M <= 80}
    res = H.training_sets(table, sets, target, n_boot=200, seed=0)
    assert list(res) == list(sets)
    for name, r in res.items():
        h = r.heldout
        assert list(h.rows) == list(np.flatnonzero(target))
        assert h.draws.shape == (len(r.fit.bootstrap.samples), len(h.rows))
        ci = h.error_intervals()
        # Recomputed from the replicate predictions by hand: the statistic is taken per replicate, not per row.
        err = h.draws / h.actual - 1
        assert ci["mean_rel_error"] == pytest.approx(tuple(np.percentile(err.mean(axis=1), [2.5, 97.5])))
        # The true law's mean error against these noisy runs is what a replicate of a right law estimates;
        # a 95% interval missing it on a correct model would be too narrow (it held for seeds 0-9 when written).
        true_mean = np.mean(truth[target] / loss[target] - 1)
        assert ci["mean_rel_error"][0] <= true_mean <= ci["mean_rel_error"][1], name
        assert ci["median_abs_rel_error"][0] <= ci["median_abs_rel_error"][1] <= ci["max_abs_rel_error"][1]
    # More of the extrapolated range in the fit pins the prediction more tightly: 3.6× narrower for this
    # noise draw, narrower for each of seeds 0-9 when written (by 1% at the least).
    width = {k: np.subtract(*r.heldout.error_intervals()["mean_rel_error"][::-1]) for k, r in res.items()}
    assert width["M<=80"] < width["M<=20"]
    # Without a bootstrap the intervals are NaN, not invented.
    plain = H.training_sets(table, sets, target)
    assert np.isnan(plain["M<=20"].heldout.error_intervals()["mean_rel_error"][0])


def model_curves(seed, offset=0.01, noise=0.002):
    """12 models, 8 checkpoints each: every model's losses share one offset (its seed, its data order),
    as a suite's checkpoints or cooldowns do, plus a little noise per checkpoint."""
    rng = np.random.default_rng(seed)
    N = np.repeat(np.geomspace(2e7, 1e9, 12), 8)
    D = N * np.tile(np.geomspace(5, 160, 8), 12)
    model = np.repeat(np.arange(12), 8)
    loss = TRUE.loss(N, D) * np.exp(rng.normal(0, offset, 12)[model] + rng.normal(0, noise, len(N)))
    return {"N": N, "D": D, "loss": loss, "model": [f"m{m:02d}" for m in model]}, model


def test_group_counts_resample_whole_groups():
    labels = np.array(["b", "a", "b", "c", "a", "c"])
    W = H.group_counts(labels, 500, seed=1)
    # Rows of one group are drawn together; three groups of two rows each, drawn three times, weigh 6.
    for g in "abc":
        cols = W[:, labels == g]
        assert np.all(cols == cols[:, :1])
    assert np.all(W.sum(axis=1) == 6)
    assert {0, 1, 2, 3} <= set(np.unique(W))  # some resamples drop a group, some draw it thrice


def test_cluster_bootstrap_with_one_row_per_group_is_the_row_bootstrap():
    N, D, held = design()
    loss = TRUE.loss(N, D) * np.exp(np.random.default_rng(0).normal(0, 0.005, len(N)))
    labels = [f"{i:03d}" for i in range(len(N))]  # sorted as the rows are, so the draws line up
    rows = H.holdout({"N": N, "D": D, "loss": loss}, held, n_boot=100, seed=3)
    groups = H.holdout({"N": N, "D": D, "loss": loss, "g": labels}, held, n_boot=100, seed=3, groups="g")
    # Same weights, same solver, same acceptance rule: the same replicates, bit for bit.
    np.testing.assert_array_equal(rows.fit.bootstrap.converged, groups.fit.bootstrap.converged)
    np.testing.assert_array_equal(rows.fit.bootstrap.samples, groups.fit.bootstrap.samples)
    assert rows.groups is None and groups.groups == "g" and groups.n_groups == (~held).sum()


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_resampling_models_widens_intervals_when_their_rows_share_an_offset(seed):
    table, model = model_curves(seed)
    held = model == 11  # the largest model
    by_row = H.holdout(table, held, n_boot=300, seed=seed)
    by_model = H.holdout(table, held, n_boot=300, seed=seed, groups="model")
    assert by_model.n_groups == 11

    def width(h):
        return np.median((h.upper - h.lower) / h.predicted)

    # 88 rows but only 11 independent offsets: the row bootstrap sees 8× too many independent runs, so its
    # intervals are too narrow by about sqrt(8). The ratio was 2.0 to 8.3 over seeds 0-5 when written.
    assert width(by_model.heldout) > 1.5 * width(by_row.heldout)
    truth = TRUE.loss(by_model.heldout.N, by_model.heldout.D)
    assert np.mean((truth >= by_model.heldout.lower) & (truth <= by_model.heldout.upper)) >= 0.75


def test_leave_one_group_out_finds_the_group_from_another_law():
    table, model = model_curves(0, offset=0.0, noise=0.0)
    odd = model == 5
    other = ScalingLaw(E=1.8, A=480.0, B=2100.0, alpha=0.33, beta=0.37)  # a model 'of another shape'
    table["loss"] = np.where(odd, other.loss(table["N"], table["D"]), table["loss"])
    out = H.leave_one_group_out(table, "model", select=model < 11)
    assert list(out) == [f"m{m:02d}" for m in range(11)]  # the unselected model is neither fitted nor left out
    for g, res in out.items():
        assert not np.isin(res.train_rows, np.flatnonzero(np.asarray(table["model"]) == g)).any()
        assert set(np.asarray(table["model"])[res.heldout.rows]) == {g}
    # Left out, the odd model is far off; every other model, left out, is predicted by a fit that still
    # has the odd model in it, so it is off by less. Noise-free, the gap is the laws' difference.
    by_group = {g: H.errors_by_group(r.heldout, table["model"])[g] for g, r in out.items()}
    assert abs(by_group["m05"]["mean"]) > 0.05
    assert max(abs(v["mean"]) for g, v in by_group.items() if g != "m05") < abs(by_group["m05"]["mean"]) / 2
    assert by_group["m05"]["n"] == 8 and by_group["m05"]["min"] <= by_group["m05"]["mean"] <= by_group["m05"]["max"]
    with pytest.raises(UserError, match="at least 2 groups"):
        H.leave_one_group_out(table, "model", select=model == 0)
    # With a bootstrap, each fit resamples the groups it was fitted on (3 of the 4 selected), not rows.
    boot = H.leave_one_group_out(table, "model", select=model < 4, n_boot=20)
    assert all(r.groups == "model" and r.n_groups == 3 and r.heldout.has_interval for r in boot.values())
    with pytest.raises(UserError, match="no column 'shape'"):
        H.leave_one_group_out(table, "shape")


def test_share_at_the_natural_floor_of_e():
    N = np.repeat(np.geomspace(1e7, 4e8, 5), 6)
    D = N * np.tile(np.geomspace(5, 160, 6), 5)
    noise = np.exp(np.random.default_rng(1).normal(0, 0.005, len(N)))
    no_floor = (480 / N**0.35 + 2100 / D**0.37) * noise   # E = 0: the runs cannot tell E from nothing
    res = F.fit_arrays(N, D, no_floor, n_boot=300, seed=1)
    share = H.at_natural_floor(res)
    # Counted by hand: E on its floor is e^-20 ≈ 2e-9.
    assert share["E"] == pytest.approx(np.mean(res.bootstrap.column("E") < 1e-8))
    assert share["E"] > 0.2  # 0.70 when written; a real floor of 1.8 below gives none
    assert share["alpha"] == share["beta"] == 0.0
    with_floor = F.fit_arrays(N, D, TRUE.loss(N, D) * noise, n_boot=300, seed=1)
    assert H.at_natural_floor(with_floor)["E"] == 0.0
    assert H.at_natural_floor(F.fit_arrays(N, D, no_floor)) == {}


# --- Gadre et al. 2024 ------------------------------------------------------

C4_EVAL = "val_data~c4_val"  # the eval set of their Figure 1
SMALL = "params<1e9"         # the four sizes up to 411M; 1.4B and 6.9B are held out


@pytest.fixture(scope="module")
def gadre():
    from conftest import mirror_or_skip
    from scalinglab import data

    mirror_or_skip()
    return data.load("gadre2024-final-losses")


@pytest.mark.parametrize("dataset", ["c4_original", "rpj", "rw_original"])
def test_gadre_fit_on_m_le_1_underpredicts_over_training(gadre, dataset):
    """Hoffmann's fit on the M ≤ 1 runs (12: four sizes × M 0.25, 0.5, 1) does not extrapolate in M.

    Gadre et al.'s released notebook predicts the 1.4B, 32×-over-trained RedPajama run with 0.71% error
    (and the 6.9B with 0.73%), but its fit includes one over-trained run (11M at M = 16) and no M < 1
    runs. Without any over-trained run the fitted beta is ~0.13, so the law promises far too much from
    more data: every over-trained run comes out below its actual loss, by more than 7× the paper's error
    on average at M ≥ 16. This test pins that failure; if a change made it pass at the paper's level,
    the notebook's story would need rewriting.
    """
    res = H.holdout(gadre, ["chinchilla_multiplier>1", "params>1e9"], "params", "tokens", "loss",
                    select=[f"dataset=={dataset}", C4_EVAL])
    assert len(res.train_rows) == 12 and res.fit.status == "converged"
    h = res.heldout
    M = h.D / (20 * h.N)
    over = M > 1.5
    assert np.all(h.rel_error[over] < 0)
    assert np.abs(h.rel_error[M > 12]).mean() > 7 * 0.0071
    assert res.fit.beta < 0.2 and res.fit.a < 0.3  # N_opt ∝ C^a far below Chinchilla's ~0.5


@pytest.mark.parametrize("dataset", ["c4_original", "rpj", "rw_original"])
def test_gadre_small_over_trained_runs_fix_the_extrapolation(gadre, dataset):
    """Add the 11M model's over-trained runs (M 2 to 32, about 2% of the training compute) to M ≤ 1.

    That is Gadre et al.'s design choice (their fit has 11M at M = 16). With it the median error on the
    other over-trained runs and the 1.4B/6.9B models falls to about 1% (0.9-1.5% when written), next to
    the paper's 0.7% for its two targets with its own 4-parameter form and 5 runs: we allow 3× that,
    2%, and require at least a threefold improvement over the M ≤ 1 fit on the same runs.
    """
    rows = [f"dataset=={dataset}", C4_EVAL]
    target = H.any_of(gadre, ["chinchilla_multiplier>1", "params>1e9"])
    tiny = H.where(gadre, "params<2e7")
    m_le_1 = H.holdout(gadre, target, "params", "tokens", "loss", select=rows)
    with_tiny = H.holdout(gadre, target & ~tiny, "params", "tokens", "loss", select=rows)
    assert len(with_tiny.train_rows) == 17
    same = np.isin(m_le_1.heldout.rows, with_tiny.heldout.rows)
    before = np.median(np.abs(m_le_1.heldout.rel_error[same]))
    after = with_tiny.stats()["median_abs_rel_error"]
    assert after < 3 * 0.0071
    assert after < before / 3


def test_new_run_interval_covers_held_out_runs_where_the_mean_laws_does_not():
    """The right law, 0.5% run noise, 96 runs on the grid of ``design`` repeated four times, every fourth held
    out (interpolation, so the parameters are well pinned). A held-out run is a new run: its loss carries the
    run noise that the mean law's interval (parameters only) leaves out. Over 10 seeds the 95% new-run
    interval held 93% of 320 held-out losses and the mean law's 36% when this test was written; 0.88 and 0.6
    leave room for other platforms (rows within a seed share one fit, so the spread is wider than binomial)."""
    N, D, _ = design()
    N, D = np.tile(N, 4), np.tile(D, 4)
    held = np.arange(len(N)) % 4 == 0
    new = mean = total = 0
    for seed in range(10):
        loss = TRUE.loss(N, D) * np.exp(np.random.default_rng(100 + seed).normal(0, 0.005, len(N)))
        h = H.holdout({"N": N, "D": D, "loss": loss}, held, n_boot=100, seed=seed).heldout
        # σ is the training residuals' sd, an estimate of the 0.005 used here (72 runs, 5 parameters)
        assert h.sigma == pytest.approx(0.005, rel=0.3)
        assert np.all(h.new_lower <= h.lower) and np.all(h.new_upper >= h.upper)   # always the wider
        new, mean, total = new + h.inside_new_run.sum(), mean + h.inside.sum(), total + len(h.rows)
    assert new / total >= 0.88 and mean / total <= 0.6
    stats = h.stats()
    assert stats["n_inside_new_run_interval"] == h.inside_new_run.sum() and stats["sigma"] == h.sigma
    text = h.summary()
    assert "95% new run" in text.splitlines()[1] and "inside their new-run interval (parameters and run noise" in text
    # "outside" marks the new-run interval's misses, the fair test of a new run
    assert sum(line.endswith("outside") for line in text.splitlines()) == (~h.inside_new_run).sum()
    assert h.to_dict()["rows"][0]["new_run_interval"] == [h.new_lower[0], h.new_upper[0]]
