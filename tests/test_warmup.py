"""Warmup evidence from Gadre et al.'s hyperparameter grid: parsing, accounting, penalties, the hinge fit."""

import json

import numpy as np
import pandas as pd
import pytest
from scalinglab import data
from scalinglab.accounting import conventions
from scalinglab.errors import DataError, UserError
from scalinglab.papers import warmup

KEY = "d=1024_l=12_h=16-64-0.003-0.033-64-5149020160-100-3e-05"


def test_key_parses_field_by_field_despite_the_minus_in_3e_05():
    got = warmup.parse_key(KEY)
    assert got == dict(shape="d=1024_l=12_h=16", d_model=1024, n_layers=12, n_heads=16, batch=64, lr=0.003,
                       wd=0.033, tokens=5149020160, warmup=100, lr_cooldown_end=3e-05)
    # A naive split gives nine fields and a cooldown of "05"; exponents elsewhere must parse too.
    assert len(KEY.split("-")) == 9
    other = warmup.parse_key("d=96_l=8_h=4-8-3e-04-1e-1-8-211386240-2000-3E-5")
    assert (other["lr"], other["wd"], other["warmup"], other["lr_cooldown_end"]) == (3e-4, 0.1, 2000, 3e-5)


@pytest.mark.parametrize("key, error, message", [
    ("d=1024_l=12_h=16-64-0.003-0.033-64-5149020160-100", UserError, "is not shape-batch"),
    ("d=1024_l=12-64-0.003-0.033-64-5149020160-100-3e-05", UserError, "is not shape-batch"),
    ("d=1024_l=12_h=16-32-0.003-0.033-64-5149020160-100-3e-05", DataError, "second field 32 differs"),
])
def test_bad_keys_are_one_line_errors_naming_the_key(key, error, message):
    with pytest.raises(error, match=message) as err:
        warmup.parse_key(key)
    assert key in str(err.value) and "\n" not in str(err.value)


def test_params_match_the_authors_count_for_a_released_model():
    # rw_original-d=96_l=8_h=4-1.0.json: params 10,569,312, params_no_embed 5,727,840 (the authors' numbers).
    params, no_embed = conventions.openlm_params(96, 8, 4)
    assert (params[0], no_embed[0]) == (10_569_312, 5_727_840)
    # Heads that do not divide the width narrow attention (d=488, 12 heads: 480 dims), so fewer parameters.
    narrow, _ = conventions.openlm_params(488, 4, 12)
    full, _ = conventions.openlm_params(488, 4, 8)
    assert full[0] - narrow[0] == 4 * 4 * 488 * 8


def _toy_grid():
    losses = {
        # config A (batch 64): 400 best, 2000 costs 0.2, 100 diverged
        "d=512_l=8_h=4-64-0.003-0.033-64-1578280960-100-3e-05": 4.9,
        "d=512_l=8_h=4-64-0.003-0.033-64-1578280960-400-3e-05": 3.3,
        "d=512_l=8_h=4-64-0.003-0.033-64-1578280960-2000-3e-05": 3.5,
        # config B: same shape at batch 16, one warmup only
        "d=512_l=8_h=4-16-0.003-0.033-16-1578280960-200-3e-05": 3.2,
    }
    return warmup.grid_frame(losses)


def test_grid_frame_steps_and_warmup_fraction():
    g = _toy_grid()
    assert list(g.columns) == list(warmup.GRID_COLUMNS)
    row = g[(g.batch == 64) & (g.warmup == 2000)].iloc[0]
    assert row.steps == pytest.approx(1578280960 / (64 * 2048))
    assert row.warmup_fraction == pytest.approx(2000 / row.steps)
    assert row.warmup_tokens == 2000 * 64 * 2048


