"""SLDBench's lr/batch-size and domain-mixture tasks: both R² normalisers, the law chosen on training rows
only (a case where the test rows would choose differently), planted laws recovered, the tasks' splits."""

import numpy as np
import pytest
from scalinglab.benchmark import sldbench
from scalinglab.benchmark import sldbench_tasks as T
from scalinglab.errors import UserError
from scalinglab.fitting.laws import fit_law


def test_multi_output_r2_is_the_mean_of_the_per_output_scores():
    rng = np.random.default_rng(0)
    y_tr = rng.normal(3, 1.0, (40, 2))
    y_te = rng.normal(3, 0.2, (10, 2))
    pred = y_te + np.array([0.1, 0.3])   # a constant error per output: MSE 0.01 and 0.09
    r2, r2_v0 = T.r2_multi(y_te, pred, y_tr)
    want = 1 - np.mean([0.01 / np.var(y_te[:, 0]), 0.09 / np.var(y_te[:, 1])])
    assert r2 == pytest.approx(want)
    # the old normaliser divides by the variance of test and train together: larger here, so a higher R²
    want_v0 = 1 - np.mean([0.01 / np.var(np.r_[y_te[:, k], y_tr[:, k]]) if k == 0 else
                           0.09 / np.var(np.r_[y_te[:, k], y_tr[:, k]]) for k in range(2)])
    assert r2_v0 == pytest.approx(want_v0) and r2_v0 > r2
    # one output: exactly sldbench's scores
    assert T.r2_multi(y_te[:, 0], pred[:, 0], y_tr[:, 0]) == pytest.approx(
        sldbench.r2_scores(y_te[:, 0], pred[:, 0], y_tr[:, 0]))
    # predicting the test mean scores 0 under the new normaliser, not under the old
    mean = np.broadcast_to(y_te.mean(axis=0), y_te.shape)
    r2, r2_v0 = T.r2_multi(y_te, mean, y_tr)
    assert r2 == pytest.approx(0) and r2_v0 > 0.5


def _line_or_mean(x_tr, y_tr):
    def fit_and_predict(name, fit_idx, val_idx, x_new=None):
        xs, ys = x_tr[fit_idx], y_tr[fit_idx]
        at = x_tr[val_idx] if x_new is None else x_new
        if name == "mean":
            return np.full(len(at), ys.mean())
        slope, icpt = np.polyfit(xs, ys, 1)
        return icpt + slope * at
    return fit_and_predict


def test_the_law_is_chosen_on_training_rows_where_the_test_rows_would_choose_otherwise():
    rng = np.random.default_rng(1)
    x_tr = rng.uniform(0, 1, 60)
    y_tr = 2 + x_tr + rng.normal(0, 0.05, 60)       # a line on the training range ...
    x_te = rng.uniform(3, 4, 20)
    y_te = 2.5 + rng.normal(0, 0.05, 20)            # ... that saturates beyond it
    f = _line_or_mean(x_tr, y_tr)
    folds = np.arange(60) % 5
    splits = [(np.flatnonzero(folds != k), np.flatnonzero(folds == k)) for k in range(5)]
    chosen, scores = T.select_by_validation(("mean", "line"), f, y_tr, splits)
    assert chosen == "line" and scores["line"] > 0.9 > scores["mean"]
    everything = np.arange(60)
    on_test = {n: T.r2_multi(y_te, f(n, everything, None, x_te), y_tr)[0] for n in ("mean", "line")}
    assert max(on_test, key=on_test.get) == "mean"  # choosing on test would have picked the other law


def _planted_mixture_task(y_test_from):
    # two sizes, 20 training and 6 test mixtures each, losses from Ye et al.'s one-domain law
    rng = np.random.default_rng(2)

    def mixtures(n):
        return rng.dirichlet(np.ones(5), size=n)

    def own(r, size):
        return 1.5 + size + 2.0 * np.exp(-3.0 * r)

    r_tr, r_te = mixtures(40), mixtures(12)
    g_tr, g_te = np.repeat([0.0, 0.5], 20).astype(object), np.repeat([0.0, 0.5], 6).astype(object)
    y_tr = own(r_tr, g_tr[:, None].astype(float)) + rng.normal(0, 0.005, (40, 5))
    y_te = y_test_from(r_te, g_te[:, None].astype(float))
    x = lambda r: {f"r{j + 1}": r[:, j] for j in range(5)}   # noqa: E731
    return T.MultiTask("domain_mixture", x(r_tr), y_tr, x(r_te), y_te, g_tr, g_te)


