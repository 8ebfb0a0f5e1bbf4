"""Kaplan's counting measured on runs: non-embedding N (Gemstones, Gadre et al.), paired counting shifts,
the law on a real design, and measured against simulated on the same resamples."""

import numpy as np
import pandas as pd
import pytest
from scalinglab.accounting import conventions
from scalinglab.accounting import decoder as flops
from scalinglab.errors import DataError, UserError
from scalinglab.fitting.frontier import envelope
from scalinglab.papers import gemstones, pearce_song
from scalinglab.papers import law_constants as laws

# Widths multiples of 256 have an even number of 128-wide heads, so GQA's key-value groups are
# exactly half the query heads and attention is exactly 3·w² (see conventions.gemstones_params).
SHAPES = [(256, 23), (512, 11), (1024, 28), (1536, 50), (2048, 27), (3072, 12)]


@pytest.mark.parametrize("width, depth", SHAPES)
def test_non_embedding_params_excludes_what_kaplans_count_excludes(width, depth):
    v = conventions.GEMSTONES_VOCAB
    ne = conventions.gemstones_non_embedding_params(width, depth)
    # Gemstones: the untied embedding and head are the only vocab-sized tensors.
    assert conventions.gemstones_params(width, depth) - ne == 2 * v * width
    p = flops.count_params(width, depth, v, seq_len=conventions.GEMSTONES_SEQ_LEN, mlp="swiglu", tied=False, bias=False)
    # scalinglab.accounting.decoder leaves out the same two matrices, plus a learned positional table that RoPE does not have.
    assert p.total - p.non_embedding - p.positional == 2 * v * width
    # What stays in must then differ only by the two architectural choices flops.py does not model:
    # GQA (k and v at half width: 3w² instead of 4w²) and GEGLU's hidden size (4w instead of OpenLM's
    # rounded 8w/3). Norms, one weight vector each, two a layer and a final one, agree with bias=False;
    # a convention that kept the head or dropped the final norm would miss by v·w or w.
    gqa = depth * (4 * width**2 - 3 * width**2)
    mlp = depth * 3 * width * (p.mlp_hidden - conventions.GEMSTONES_MLP_RATIO * width)
    assert ne == p.non_embedding - gqa - mlp


def _design(n_sizes=12, share_falls=True):
    """Curves that follow Epoch's law in total N, with an embedding 47491·N_E^(1/3) (Pearce & Song's) or none."""
    parts = []
    for i, n_e in enumerate(np.logspace(7, 10, n_sizes)):
        n_t = float(conventions.kaplan_total_params(n_e)) if share_falls else n_e
        d = np.logspace(8, 12.5, 80)
        parts.append(pd.DataFrame({"run": f"r{i:02d}", "n": n_t, "n_ne": n_e, "tokens": d}))
    curves = pd.concat(parts, ignore_index=True).assign(flops=lambda t: 6 * t["n"] * t["tokens"])
    return pearce_song.on_law(laws.EPOCH, curves)


@pytest.mark.parametrize("method", envelope.METHODS)
def test_same_counting_twice_shifts_by_exactly_zero_with_a_paired_interval(method):
    curves = _design(share_falls=False)
    s = pearce_song.envelope_shift(curves, envelope.EnvelopeOptions(method=method, n_boot=60, seed=1))
    assert s.status == "ok" and s.n_paired == 60
    # Unpaired, the difference of two such bootstraps would be as wide as either interval;
    # paired resample by resample, identical countings must give exactly (0, 0).
    assert s.total_ci[1] - s.total_ci[0] > 0.005
    assert s.shift == 0 and s.shift_ci == (0.0, 0.0)
    assert s.embedding_share == (0.0, 0.0)


@pytest.mark.parametrize("method", envelope.METHODS)
def test_a_falling_embedding_share_steepens_kaplans_exponent(method):
    s = pearce_song.envelope_shift(_design(), envelope.EnvelopeOptions(method=method, n_boot=60, seed=0))
    # In total N the law is exact, so the envelope gives β/(α+β) up to the 12-size staircase (±0.02).
    assert s.total == pytest.approx(laws.EPOCH.a, abs=0.02)
    # Embeddings fall from 40% to 1.5% of N between the first and last fitted optima: Pearce &
    # Song's mechanism must raise the exponent by clearly more than the staircase, resample by resample.
    first, last = s.embedding_share
    assert first > 0.3 and last < 0.03
    assert s.shift > 0.04 and s.shift_ci[0] > 0


