"""Hyperparameter laws (scalinglab.hparams), Step Law's reproduction (papers.step_law) and `scalinglab hparams`."""

import json

import numpy as np
import pytest
from conftest import refused
from scalinglab.errors import UserError
from scalinglab.hparams import HparamRuns, fit_hparam_law, fit_surface, near_optimal, pooled_curvature
from scalinglab.hparams.advice import advise

TRUE = dict(lr_coef=1.79, lr_exp_n=-0.713, lr_exp_d=0.307, bs_coef=0.58, bs_exp_d=0.571)
PAIRS = [(2e8, 4e9), (2e8, 2e10), (2e8, 1e11), (4e8, 8e9), (4e8, 4e10), (4e8, 5e10), (5e8, 1e10), (5e8, 5e10),
         (1e9, 2e10), (1e9, 5.7e10), (2.7e8, 5e9), (2.7e8, 8e10)]
LRS = 2.0 ** np.arange(-12, -5.4, 0.5)
BATCHES = 2048 * 2.0 ** np.arange(5, 12)


def _grid(rng, scatter=0.0, noise=0.0, curv=(0.004, 0.003, 0.001)):
    """Synthetic grids: at each (N, D) a quadratic loss in (ln lr, ln batch) around the true law's optimum (times a
    lognormal group scatter of sd ``scatter``, shared by the group's runs), plus run noise (relative sd ``noise``)."""
    rows = []
    for n, d in PAIRS:
        lr0 = TRUE["lr_coef"] * n ** TRUE["lr_exp_n"] * d ** TRUE["lr_exp_d"] * np.exp(scatter * rng.normal())
        bs0 = TRUE["bs_coef"] * d ** TRUE["bs_exp_d"] * np.exp(scatter * rng.normal())
        base = 2.0 + 30 * n ** -0.2
        for lr in LRS:
            for bs in BATCHES:
                dx, dy = np.log(lr / lr0), np.log(bs / bs0)
                r = curv[0] * dx * dx + curv[1] * dy * dy + curv[2] * dx * dy
                rows.append((n, d, lr, bs, base * (1 + r) * (1 + noise * rng.normal())))
    a = np.array(rows)
    return HparamRuns.from_arrays(*a.T, label="simulated")


def test_near_optimal_keeps_each_groups_best_and_its_near_ties():
    runs = HparamRuns.from_arrays([1, 1, 1, 2, 2], [5, 5, 5, 9, 9], [1, 2, 3, 1, 2], [1, 1, 1, 1, 1],
                                  [2.0, 2.004, 2.01, 3.0, 3.0])
    assert near_optimal(runs, 0.0025).tolist() == [True, True, False, True, True]
    assert near_optimal(runs, 0.0).tolist() == [True, False, False, True, False]  # the first of a tie


def test_law_is_recovered_when_each_optimum_lies_on_the_grid():
    # optima exactly on grid points (lr a power of sqrt 2 and batch a power of 2 at every pair): the best run is
    # the optimum and the log-linear fit through the best runs returns the exponents that made them
    pairs = [(2 ** 28, 2 ** 32), (2 ** 28, 2 ** 36), (2 ** 30, 2 ** 34), (2 ** 30, 2 ** 38), (2 ** 32, 2 ** 36)]
    a_n, a_d, b_d = -0.5, 0.25, 0.5
    rows = []
    for n, d in pairs:
        lr0, bs0 = 2.0 ** (3 + a_n * np.log2(n) + a_d * np.log2(d)), 2.0 ** (b_d * np.log2(d))
        for k in range(-3, 4):
            for j in range(-2, 3):
                rows.append((n, d, lr0 * 2 ** (k / 2), bs0 * 2 ** j, 3 + 0.01 * k * k + 0.02 * j * j))
    law = fit_hparam_law(HparamRuns.from_arrays(*np.array(rows).T), threshold=0, n_boot=0)
    assert law.params["lr_exp_n"] == pytest.approx(a_n, abs=1e-9)
    assert law.params["lr_exp_d"] == pytest.approx(a_d, abs=1e-9)
    assert law.params["bs_exp_d"] == pytest.approx(b_d, abs=1e-9)
    assert law.params["lr_coef"] == pytest.approx(8.0, rel=1e-9)