def test_penalties_against_the_best_warmup_of_the_same_config():
    p = warmup.penalties(_toy_grid()).set_index(["batch", "warmup"])
    assert p.loc[(64, 2000), "penalty"] == pytest.approx(0.2)
    assert p.loc[(64, 400), "penalty"] == 0 and p.loc[(64, 100), "best_warmup"] == 400
    assert p.loc[(64, 100), "diverged"] and not p.loc[(64, 2000), "diverged"]
    # The batch-16 run is its own config, not compared with the batch-64 ones.
    assert p.loc[(16, 200), "n_warmups"] == 1 and p.loc[(16, 200), "penalty"] == 0
    assert not warmup.penalties(_toy_grid(), gap=2.0).diverged.any()
    # Per warmup: the single-warmup config is left out, and the diverged run stays out of the penalties.
    table = warmup.by_warmup(warmup.penalties(_toy_grid())).set_index("warmup")
    assert table.index.tolist() == [100, 400, 2000]
    assert table.loc[100, "diverged"] == 1 and np.isnan(table.loc[100, "penalty_max"])
    assert table.loc[2000, "penalty_max"] == pytest.approx(0.2) and table.loc[400, "best"] == 1


def _synthetic_penalties(knot, slope, noise, seed=0, n_groups=24, per_group=3):
    rng = np.random.default_rng(seed)
    x = np.repeat(np.linspace(0.03, 0.15, n_groups), per_group)
    y = slope * np.maximum(0.0, x - knot) + rng.normal(0, noise, x.size)
    return pd.DataFrame({"warmup_fraction": x, "penalty": y, "warmup": 2000, "diverged": False, "n_warmups": 4,
                         "d_model": np.repeat(np.arange(n_groups), per_group), "n_layers": 1})


def test_hinge_fit_recovers_a_known_knot_and_slope():
    fit = warmup.fit_penalty(_synthetic_penalties(0.09, 5.0, 0.0), n_boot=0)
    # Noise-free: only the knot grid's spacing (0.15/400) limits the knot.
    assert fit.status == "converged" and fit.knot == pytest.approx(0.09, abs=1e-3)
    assert fit.slope == pytest.approx(5.0, rel=0.02)
    noisy = warmup.fit_penalty(_synthetic_penalties(0.09, 5.0, 0.01, seed=1), n_boot=500, seed=0)
    # Noise of 0.01 nats (the grid's rmse is about 0.014) over 24 shapes: the 95% intervals should hold the truth.
    assert noisy.knot_ci[0] <= 0.09 <= noisy.knot_ci[1] and noisy.slope_ci[0] <= 5.0 <= noisy.slope_ci[1]
    lo, hi = noisy.interval([0.05, 0.14])
    assert lo[0] == hi[0] == 0.0 and lo[1] < 5.0 * 0.05 < hi[1]
    # Same seed, same resamples.
    again = warmup.fit_penalty(_synthetic_penalties(0.09, 5.0, 0.01, seed=1), n_boot=500, seed=0)
    assert again.knot_ci == noisy.knot_ci


def test_a_fixed_knot_and_too_few_shapes():
    fit = warmup.fit_penalty(_synthetic_penalties(0.0, 2.0, 0.0), knot=0.0, n_boot=0)
    assert fit.knot == 0.0 and fit.slope == pytest.approx(2.0)
    few = warmup.fit_penalty(_synthetic_penalties(0.09, 5.0, 0.0, n_groups=2), n_boot=10)
    assert few.status == "unidentified" and np.isnan(few.slope)
    with pytest.raises(UserError, match="no undiverged run with warmup 3000"):
        warmup.fit_penalty(_synthetic_penalties(0.09, 5.0, 0.0), warmup=3000)


def _quadratic_penalties(knot, slope, seed=0, noise=0.0):
    rng = np.random.default_rng(seed)
    x = np.linspace(0.03, 0.15, 24)
    y = slope * np.maximum(0.0, x - knot) ** 2 + rng.normal(0, noise, x.size)
    return pd.DataFrame({"warmup_fraction": x, "penalty": y, "warmup": 2000, "diverged": False, "n_warmups": 4,
                         "d_model": np.arange(x.size), "n_layers": 1})


