"""scalinglab.fitting.studies.subsets: fits on random subsets of runs, free and constrained."""

import numpy as np
import pytest
from scalinglab.errors import UserError
from scalinglab.fitting.chinchilla import approach3 as F
from scalinglab.fitting.studies import subsets as S

TIED = F.ScalingLaw(E=1.8, A=480.0, B=2100.0, alpha=0.36, beta=0.36)


def grid_runs(law=TIED, noise=0.0, seed=0):
    """6 sizes × 8 token counts, crossed: every subset of a few runs still varies N and D."""
    rng = np.random.default_rng(seed)
    N, D = (x.ravel() for x in np.meshgrid(np.geomspace(5e7, 5e9, 6), np.geomspace(2e9, 2e11, 8)))
    return N, D, law.loss(N, D) * np.exp(noise * rng.standard_normal(N.size))


def test_draws_are_subsets_seeded_per_size():
    d = S.draw_subsets(48, 8, 30, seed=3)
    assert d.shape == (30, 8)
    assert all(len(set(row)) == 8 and list(row) == sorted(row) for row in d)
    assert d.min() >= 0 and d.max() < 48
    assert len({tuple(r) for r in d}) > 25  # random draws, not one subset repeated
    np.testing.assert_array_equal(d, S.draw_subsets(48, 8, 30, seed=3))
    assert not np.array_equal(d, S.draw_subsets(48, 8, 30, seed=4))
    # The first draws of a size do not depend on how many draws follow.
    np.testing.assert_array_equal(d[:10], S.draw_subsets(48, 8, 10, seed=3))
    with pytest.raises(UserError, match="cannot draw subsets of 50 runs from 48"):
        S.draw_subsets(48, 50, 3)


def test_free_fits_are_refused_below_ten_runs_and_tied_ones_are_not():
    N, D, L = grid_runs()
    variants = {"free": F.FitOptions(), "tied": F.FitOptions(tied={"beta": "alpha"})}
    fits = S.subset_fits(N, D, L, [8, 12], variants, n_draws=6, seed=0, budget=1e22)
    assert len(fits.records) == 2 * 6 * 2
    by = {(r["variant"], r["size"]): [] for r in fits.records}
    for r in fits.records:
        by[r["variant"], r["size"]].append(r)
    assert all(r["status"] == "refused" and "at least 10 runs" in r["reason"] for r in by["free", 8])
    assert all(r["status"] == "converged" for key in (("tied", 8), ("tied", 12), ("free", 12)) for r in by[key])
    # Noiseless runs of a tied law: every tied fit, on any 8 of them, is that law (solver tolerance).
    np.testing.assert_allclose(fits.values("tied", 8, "n_opt"), TIED.n_opt(1e22), rtol=1e-5)
    summary = {(s["variant"], s["size"]): s for s in S.summarise(fits, TIED)}
    assert summary["free", 8]["refused"] == 6 and "a_median" not in summary["free", 8]
    tied8 = summary["tied", 8]
    assert tied8["refused"] == 0 and tied8["n_opt_within_2x"] == 1.0
    assert tied8["n_opt_ratio_median"] == pytest.approx(1.0, rel=1e-5) and tied8["a_bias"] == 0.0
    # The result prints and saves: refused fits counted, a tied fit's a at its 0.5.
    d = fits.to_dict()
    assert d["a"]["free"]["8"]["refused"] == 6 and d["a"]["free"]["8"]["fits"] == 0
    assert d["a"]["tied"]["12"]["median"] == pytest.approx(0.5)
    assert "6 refused" in fits.summary()


def test_summary_measures_bias_against_the_reference():
    N, D, L = grid_runs(law=F.ScalingLaw(E=1.8, A=480.0, B=2100.0, alpha=0.30, beta=0.40), noise=0.002)
    truth = F.ScalingLaw(E=1.8, A=480.0, B=2100.0, alpha=0.30, beta=0.40)  # a = 4/7 ≈ 0.571
    variants = {"free": F.FitOptions(), "tied": F.FitOptions(tied={"beta": "alpha"})}
    fits = S.subset_fits(N, D, L, [24], variants, n_draws=8, seed=1)
    s = {r["variant"]: r for r in S.summarise(fits, truth)}
    # Tying forces a = 0.5, 0.071 below the truth, in every draw; the free fits on 24 runs with 0.2%
    # noise stay within 0.03 of it (their bootstrap SE on a is ≈ 0.01).
    assert s["tied"]["a_bias"] == pytest.approx(0.5 - truth.a, abs=1e-12)
    assert abs(s["free"]["a_bias"]) < 0.03
    assert s["free"]["a_lo"] <= s["free"]["a_median"] <= s["free"]["a_hi"]
    assert s["tied"]["n_opt_factor_off"] > s["free"]["n_opt_factor_off"]