def test_group_bootstrap_covers_the_true_exponents_on_simulated_grids():
    # Each group's optimum scatters about the law (sd 0.15 in ln lr and ln batch, shared by the group's runs),
    # so the 12 groups are the independent evidence. Over 60 simulated designs the group bootstrap's 90% interval
    # of each exponent holds the truth close to nominally: measured 0.83-0.88 (12 groups make percentile
    # intervals a little narrow); the bounds allow ~2 binomial sd (0.04) beyond that on either side.
    rng = np.random.default_rng(1)
    hit = np.zeros(3)
    sims = 60
    for s in range(sims):
        runs = _grid(rng, scatter=0.15, noise=0.0005)
        law = fit_hparam_law(runs, n_boot=150, unit="group", seed=s, level=0.9)
        assert law.unit == "(N, D) group" and law.boot.shape == (150, 6)
        for i, k in enumerate(("lr_exp_n", "lr_exp_d", "bs_exp_d")):
            lo, hi = law.interval(k)
            hit[i] += lo <= TRUE[k] <= hi
    assert ((hit / sims >= 0.75) & (hit / sims <= 0.98)).all(), hit / sims


def test_surface_recovers_a_quadratic_optimum_and_its_flatness():
    rng = np.random.default_rng(0)
    lr0, bs0, c3, c4 = 2e-3, 4e5, 0.004, 0.003
    lr, bs = np.meshgrid(LRS, BATCHES)
    dx, dy = np.log(lr / lr0).ravel(), np.log(bs / bs0).ravel()
    loss = 2.5 * (1 + c3 * dx ** 2 + c4 * dy ** 2)
    s = fit_surface(lr.ravel(), bs.ravel(), loss, n_boot=0)
    # noise-free: the window's runs lie on the quadratic, so its minimum and curvature are exact; the grid's best
    # run is not the optimum, so the surface's loss there is below every run's
    assert s.ok and s.lr_opt == pytest.approx(lr0, rel=1e-6) and s.batch_opt == pytest.approx(bs0, rel=1e-6)
    assert s.loss_opt == pytest.approx(2.5, rel=1e-9) and s.loss_opt < loss.min()
    # within 0.1% of the optimum for |d ln lr| < sqrt(1e-3 / c3) (relative to the grid best, which is ~ the optimum)
    assert s.lr_flat == pytest.approx(np.exp(2 * np.sqrt(1e-3 / c3)), rel=2e-3)
    # a saddle has no optimum: refused as such, not answered
    saddle = fit_surface(lr.ravel(), bs.ravel(), 2.5 * (1 + c3 * dx ** 2 - c4 * dy ** 2 + 0.5), n_boot=0)
    assert not saddle.ok
    # with run noise, the interval over resampled runs holds the true optimum in most of 40 designs (the unit is
    # the run: each trained on its own); 0.8 allows for percentile intervals from 100 resamples at 95%
    hits = 0
    for k in range(40):
        noisy = loss * (1 + 0.001 * rng.normal(size=loss.size))
        sn = fit_surface(lr.ravel(), bs.ravel(), noisy, n_boot=100, seed=k)
        hits += sn.intervals["lr_opt"][0] <= lr0 <= sn.intervals["lr_opt"][1]
    assert hits / 40 >= 0.8, hits


def test_advice_penalty_is_zero_at_the_optimum_and_grows_away_from_it():
    runs = _grid(np.random.default_rng(3), noise=0.0002)
    n, d = 4e8, 3e10
    adv = advise(runs, n, d, fixed_lr=1e-3, n_boot=50)
    lr_true = TRUE["lr_coef"] * n ** TRUE["lr_exp_n"] * d ** TRUE["lr_exp_d"]
    assert adv.lr == pytest.approx(lr_true, rel=0.1) and adv.lr_interval[0] < adv.lr < adv.lr_interval[1]
    assert not adv.distance["outside"]
    far = advise(runs, 1e11, 1e13, n_boot=50)
    assert far.distance["outside"] and far.distance["decades_n"] == pytest.approx(2, abs=1e-9)
    fixed = next(a for a in adv.alternatives if a["name"].startswith("fixed"))
    # the penalty is the pooled quadratic at the lr's distance from the optimum: recompute it
    curv = pooled_curvature([fit_surface(runs.lr[g], runs.batch[g], runs.loss[g], n_boot=0)
                             for g in [runs.groups[1] == k for k in range(len(PAIRS))]])
    assert fixed["penalty_pct"] == pytest.approx(100 * curv[0] * np.log(1e-3 / adv.lr) ** 2, rel=1e-9)
    at_opt = advise(runs, n, d, fixed_lr=adv.lr, n_boot=50)
    assert next(a for a in at_opt.alternatives if a["name"].startswith("fixed"))["penalty_pct"] == pytest.approx(0)
    with pytest.raises(UserError, match="positive finite"):
        advise(runs, -1.0, d)