def test_law_shift_recovers_the_law_and_pairs_its_bootstrap():
    n_t = np.repeat(np.logspace(8, 10, 7), 5)
    rows = pd.DataFrame({"params": n_t, "tokens": n_t * np.tile([5, 10, 20, 40, 80], 7)})
    # an embedding of 50,432 × width at a width of (64·N/12)^(1/3) (depth = width/64): 41% of N down to 9%
    rows["params_no_embed"] = rows["params"] - 50432 * (64 * rows["params"] / 12) ** (1 / 3)
    rows = pearce_song.on_law(laws.EPOCH, rows, n_col="params")
    s = pearce_song.law_shift(rows, "params", "params_no_embed", n_boot=40)
    # Exact losses: the fit in total N finds the law itself (its a to 1e-3, the solver's tolerance).
    assert s.status == "ok" and s.total == pytest.approx(laws.EPOCH.a, abs=1e-3)
    assert s.shift > 0.02 and s.shift_ci[0] > 0
    same = pearce_song.law_shift(rows, "params", "params", n_boot=20)
    assert same.shift == 0 and same.shift_ci == (0.0, 0.0)


def test_envelope_shift_needs_the_non_embedding_column():
    with pytest.raises(UserError, match="no non-embedding N column 'n_kaplan'"):
        pearce_song.envelope_shift(_design().drop(columns="n_ne"), envelope.EnvelopeOptions(n_boot=0), "n_kaplan")


def test_gemstones_kaplan_counting_measured_against_the_law_on_the_same_design(mirror):
    curves = gemstones.curves("gemstones-hot")
    assert np.array_equal(curves["n_ne"], conventions.gemstones_non_embedding_params(curves["width"], curves["depth"]))
    opts = envelope.EnvelopeOptions(method="hull", drop_edges=False, n_boot=200, seed=0)
    real = pearce_song.envelope_shift(curves, opts)
    law = pearce_song.envelope_shift(pearce_song.on_law(laws.EPOCH, curves), opts)
    # Kaplan's counting steepens the real envelope too, resample by resample ...
    assert real.shift > 0 and real.shift_ci[0] > 0
    # ... but by less than Epoch's law on the same runs predicts: the real envelope is held by
    # deep, narrow models with small embedding shares, the law's by wide, shallow ones.
    assert real.shift < law.shift
    assert real.embedding_share[1] < law.embedding_share[1]


# --- measured against simulated, resample by resample ---------------------------------------------

def _gadre_like_rows():
    """Rows on Epoch's law with an embedding of 50,432 × width, width = (64·N/12)^(1/3): 41% of N down to 9%."""
    n_t = np.repeat(np.logspace(8, 10, 7), 5)
    rows = pd.DataFrame({"params": n_t, "tokens": n_t * np.tile([5, 10, 20, 40, 80], 7)})
    rows["params_no_embed"] = rows["params"] - 50432 * (64 * rows["params"] / 12) ** (1 / 3)
    return pearce_song.on_law(laws.EPOCH, rows, n_col="params")


@pytest.mark.parametrize("method", envelope.METHODS)
def test_a_shift_against_itself_differs_by_zero_only_when_paired(method):
    curves = _design()
    opts = envelope.EnvelopeOptions(method=method, n_boot=60, seed=0)
    a = pearce_song.envelope_shift(curves, opts)
    b = pearce_song.envelope_shift(pearce_song.on_law(laws.EPOCH, curves), opts)
    d = pearce_song.shift_difference(a, b)
    # The same losses under the same resamples: exactly 0 in every resample. Unpaired (resample i
    # against resample j) the differences would spread over about the shift's own interval.
    assert d.difference == 0 and d.ci == (0.0, 0.0) and d.n_paired == 60
    assert a.shift_ci[1] - a.shift_ci[0] > 0.02
    unpaired = a.shift_draws - np.roll(b.shift_draws, 1)
    assert np.ptp(unpaired) > 0.02


@pytest.mark.parametrize("method", envelope.METHODS)
def test_noisy_runs_on_the_law_match_the_simulation_within_the_interval(method):
    curves = _design()
    # 0.3% loss noise, about the seed-to-seed spread of a real run's final loss.
    noisy = curves.assign(loss=curves["loss"] * np.exp(0.003 * np.random.default_rng(3).standard_normal(len(curves))))
    opts = envelope.EnvelopeOptions(method=method, n_boot=100, seed=0)
    measured = pearce_song.envelope_shift(noisy, opts)
    simulated = pearce_song.envelope_shift(pearce_song.on_law(laws.EPOCH, noisy), opts)
    d = pearce_song.shift_difference(measured, simulated)
    assert d.difference == pytest.approx(measured.shift - simulated.shift)
    assert d.ci[0] <= 0 <= d.ci[1]
    # The premise does hold here, so the gap is small next to the shift itself (≈ 0.05).
    assert abs(d.difference) < 0.04