def test_a_pool_restricts_the_draws_to_its_rows():
    n = 48
    small = np.arange(n) % 3 == 0  # 16 allowed rows
    d = S.draw_subsets(n, 8, 40, seed=2, pool=small)
    assert small[d].all() and d.shape == (40, 8)
    assert len(np.unique(d)) == small.sum()  # 40 draws of 8 reach every allowed row, and no other
    np.testing.assert_array_equal(d, S.draw_subsets(n, 8, 40, seed=2, pool=np.flatnonzero(small)))
    with pytest.raises(UserError, match="cannot draw subsets of 20 runs from 16 allowed of 48"):
        S.draw_subsets(n, 20, 3, pool=small)
    with pytest.raises(UserError, match="one entry per run: 47 for 48 runs"):
        S.draw_subsets(n, 8, 3, pool=small[:-1])
    with pytest.raises(UserError, match="pool indices must lie in 0..47, not 48"):
        S.draw_subsets(n, 8, 3, pool=[0, 5, 48])


def test_subset_fits_never_touch_rows_outside_the_pool():
    N, D, L = grid_runs()
    pool = N <= np.median(N)  # the three smallest sizes: 24 runs
    L = np.where(pool, L, -1.0)  # a fit that saw any other row would be refused (loss must be positive)
    fits = S.subset_fits(N, D, L, [10, 16], {"free": F.FitOptions()}, n_draws=4, seed=0, budget=1e22, pool=pool)
    assert all(r["status"] == "converged" for r in fits.records), [r.get("reason") for r in fits.records]
    assert fits.pool == tuple(np.flatnonzero(pool))
    # Without the pool the same call draws negative losses and is refused for them.
    loose = S.subset_fits(N, D, L, [16], {"free": F.FitOptions()}, n_draws=4, seed=0, budget=1e22)
    assert any(r["status"] == "refused" for r in loose.records)


def hand_made(records, budget=1e22, n_boot=0):
    recs = tuple({"variant": "v", "size": 8, "draw": i, "status": "converged", **r} for i, r in enumerate(records))
    return S.SubsetFits(records=recs, sizes=(8,), variants=("v",), n_draws=len(recs), budget=budget, seed=0,
                        n_boot=n_boot, boot_draws=len(recs) if n_boot else 0, boot_sizes=(8,) if n_boot else ())


def test_bias_and_rmse_match_a_hand_computation():
    ref = F.ScalingLaw(E=1.8, A=480.0, B=2100.0, alpha=0.36, beta=0.36)  # a = 0.5
    n_ref = float(ref.n_opt(1e22))
    # N_opt at 2, 1/2, 1 and 4 times the reference: ln ratios ln2·(1, −1, 0, 2).
    fits = hand_made([{"a": a, "n_opt": f * n_ref} for a, f in ((0.4, 2.0), (0.5, 0.5), (0.6, 1.0), (0.7, 4.0))])
    (s,) = S.summarise(fits, ref)
    ln2 = np.log(2)
    assert s["ln_n_opt_bias"] == pytest.approx(ln2 * 2 / 4)
    assert s["ln_n_opt_rmse"] == pytest.approx(ln2 * np.sqrt((1 + 1 + 0 + 4) / 4))
    assert s["a_bias"] == pytest.approx((-0.1 + 0 + 0.1 + 0.2) / 4)
    assert s["a_rmse"] == pytest.approx(np.sqrt((0.01 + 0 + 0.01 + 0.04) / 4))
    assert s["n_opt_within_2x"] == 0.75  # 2 and 1/2 are within, ends included; 4 is not
    assert "a_covered" not in s  # nothing was bootstrapped