def test_too_few_groups_or_n_tied_to_d_is_refused():
    one = HparamRuns.from_arrays([1e8] * 4 + [2e8] * 4, [1e9] * 4 + [2e9] * 4, [1, 2, 3, 4] * 2, [1] * 8,
                                 [3, 2, 2.5, 2.8] * 2)
    with pytest.raises(UserError, match="2 \\(N, D\\) group"):
        fit_hparam_law(one)
    tied = HparamRuns.from_arrays(np.repeat([1e8, 2e8, 4e8], 2), np.repeat([2e9, 4e9, 8e9], 2), [1, 2] * 3,
                                  [1] * 6, [2, 3] * 3)
    with pytest.raises(UserError, match="cannot be told apart"):
        fit_hparam_law(tied)


# --- Step Law's released runs ------------------------------------------------------------------------------

def test_the_users_refit_is_the_authors_code_on_the_released_runs(mirror):
    from scalinglab.papers import step_law

    runs, df = step_law.load()
    assert len(df) == 1911 and len(runs.groups[0]) == 17 and df["lr_grid"].nunique() == 14
    law = fit_hparam_law(runs, bs_on_n=True, n_boot=0)
    user = step_law.USER_REFIT
    # the user's numbers are a bootstrap mean of the same fit (1000 row resamples), so they differ from the
    # point fit by the resampling's wobble, ~0.003 in an exponent
    for k in ("lr_exp_n", "lr_exp_d", "bs_exp_n", "bs_exp_d"):
        assert law.params[k] == pytest.approx(user[k], abs=0.01), k
    # and they are not the published law: D's lr exponent is 0.11 below it, beyond the authors' own spread
    spread = step_law.published_bootstrap()
    assert law.params["lr_exp_d"] < spread["lr_exp_d"]["lo"]
    assert spread["lr_exp_n"]["mean"] == pytest.approx(-0.713, abs=5e-4)


def test_published_law_lands_near_each_groups_best_run(mirror):
    from scalinglab.papers import step_law

    runs, _ = step_law.load()
    gaps = np.array([g["gap_pct"] for g in step_law.optimum_gaps(runs, predict=step_law.published_law)])
    # the mirror's provenance computed the same in-sample analogue: mean 0.0975%, median 0.067%, max 0.31%
    assert np.median(gaps) == pytest.approx(0.067, abs=0.002) and gaps.max() == pytest.approx(0.31, abs=0.01)


# --- the command --------------------------------------------------------------------------------------------

def _csv(tmp_path, runs, seq=1, names=("N", "D", "lr", "batch", "loss")):
    path = tmp_path / "grid.csv"
    lines = [",".join(names)] + [f"{n:g},{d:g},{lr:g},{b / seq:g},{loss:.6f}" for n, d, lr, b, loss in
                                 zip(runs.n, runs.d, runs.lr, runs.batch, runs.loss)]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_cli_on_a_users_csv_with_its_own_column_names_and_batch_in_sequences(tmp_path, capsys):
    from scalinglab.cli import main

    runs = _grid(np.random.default_rng(5), noise=0.0002)
    path = _csv(tmp_path, runs, seq=2048, names=("params", "tokens", "peak", "bs", "final"))
    argv = [str(path), "--n-col", "params", "--d-col", "tokens", "--lr-col", "peak", "--batch-col", "bs",
            "--loss-col", "final", "--seq-len", "2048", "--at", "n=4e8,d=3e10", "--bootstrap", "50", "--json"]
    assert main(["hparams", *argv]) == 0
    out = json.loads(capsys.readouterr().out)
    lr_true = TRUE["lr_coef"] * 4e8 ** TRUE["lr_exp_n"] * 3e10 ** TRUE["lr_exp_d"]
    assert out["lr"] == pytest.approx(lr_true, rel=0.1)
    assert out["batch_tokens"] == pytest.approx(TRUE["bs_coef"] * 3e10 ** TRUE["bs_exp_d"], rel=0.15)
    assert out["interval_unit"] == "(N, D) group" and len(out["alternatives"]) == 3
    assert main(["hparams", *argv[:-1]]) == 0
    text = capsys.readouterr().out
    assert "learning rate" in text and "decades in N" in text and "WARNING" not in text