def test_a_shift_the_simulation_does_not_predict_is_told_apart():
    curves = _design()
    opts = envelope.EnvelopeOptions(method="hull", n_boot=100, seed=0)
    simulated = pearce_song.envelope_shift(curves, opts)
    # Runs whose "non-embedding" N is their total N: relabelling changes nothing, the shift is 0,
    # so measured − simulated is −(simulated shift), and its interval must exclude 0.
    measured = pearce_song.envelope_shift(curves.assign(n_ne=curves["n"]), opts)
    d = pearce_song.shift_difference(measured, simulated)
    assert measured.shift == 0 and d.difference == pytest.approx(-simulated.shift)
    assert d.ci[1] < 0


def test_law_shift_measured_against_the_law_on_the_same_rows():
    rows = _gadre_like_rows()
    noisy = rows.assign(loss=rows["loss"] * np.exp(0.002 * np.random.default_rng(0).standard_normal(len(rows))))
    measured = pearce_song.law_shift(noisy, "params", "params_no_embed", n_boot=100, seed=0)
    simulated = pearce_song.law_shift(pearce_song.on_law(laws.EPOCH, noisy, n_col="params"),
                                      "params", "params_no_embed", n_boot=100, seed=0)
    d = pearce_song.shift_difference(measured, simulated)
    assert measured.resampling == simulated.resampling == ("rows", 0, 100, len(rows))
    assert d.ci[0] <= 0 <= d.ci[1] and d.n_paired >= 90
    # Paired, the difference is better determined than the measured shift alone.
    assert d.ci[1] - d.ci[0] < measured.shift_ci[1] - measured.shift_ci[0]


def test_shifts_from_different_resamples_are_not_compared():
    rows = _gadre_like_rows()
    a = pearce_song.law_shift(rows, "params", "params_no_embed", n_boot=10, seed=0)
    b = pearce_song.law_shift(rows, "params", "params_no_embed", n_boot=10, seed=1)
    with pytest.raises(UserError, match="same resamples"):
        pearce_song.shift_difference(a, b)
    with pytest.raises(UserError, match="same resamples"):
        pearce_song.shift_difference(a, pearce_song.law_shift(rows.iloc[:-1], "params", "params_no_embed",
                                                              n_boot=10, seed=0))


# --- Gadre et al.'s counts -----------------------------------------------------------------------

def test_openlm_shapes_from_arch_names():
    assert conventions.openlm_shape("d=576_l=24_h=8") == (576, 24, 8)
    assert conventions.openlm_shape("open_lm_7b") == (4096, 32, 32)
    with pytest.raises(UserError, match="unknown OpenLM arch 'open_lm_3b'"):
        conventions.openlm_shape("open_lm_3b")


def test_kaplan_params_refuse_counts_that_do_not_differ_by_one_vocabulary_matrix():
    # rw_original-d=96_l=8_h=4: the authors' params and params_no_embed differ by 50,432 × 96.
    good = pd.DataFrame({"arch": ["d=96_l=8_h=4"], "params": [10_569_312], "params_no_embed": [5_727_840]})
    assert pearce_song.with_kaplan_params(good)["params_kaplan"].item() == 5_727_840 - 50432 * 96
    # A table whose params_no_embed already dropped both matrices must not lose a third one.
    with pytest.raises(DataError, match="arch d=96_l=8_h=4"):
        pearce_song.with_kaplan_params(good.assign(params_no_embed=5_727_840 - 50432 * 96))


def test_kaplan_params_of_every_gadre_model_are_flops_non_embedding_count(mirror):
    from scalinglab import data

    table = pearce_song.with_kaplan_params(data.load("gadre2024-final-losses"))
    models = table.drop_duplicates("arch")
    assert len(models) == 6 and set(conventions.OPENLM_NAMED_SHAPES) <= set(models["arch"])
    for r in models.itertuples():
        width, depth, heads = conventions.openlm_shape(r.arch)
        # The shape is right when OpenLM's accounting reproduces both of the authors' columns,
        # the named 1B and 7B configs included ...
        params, no_embed = conventions.openlm_params(width, depth, heads)
        assert (params[0], no_embed[0]) == (r.params, r.params_no_embed), r.arch
        # ... and Kaplan's N is then what scalinglab.accounting.decoder leaves in without either vocabulary matrix.
        counts = flops.count_params(width, depth, conventions.OPENLM_VOCAB, seq_len=conventions.OPENLM_SEQ_LEN, mlp="swiglu", bias=False)
        assert r.params_kaplan == counts.non_embedding, r.arch
    # The smallest model is 92% vocabulary in Kaplan's count, the largest 6%.
    share = 1 - models["params_kaplan"] / models["params"]
    assert share.max() > 0.9 and share.min() < 0.07