def test_score_ignores_the_test_rows_when_choosing():
    def own(r, size):
        return 1.5 + size + 2.0 * np.exp(-3.0 * r)

    b = T.score(_planted_mixture_task(own), ("linear", "mixing_law_own"))
    # the same task with test losses replaced by the linear law's own predictions: linear is exact on test
    t = _planted_mixture_task(own)
    lin = T.fit_predict(t.name, "linear", t.x_train, t.y_train, t.g_train, t.x_test, t.g_test)
    a = T.score(T.MultiTask(t.name, t.x_train, t.y_train, t.x_test, lin, t.g_train, t.g_test),
                ("linear", "mixing_law_own"))
    assert a["chosen"] == b["chosen"] == "mixing_law_own"
    assert a["validation_r2"] == b["validation_r2"]
    test_r2 = {r["law"]: r["r2"] for r in a["rows"]}
    assert test_r2["linear"] == pytest.approx(1) and test_r2["mixing_law_own"] < 1   # on test, linear wins
    assert a["r2"] == test_r2["mixing_law_own"]            # but the score is the chosen law's


def test_the_mixing_law_recovers_a_planted_one():
    rng = np.random.default_rng(3)
    r = rng.dirichlet(np.ones(5), size=60)
    t = np.array([-2.0, 0.5, -1.0, 1.0])
    y = 2.0 + 0.8 * np.exp(r[:, :4] @ t)
    x = {f"r{j + 1}": r[:, j] for j in range(5)}
    fit = fit_law(T.MIXING_LAW, {k: v[:40] for k, v in x.items()}, y[:40])
    pred = fit.predict({k: v[40:] for k, v in x.items()})
    assert T.r2_multi(y[40:], pred, y[:40])[0] > 0.99


def test_step_surface_recovers_a_planted_optimum():
    rng = np.random.default_rng(4)
    n = rng.choice([2e8, 4e8, 8e8], 400)
    d = rng.choice([5e9, 2e10, 8e10], 400)
    lr = np.exp(rng.uniform(np.log(2e-4), np.log(2e-2), 400))
    bs = 2.0 ** rng.integers(4, 12, 400)
    truth = dict(E=1.8, A=400.0, alpha=0.34, B=800.0, beta=0.3, c_lr=0.03, c_bs=0.02, l0=0.6, l1=-0.7, l2=0.3,
                 b0=-8.2, b1=0.57)
    x = {"lr": lr, "bs": bs, "n": n, "d": d}
    y = T.STEP_SURFACE.predict(x, truth) + rng.normal(0, 0.002, 400)
    fit = fit_law(T.STEP_SURFACE, x, y)
    # the optimum's exponent in N is what Step Law is about: recovered to within 0.05
    assert fit.params["l1"] == pytest.approx(-0.7, abs=0.05)
    assert fit.params["b1"] == pytest.approx(0.57, abs=0.05)


def test_the_tasks_load_on_the_loaders_splits(mirror):
    lr = T.lr_task()
    assert (len(lr.y_train), len(lr.y_test)) == (1730, 117)
    assert (lr.x_test["d"] == 1e13).all()
    mix = T.mixture_task()
    assert (len(mix.y_train), len(mix.y_test)) == (80, 24) and mix.y_train.shape[1] == 5
    assert sorted(set(mix.g_train)) == ["160M", "305M", "410M", "70M"]
    val = T.validation_splits(lr)
    assert len(val) == 1 and (lr.x_train["n"][val[0][1]] == lr.x_train["n"].max()).all()
    folds = T.validation_splits(mix)
    held = np.sort(np.concatenate([v for _, v in folds]))
    assert np.array_equal(held, np.arange(80))   # every training mixture held out once


def test_score_tasks_smoke(mirror):
    s = T.score_tasks("smoke")
    for task in ("lr_bsz", "domain_mixture"):
        t = s[task]
        assert t["chosen"] == max(t["validation_r2"], key=t["validation_r2"].get)
        assert {"chosen", "r2", "r2_v0", "validation_r2", "rows", "baseline_r2", "best_discovered_r2",
                "validation"} <= set(t)
        assert t["baseline_r2"] == sldbench.BASELINE_R2[task]
        assert all({"task", "variant", "law", "r2", "r2_v0", "n_train", "n_test"} <= set(r) for r in t["rows"])
    assert s["lr_bsz"]["best_discovered_r2"] == 0.983
    assert s["lr_bsz"]["what_if_test_d_1e11"]["test_d"] == 1e11
    assert "chosen law" in T.summary(s)
    h = T.headline(s)
    assert h["domain_mixture"]["human_r2"] == 0.671 and h["lr_bsz"]["chosen"] == s["lr_bsz"]["chosen"]
    assert set(h["domain_mixture"]["test_r2_by_law"]) == set(s["domain_mixture"]["validation_r2"])
    with pytest.raises(UserError, match="profile 'x'"):
        T.score_tasks("x")