def test_cli_on_the_step_law_dataset(mirror, capsys):
    from scalinglab.cli import main

    assert main(["hparams", "--dataset", "step-law", "--at", "n=7e9,d=1.4e12", "--bootstrap", "100"]) == 0
    text = capsys.readouterr().out
    assert "WARNING: the query lies outside" in text and "DeepSeek" in text and "Kaplan" in text


def test_cli_bad_input_is_one_line(tmp_path, capsys):
    runs = _grid(np.random.default_rng(6))
    path = _csv(tmp_path, runs)
    refused(capsys, ["hparams", path, "--at", "n=4e8"], "give n and d")
    refused(capsys, ["hparams", path, "--at", "n=4e8,d=3e10", "--lr-col", "eta"], "no column 'eta'", "--lr-col")
    refused(capsys, ["hparams", path, "--at", "n=4e8,d=3e10", "--threshold", "2"], "--threshold")
    bad = tmp_path / "bad.csv"
    bad.write_text(path.read_text().replace("\n2e+08,4e+09,", "\n2e+08,x,", 1))
    refused(capsys, ["hparams", bad, "--at", "n=4e8,d=3e10"], "column 'D', line 2", "'x'")


def test_cli_threshold_default_mirrors_the_library():
    from scalinglab.cli import hparams as cli_hparams
    from scalinglab.hparams import AUTHORS_THRESHOLD

    assert cli_hparams.THRESHOLD == AUTHORS_THRESHOLD


# --- our own grid (hparams.own_grid) -----------------------------------------------------------------------

def _own_rows(rng, sizes, slope=-0.5, sd=0.0):
    rows = []
    for w, n in sizes:
        lr0 = 0.02 * (n / 1e4) ** slope * np.exp(sd * rng.normal())
        for b in (8, 16, 32):
            for k in range(-2, 3):
                lr = float(f"{lr0 * 1.3 ** 0.5 * 2.0 ** k:.4g}")  # the optimum off-grid, between two rates
                loss = 4.0 - 0.1 * np.log(n) + 0.05 * np.log(lr / lr0) ** 2 + 0.01 * np.log2(b / 8)
                rows.append(dict(width=w, depth=1, n=n, n_ne=n / 2, tokens=20 * n, lr=lr, batch=b,
                                 batch_tokens=128 * b, loss=loss))
    return rows


def test_own_grid_vertex_recovers_each_optimum_and_the_t_interval_covers():
    from scalinglab.hparams import own_grid

    sizes = [(16, 1e4), (32, 4e4), (64, 1.6e5), (128, 6.4e5)]
    g = own_grid.analyse_rows(_own_rows(np.random.default_rng(0), sizes))
    # noise-free and quadratic in ln lr: the parabola through the best run and its neighbours is exact
    assert g.exponent["slope"] == pytest.approx(-0.5, abs=1e-6) and g.exponent["df"] == 2
    assert all(s["lr_opt_from"] == "parabola" and s["best_batch"] == 8 for s in g.sizes)
    assert g.exponent["resolution_lo"] < -0.5 < g.exponent["resolution_hi"]
    # each size's optimum scatters about the power law (sd 0.2 in ln lr): the t interval on sizes - 2 df holds the
    # true slope in about 95% of 200 designs (0.90-0.99: ~3 binomial sd)
    rng = np.random.default_rng(1)
    hits = 0
    for _ in range(200):
        e = own_grid.analyse_rows(_own_rows(rng, sizes, sd=0.2)).exponent
        hits += e["slope_lo"] <= -0.5 <= e["slope_hi"]
    assert 0.90 <= hits / 200 <= 0.99, hits
    with pytest.raises(UserError, match="1 model size"):
        own_grid.analyse_rows(_own_rows(rng, sizes[:1]))