def test_coverage_counts_the_intervals_that_contain_the_reference():
    ref = F.ScalingLaw(E=1.8, A=480.0, B=2100.0, alpha=0.30, beta=0.40)
    n_ref, a_ref = float(ref.n_opt(1e22)), ref.a
    nan = float("nan")
    rows = [((a_ref - 0.1, a_ref + 0.1), (0.5 * n_ref, 2 * n_ref)),   # both cover
            ((a_ref, a_ref + 0.2), (1.1 * n_ref, 3 * n_ref)),         # a covers at its end; N_opt misses above
            ((0.5, 0.5), (0.2 * n_ref, n_ref)),                        # a point that misses; N_opt covers at its end
            ((nan, nan), (nan, nan))]                                  # no replicate counted: no interval
    fits = hand_made([{"a": a_ref, "n_opt": n_ref, "a_ci": a, "n_opt_ci": n} for a, n in rows], n_boot=10)
    (s,) = S.summarise(fits, ref)
    assert s["boot_fits"] == 4 and s["no_interval"] == 1
    assert s["a_covered"] == pytest.approx(2 / 3) and s["n_opt_covered"] == pytest.approx(2 / 3)
    # Median widths over the three intervals that exist: a 0.2, 0.2, 0; N_opt spans 4x, 3/1.1x, 5x.
    assert s["a_ci_width"] == pytest.approx(0.2) and s["n_opt_ci_span"] == pytest.approx(4.0)
    assert S.covers([(1, 2), (3, 4)], 2.5) == (0.0, 0)
    share, missing = S.covers([(nan, nan)], 1.0)
    assert np.isnan(share) and missing == 1


def test_bootstrapped_subsets_give_tied_fits_a_point_interval_for_a():
    truth = F.ScalingLaw(E=1.8, A=480.0, B=2100.0, alpha=0.30, beta=0.40)  # a ≈ 0.571
    N, D, L = grid_runs(law=truth, noise=0.005, seed=2)
    variants = {"free": F.FitOptions(), "tied": F.FitOptions(tied={"beta": "alpha"})}
    fits = S.subset_fits(N, D, L, [8, 16], variants, n_draws=3, seed=0, budget=1e22, n_boot=40, boot_draws=2,
                         boot_sizes=[16])
    booted = [r for r in fits.records if "n_opt_ci" in r]
    # Only the first two draws at 16 runs, under both variants; the free fits at 8 runs are refused anyway.
    assert sorted((r["variant"], r["size"], r["draw"]) for r in booted) == [
        ("free", 16, 0), ("free", 16, 1), ("tied", 16, 0), ("tied", 16, 1)]
    for r in booted:
        assert r["n_opt_ci"][0] <= r["n_opt_ci"][1] and r["boot_ok"] > 0
    assert all(r["a_ci"] == (0.5, 0.5) for r in booted if r["variant"] == "tied")
    s = {(r["variant"], r["size"]): r for r in S.summarise(fits, truth)}
    assert s["tied", 16]["a_covered"] == 0.0 and s["tied", 16]["boot_fits"] == 2
    assert "a_covered" not in s["tied", 8]
    # Against a tied reference (a = 0.5 exactly) the same point interval covers.
    assert S.summarise(fits, TIED)[3]["a_covered"] == 1.0
    with pytest.raises(UserError, match=r"boot_sizes \[12\] are not among the sizes \[8, 16\]"):
        S.subset_fits(N, D, L, [8, 16], variants, n_draws=1, n_boot=10, boot_sizes=[12])


def test_with_exponent_moves_a_and_keeps_the_data_term_at_the_reference_d():
    law = F.ScalingLaw(E=1.82, A=478.0, B=2143.0, alpha=0.347, beta=0.367)
    new = S.with_exponent(law, 0.65, d_ref=1.7e10)
    assert new.a == pytest.approx(0.65, abs=1e-12)
    assert (new.E, new.A, new.alpha) == (law.E, law.A, law.alpha)
    assert new.B / 1.7e10**new.beta == pytest.approx(law.B / 1.7e10**law.beta, rel=1e-12)
    # Elsewhere the data term differs: steeper, so larger below d_ref and smaller above.
    assert new.B / 1e9**new.beta > law.B / 1e9**law.beta
    with pytest.raises(UserError, match="strictly between 0 and 1, not 1.2"):
        S.with_exponent(law, 1.2, 1e10)


def test_synthetic_runs_put_shuffled_residuals_on_the_law():
    N, D, _ = grid_runs()
    r = np.random.default_rng(5).standard_normal(N.size) * 0.01
    L = S.synthetic_runs(TIED, N, D, r, seed=3)
    got = np.log(L / TIED.loss(N, D))
    np.testing.assert_allclose(np.sort(got), np.sort(r), atol=1e-12)  # the same residuals ...
    assert not np.allclose(got, r)                                       # ... in another order
    np.testing.assert_array_equal(L, S.synthetic_runs(TIED, N, D, r, seed=3))
    with pytest.raises(UserError, match="47 residuals for 48 runs"):
        S.synthetic_runs(TIED, N, D, r[:-1])