def test_quadratic_onset_is_recovered_and_the_hinge_puts_its_knot_later():
    pen = _quadratic_penalties(0.07, 40.0)
    quad = warmup.fit_penalty(pen, form="quadratic", n_boot=0)
    # Noise-free: the knot to the grid's spacing, the curvature exactly, and a perfect fit.
    assert quad.form == "quadratic" and quad.knot == pytest.approx(0.07, abs=1e-3)
    assert quad.slope == pytest.approx(40.0, rel=0.02) and quad.rmse < 1e-3
    assert float(quad.predict(0.11)) == pytest.approx(40.0 * 0.04**2, rel=0.02)
    # A hinge on the same data puts its corner well after the true onset, and the runs it calls free
    # (below its knot) carry a penalty: the knot is a property of the form as much as of the data.
    hinge = warmup.fit_penalty(pen, form="hinge", n_boot=0)
    assert hinge.knot > 0.08 and hinge.rmse > quad.rmse
    below = warmup.around_knot(pen, hinge, groups=("d_model", "n_layers"))
    assert below["mean"] > 0 and below["x_below"] < hinge.knot <= below["x_above"]
    # The bootstrap of either form: same seed, same resamples; the curvature's interval holds the truth.
    noisy = warmup.fit_penalty(_quadratic_penalties(0.07, 40.0, seed=1, noise=0.005), form="quadratic",
                               n_boot=300, seed=0)
    assert noisy.knot_ci[0] <= 0.07 <= noisy.knot_ci[1] and noisy.slope_ci[0] <= 40.0 <= noisy.slope_ci[1]
    with pytest.raises(UserError, match="penalty form must be one of hinge, quadratic"):
        warmup.fit_penalty(pen, form="cubic")
    with pytest.raises(UserError, match="penalty weight must be one of rows, shapes"):
        warmup.fit_penalty(pen, weight="models")


def test_weighting_shapes_equally_is_fitting_their_means():
    # Shapes with 1 to 4 head-count variants and one shape far above the rest, repeated four times.
    pen = _synthetic_penalties(0.09, 5.0, 0.01, seed=2, n_groups=24, per_group=1)
    extra = pen.iloc[[20, 20, 20]].assign(penalty=lambda t: t.penalty + [0.05, 0.06, 0.07])
    pen = pd.concat([pen, extra], ignore_index=True)
    by_shape = warmup.fit_penalty(pen, weight="shapes", n_boot=0)
    means = pen.groupby(["d_model", "n_layers"], as_index=False).agg(
        warmup_fraction=("warmup_fraction", "first"), penalty=("penalty", "mean")).assign(
        warmup=2000, diverged=False, n_warmups=4)
    on_means = warmup.fit_penalty(means, n_boot=0)
    # With x constant within a shape, Σ_g (1/n_g) Σ_i (y_gi − f)² = Σ_g (ȳ_g − f)² + const: the same fit.
    assert (by_shape.knot, by_shape.slope) == pytest.approx((on_means.knot, on_means.slope), rel=1e-9)
    by_row = warmup.fit_penalty(pen, weight="rows", n_boot=0)
    assert by_row.slope != pytest.approx(by_shape.slope, rel=1e-3)


def test_shape_fractions_are_the_design_points_and_their_gaps():
    pen = _synthetic_penalties(0.09, 5.0, 0.0, n_groups=5, per_group=3)
    table = warmup.shape_fractions(pen)
    assert len(table) == 5 and (table.runs == 3).all()
    assert table.gap_to_next.iloc[:-1].to_numpy() == pytest.approx(np.full(4, 0.03))
    assert np.isnan(table.gap_to_next.iloc[-1])
    # Grouping that mixes x values is refused rather than averaged.
    with pytest.raises(UserError, match="differ in warmup_fraction"):
        warmup.shape_fractions(pen.assign(d_model=0))


def test_a_warmup_fraction_is_a_model_size_at_20_tokens_per_parameter():
    g = _toy_grid()
    row = g[(g.batch == 64) & (g.warmup == 2000)].iloc[0]
    # tokens = 20·params in the toy key too (1,578,280,960 = 20 × 78,914,048), so the inverse is exact.
    assert row.tokens == 20 * 78_914_048
    assert warmup.fraction_to_params(row.warmup_fraction, warmup=2000, batch=64) == pytest.approx(78_914_048)
    # Smaller fractions are larger models.
    assert warmup.fraction_to_params(0.05) > warmup.fraction_to_params(0.10)


def test_grid_loader_reads_json_and_refuses_other_shapes(tmp_path):
    path = tmp_path / "grid.json"
    path.write_text(json.dumps({KEY: 2.7}))
    assert warmup.grid_loader(path, None).loss.tolist() == [2.7]
    path.write_text(json.dumps([KEY]))
    with pytest.raises(DataError, match="expected a JSON object"):
        warmup.grid_loader(path, None)