# --- E in Kaplan's count: held at the total-N fit's value, profiled, and at its floor ----------------

def test_holding_kaplans_e_at_the_total_fits_value_pairs_with_the_free_fit():
    rows = _gadre_like_rows()
    noisy = rows.assign(loss=rows["loss"] * np.exp(0.002 * np.random.default_rng(1).standard_normal(len(rows))))
    free = pearce_song.law_shift(noisy, "params", "params_no_embed", n_boot=60, seed=0)
    held = pearce_song.law_shift(noisy, "params", "params_no_embed", n_boot=60, seed=0, kaplan_e="total")
    total, kaplan = held.fits
    # E is held exactly at the total-N fit's point estimate, in the fit and in every resample.
    assert held.kaplan_e == total.E == kaplan.E and free.kaplan_e is None
    assert np.all(kaplan.bootstrap.column("E") == total.E)
    assert held.floor_share[1] == 0.0
    # The total-N fit is the same fit either way, and the resamples are the same rows: free and held compare.
    assert held.total == free.total and held.resampling == free.resampling
    d = pearce_song.shift_difference(free, held)
    assert d.difference == pytest.approx(free.shift - held.shift) and d.n_paired >= 50
    # Counted the same way twice, holding E at the total fit's own value changes nothing (solver tolerance).
    same = pearce_song.law_shift(noisy, "params", "params", n_boot=0, kaplan_e="total")
    assert same.shift == pytest.approx(0.0, abs=1e-6)
    with pytest.raises(UserError, match="kaplan_e must be"):
        pearce_song.law_shift(noisy, "params", "params_no_embed", kaplan_e="kaplan")


def test_e_profile_is_lowest_at_the_laws_own_e_and_moves_a_with_e():
    rows = _gadre_like_rows()   # exact losses of Epoch's law in total N
    prof = pearce_song.e_profile(rows, "params", values=(0.0, 1.0, laws.EPOCH.E, 1.95))
    held, free = prof[prof.held].set_index("E"), prof[~prof.held].iloc[0]
    assert list(held.index) == [0.0, 1.0, laws.EPOCH.E, 1.95]   # 1.95: just under the lowest loss
    # The free fit finds the law (E to 1e-3); held at that E it is the same fit, and every other E fits worse.
    assert free.E == pytest.approx(laws.EPOCH.E, abs=1e-3)
    assert held.loc[laws.EPOCH.E, "a"] == pytest.approx(laws.EPOCH.a, abs=1e-3)
    others = held.drop(index=laws.EPOCH.E)
    assert (others.objective > 10 * held.loc[laws.EPOCH.E, "objective"] + 1e-9).all()
    # Lower E leaves more of the loss to the N term, which flattens (α falls) and a rises: on Gadre et al.'s
    # runs in Kaplan's N as here.
    assert np.all(np.diff(held["a"].to_numpy()) < 0)
    assert prof["d_objective"].min() == 0


def test_e_at_its_floor_is_counted_in_the_bootstrap():
    from dataclasses import replace

    from scalinglab.fitting.chinchilla.law import ScalingLaw

    rows = _gadre_like_rows()
    noise = np.exp(0.003 * np.random.default_rng(2).standard_normal(len(rows)))
    # A pure power law (E = 0): the free fit's E goes to its floor in many resamples; with Epoch's E in almost none.
    no_floor = pearce_song.on_law(ScalingLaw(0.0, 406.4, 410.7, 0.34, 0.28), rows, n_col="params")
    at_zero = pearce_song.law_shift(no_floor.assign(loss=no_floor["loss"] * noise), "params", "params_no_embed",
                                    n_boot=100, seed=0)
    with_e = pearce_song.law_shift(rows.assign(loss=rows["loss"] * noise), "params", "params_no_embed",
                                   n_boot=100, seed=0)
    # True E = 0 with 0.3% noise: the total-N fit reaches the floor in 9-27% of resamples across noise seeds,
    # the Kaplan-count fit (whose point estimate is at the floor) in all of them.
    assert at_zero.floor_share[0] > 0.05 and at_zero.floor_share[1] > 0.5
    assert max(with_e.floor_share) < 0.05
    assert np.isnan(pearce_song.e_at_floor(replace(at_zero.fits[0], bootstrap=None)))
    assert 0.0 <= at_zero.shift_percentile <= 1.0