def test_optimum_shift_drops_edges_and_measures_the_long_warmup_share():
    long_ = pd.DataFrame({"flops": [6e16, 6e17, 6e18], "n_opt": [1e7, 4e7, 1e8], "edge": [False, False, True]})
    short = pd.DataFrame({"flops": [6e16, 6e17, 6e18], "n_opt": [2e7, 5e7, 2e8], "edge": [False, False, False]})
    s = warmup.optimum_shift(long_, short, warmup_tokens=1e9)
    assert s.flops.tolist() == [6e16, 6e17]
    assert s.ratio.tolist() == pytest.approx([2.0, 1.25])
    # D* = C/(6N*) = 1e9 tokens at the first budget: the warmup is all of it.
    assert s.warmup_fraction_long.tolist() == pytest.approx([1.0, 0.4])


@pytest.fixture
def grid(mirror):
    return data.load("gadre2024-grid")


def test_the_grid_loads_and_the_accounting_is_the_authors(grid):
    assert len(grid) == 435 and grid["shape"].nunique() == 130
    # The authors set tokens = 20·params with their own count: equality on every shape checks ours is theirs.
    assert (grid["tokens"] == 20 * grid["params"]).all()
    final = data.load("gadre2024-final-losses").drop_duplicates("arch")
    final = final[final["arch"].str.startswith("d=")]
    shapes = final["arch"].str.extract(r"d=(\d+)_l=(\d+)_h=(\d+)").astype(int).to_numpy()
    params, no_embed = conventions.openlm_params(shapes[:, 0], shapes[:, 1], shapes[:, 2])
    assert len(final) == 4
    assert (params == final["params"].to_numpy()).all() and (no_embed == final["params_no_embed"].to_numpy()).all()


def test_on_the_grid_a_long_warmup_hurts_short_runs_more(grid):
    pen = warmup.penalties(grid)
    long_ = pen[(pen.warmup == 2000) & ~pen.diverged]
    short_runs = long_[long_.steps < long_.steps.quantile(0.25)].penalty.mean()
    long_runs = long_[long_.steps > long_.steps.quantile(0.75)].penalty.mean()
    # Head-count variants of one width and depth, at one run length, differ by up to 0.025 nats with this
    # warmup; 0.1 is four times that and half the ~0.2 the grid shows, so this fails only if the direction
    # is wrong or most of the effect is gone.
    assert short_runs - long_runs > 0.1
    fit = warmup.fit_penalty(pen, n_boot=200, seed=0)
    assert fit.status == "converged" and fit.slope_ci[0] > 0
    assert fit.x_range[0] < fit.knot < fit.x_range[1]
    # Divergence is the other side of the same trade-off: short warmups on the longest runs.
    div = pen[pen.diverged]
    assert len(div) >= 1 and (div.warmup <= 200).all() and (div.steps >= pen.steps.quantile(0.9)).all()


def test_on_the_grid_the_hinge_knot_sits_in_a_gap_between_shapes(grid):
    pen = warmup.penalties(grid)
    fit = warmup.fit_penalty(pen, n_boot=300, seed=0)
    near = warmup.around_knot(pen, fit)
    # The bootstrap interval of the knot does not leave the gap between the two shapes around it:
    # it measures where the design has no runs, not where the onset is.
    assert near["x_below"] <= fit.knot_ci[0] and fit.knot_ci[1] <= near["x_above"] + 1e-3
    # Below the knot the hinge says 0, but the runs there pay something on average.
    assert near["mean"] > 0 and warmup.around_knot(pen, fit, from_x=0.075)["mean"] > 0.005
    quad = warmup.fit_penalty(pen, n_boot=0, form="quadratic")
    # The smooth onset fits almost as well and starts well before the hinge's corner.
    assert quad.knot < fit.knot - 0.01 and quad.rmse < 1.3 * fit.rmse


def test_the_grid_cannot_separate_run_length_from_size(grid):
    table = warmup.run_length_vs_size(grid)
    # Within a batch, steps ∝ params (20 tokens per parameter); no shape is run at two batches.
    assert np.allclose(table.corr_log_steps_log_params, 1.0) and (table.shapes_at_other_batches == 0).all()
    # The batches that break the link never reach the warmup fractions where the batch-64 penalty appears.
    fit = warmup.fit_penalty(warmup.penalties(grid), n_boot=0)
    assert (table[table.batch < 64].max_warmup_fraction < fit.knot).all()
