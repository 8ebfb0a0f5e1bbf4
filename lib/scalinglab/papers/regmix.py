"""RegMix (Liu et al. 2024, "RegMix: Data Mixture as Regression for Language Model Pre-training",
arXiv:2407.01492): a regression from the 17 Pile domains' mixture weights to one domain's validation loss,
fitted on 512 1M-parameter proxy runs, scored by Spearman's ρ on 256 unseen mixtures at 1M, then on the same
mixtures trained at 60M (does the small-model regression rank the larger models' mixtures the same?).

Three regressions per target domain, each on the 512 training mixtures:

- ``lightgbm_published``: the repository's notebook (``regression_fitting/regression.ipynb``) as it ran:
  ``LGBM_PARAMS``, early stopping after 3 rounds without improvement **on the test mixtures**. It is what the
  published ρ came from, so it is the reproduction; but the number of rounds was chosen on the data it is then
  scored on.
- ``lightgbm``: the same model with the number of rounds chosen by 5-fold cross-validation over the training
  mixtures (same patience), then refitted on all 512: no test mixture is seen before scoring. The headline.
- ``linear``: ordinary least squares on an intercept and the 17 weights. The paper compares a linear
  regression; the repository has none, so this one is ours (the mirror's PROVENANCE.md gives the same numbers).

LightGBM is run deterministically (``deterministic``, one thread, row-wise histograms, seed 42), so its numbers
do not move with the machine's core count. The intervals are over test mixtures (``papers.regmix_ranks``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from scalinglab.errors import UserError
from scalinglab.papers import regmix_ranks as ranks
from scalinglab.serialization import to_jsonable

# The weight columns, in the files' order (train_the_pile_<domain>), and the 13 domains with a loss.
DOMAINS = ("arxiv", "freelaw", "nih_exporter", "pubmed_central", "wikipedia_en", "dm_mathematics", "github",
           "philpapers", "stackexchange", "enron_emails", "gutenberg_pg_19", "pile_cc", "ubuntu_irc", "europarl",
           "hackernews", "pubmed_abstracts", "uspto_backgrounds")
TARGETS = ("arxiv", "freelaw", "pubmed_central", "wikipedia_en", "dm_mathematics", "github", "stackexchange",
           "gutenberg_pg_19", "pile_cc", "ubuntu_irc", "hackernews", "pubmed_abstracts", "uspto_backgrounds")
TARGET = "pile_cc"   # the paper's optimisation target
# The notebook's printed output (cell 13): Spearman ρ × 100 of the LightGBM predictions on the 256 1M test
# mixtures, per target domain.
PUBLISHED_LGBM = {"arxiv": 99.60, "freelaw": 99.71, "pubmed_central": 99.08, "wikipedia_en": 99.45,
                  "dm_mathematics": 97.20, "github": 99.77, "stackexchange": 99.73, "gutenberg_pg_19": 99.18,
                  "pile_cc": 98.92, "ubuntu_irc": 96.87, "hackernews": 98.51, "pubmed_abstracts": 99.19,
                  "uspto_backgrounds": 99.12}
# The notebook's hyper_params, then what makes LightGBM reproducible across machines (the notebook left
# threads at their default; on these 512 rows the numbers agree to two decimals either way).
LGBM_PARAMS = {"task": "train", "boosting_type": "gbdt", "objective": "regression", "metric": ["l1", "l2"],
               "num_iterations": 1000, "seed": 42, "learning_rate": 1e-2, "verbosity": -1,
               "deterministic": True, "num_threads": 1, "force_row_wise": True}
PATIENCE = 3         # the notebook's early_stopping(stopping_rounds=3)
CV_FOLDS = 5
REGRESSIONS = ("lightgbm", "lightgbm_published", "linear")
PROFILES = {"full": {"targets": TARGETS, "n_boot": 2000},
            "smoke": {"targets": ("pile_cc", "ubuntu_irc"), "n_boot": 200}}


@dataclass(frozen=True)
class RegmixData:
    """Weights (rows: mixtures, columns: ``DOMAINS``) and losses (columns: ``TARGETS``) of the three sets."""

    x_train: np.ndarray
    y_train: pd.DataFrame
    x_test: np.ndarray
    y_test_1m: pd.DataFrame
    y_test_60m: pd.DataFrame


def _joined(mix_name: str, loss_name: str, mix: pd.DataFrame | None = None, loss: pd.DataFrame | None = None):
    from scalinglab import data

    mix = data.load(mix_name) if mix is None else mix
    loss = data.load(loss_name) if loss is None else loss
    wcols = [f"train_the_pile_{d}" for d in DOMAINS]
    lcols = [f"metric/the_pile_{d}_val_loss" for d in TARGETS]
    for name, df, cols in ((mix_name, mix, wcols), (loss_name, loss, lcols)):
        missing = [c for c in ["index", *cols] if c not in df.columns]
        if missing:
            raise UserError(f"{name}: no column {missing[0]!r}")
    if not np.array_equal(mix["index"].to_numpy(), loss["index"].to_numpy()):
        raise UserError(f"{mix_name} and {loss_name}: their 'index' columns differ, so rows cannot be paired")
    x = mix[wcols].to_numpy(float)
    y = loss[lcols].set_axis(list(TARGETS), axis=1).astype(float)
    for name, arr in ((mix_name, x), (loss_name, y.to_numpy())):
        bad = np.argwhere(~np.isfinite(arr))
        if bad.size:
            raise UserError(f"{name}: row {int(bad[0][0]) + 1} has a missing or infinite value")
    if (x < 0).any() or (np.abs(x.sum(axis=1) - 1) > 0.01).any():
        row = int(np.argmax((x < 0).any(axis=1) | (np.abs(x.sum(axis=1) - 1) > 0.01)))
        raise UserError(f"{mix_name}: row {row + 1}'s weights are negative or do not sum to 1 (within 0.01)")
    return x, y


def load() -> RegmixData:
    """The registered files (``regmix-*``), each mixture file joined to its loss file on ``index``."""
    x_train, y_train = _joined("regmix-train-mixture-1m", "regmix-train-loss-1m")
    x_test, y_1m = _joined("regmix-test-mixture-1m", "regmix-test-loss-1m")
    x_60, y_60 = _joined("regmix-test-mixture-60m", "regmix-test-loss-60m")
    if not np.array_equal(x_test, x_60):
        raise UserError("regmix-test-mixture-60m: its mixtures differ from regmix-test-mixture-1m's")
    return RegmixData(x_train, y_train, x_test, y_1m, y_60)


# --- the regressions ---------------------------------------------------------------------------------------

def fit_linear(x, y):
    """OLS on an intercept and the weights; returns predict(x)."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    coef, *_ = np.linalg.lstsq(np.column_stack([np.ones(len(x)), x]), y, rcond=None)
    return lambda z: np.column_stack([np.ones(len(z)), np.asarray(z, float)]) @ coef


def _lgb():
    try:
        import lightgbm
    except ImportError as exc:   # the [mixture] extra
        raise UserError("RegMix's regression needs lightgbm: pip install 'scalinglab[mixture]'") from exc
    return lightgbm


def fit_lightgbm(x, y, *, rounds: int | None = None, stop_on=None, params=None):
    """LightGBM on (x, y): ``rounds`` boosting rounds; or, with ``stop_on=(x_eval, y_eval)``, early stopping
    on that set (the notebook's way). Returns (predict(x), rounds used)."""
    lgb = _lgb()
    p = dict(LGBM_PARAMS if params is None else params)
    if rounds is not None:
        p["num_iterations"] = int(rounds)
    train = lgb.Dataset(np.asarray(x, float), np.asarray(y, float))
    if stop_on is None:
        booster = lgb.train(p, train)
        used = booster.current_iteration()
    else:
        valid = lgb.Dataset(np.asarray(stop_on[0], float), np.asarray(stop_on[1], float), reference=train)
        booster = lgb.train(p, train, valid_sets=[valid],
                            callbacks=[lgb.early_stopping(PATIENCE, verbose=False)])
        used = booster.best_iteration
    return (lambda z: booster.predict(np.asarray(z, float), num_iteration=used)), int(used)


def cv_rounds(x, y, *, folds: int = CV_FOLDS, params=None) -> int:
    """Boosting rounds chosen on the training mixtures alone: LightGBM's k-fold CV (folds by mixture, seeded),
    stopped after ``PATIENCE`` rounds without improvement of the mean held-out l2."""
    lgb = _lgb()
    p = dict(LGBM_PARAMS if params is None else params)
    p["metric"] = "l2"
    out = lgb.cv(p, lgb.Dataset(np.asarray(x, float), np.asarray(y, float)), nfold=folds, stratified=False,
                 shuffle=True, seed=p.get("seed", 42), callbacks=[lgb.early_stopping(PATIENCE, verbose=False)])
    return len(next(iter(out.values())))


def predictions(d: RegmixData, target: str) -> dict[str, dict[str, Any]]:
    """Each regression's predictions for the 256 test mixtures, fitted on the 512 training mixtures."""
    if target not in TARGETS:
        raise UserError(f"RegMix target {target!r}: expected one of {', '.join(TARGETS)}")
    y = d.y_train[target].to_numpy()
    rounds = cv_rounds(d.x_train, y)
    lgbm, _ = fit_lightgbm(d.x_train, y, rounds=rounds)
    pub, pub_rounds = fit_lightgbm(d.x_train, y, stop_on=(d.x_test, d.y_test_1m[target].to_numpy()))
    return {"lightgbm": {"pred": lgbm(d.x_test), "rounds": rounds},
            "lightgbm_published": {"pred": pub(d.x_test), "rounds": pub_rounds},
            "linear": {"pred": fit_linear(d.x_train, y)(d.x_test), "rounds": None}}


# --- the study -----------------------------------------------------------------------------------------------

def score_target(d: RegmixData, target: str, *, n_boot: int, seed: int = 0, level: float = 0.95,
                 preds: dict | None = None) -> dict:
    """One target domain: each regression's ρ at 1M and 60M with intervals, the transfer drop (ρ at 1M − ρ at
    60M, paired), and the ceiling (the true 1M losses' ρ with the true 60M losses). ``preds``: the target's
    ``predictions`` when already made."""
    preds = predictions(d, target) if preds is None else preds
    y1, y60 = d.y_test_1m[target].to_numpy(), d.y_test_60m[target].to_numpy()
    idx = ranks.resamples(len(y1), n_boot, seed)   # one draw of mixtures for every score of this target

    def ci(a, b):
        return ranks.spearman_interval(a, b, idx=idx, level=level)

    out: dict[str, Any] = {"published_lightgbm": PUBLISHED_LGBM[target] / 100}
    for name, p in preds.items():
        out[name] = {"rho_1m": ci(p["pred"], y1), "rho_60m": ci(p["pred"], y60), "rounds": p["rounds"],
                     "drop": ranks.paired_difference(p["pred"], y1, p["pred"], y60, idx=idx, level=level)}
    out["ceiling_1m_60m"] = ci(y1, y60)
    out["lightgbm_minus_published"] = out["lightgbm_published"]["rho_1m"]["rho"] - out["published_lightgbm"]
    return out


def best_pick(d: RegmixData, pred: np.ndarray, target: str = TARGET) -> dict:
    """The test mixture the regression ranks best (lowest predicted loss) and where it ranks among the 256 by
    actual loss at 1M and at 60M (1 = lowest loss)."""
    i = int(np.argmin(pred))
    r1 = int((d.y_test_1m[target].to_numpy() < d.y_test_1m[target].iloc[i]).sum()) + 1
    r60 = int((d.y_test_60m[target].to_numpy() < d.y_test_60m[target].iloc[i]).sum()) + 1
    return {"index": i + 1, "rank_1m": r1, "rank_60m": r60, "n": len(pred),
            "weight_pile_cc": float(d.x_test[i, DOMAINS.index("pile_cc")])}


@dataclass(frozen=True)
class RegmixResult:
    """Per target domain: each regression's ρ on the 1M and 60M test mixtures (intervals over mixtures), the
    published ρ, the ceiling; the target's best pick; the target's predictions for the figure."""

    profile: str
    targets: dict[str, dict[str, Any]]
    pick: dict[str, Any]
    target_ranks: dict[str, np.ndarray] = field(repr=False, default_factory=dict)
    level: float = 0.95

    def table(self) -> pd.DataFrame:
        rows = []
        for t, s in self.targets.items():
            rows.append({"domain": t, "published": s["published_lightgbm"] * 100,
                         "lgbm_published_way": s["lightgbm_published"]["rho_1m"]["rho"] * 100,
                         "lgbm_cv": s["lightgbm"]["rho_1m"]["rho"] * 100,
                         "lgbm_cv_60m": s["lightgbm"]["rho_60m"]["rho"] * 100,
                         "linear": s["linear"]["rho_1m"]["rho"] * 100,
                         "linear_60m": s["linear"]["rho_60m"]["rho"] * 100,
                         "ceiling_1m_60m": s["ceiling_1m_60m"]["rho"] * 100})
        return pd.DataFrame(rows).set_index("domain")

    def max_reproduction_gap(self) -> float:
        """Largest |ours (the notebook's way) − published|, in points of ρ × 100, over the domains scored."""
        return max(abs(s["lightgbm_minus_published"]) * 100 for s in self.targets.values())

    def headline(self) -> dict[str, Any]:
        """What a notebook's summary.json keeps: per domain ρ × 100 (published, ours the notebook's way, ours with
        CV rounds at 1M and 60M with the 60M interval, linear, the ceiling), the largest gaps to the published,
        Pile-CC's transfer and the best pick."""
        per = {}
        for d, row in self.table().round(2).iterrows():
            ci = self.targets[d]["lightgbm"]["rho_60m"]
            per[d] = {"published": row["published"], "ours_notebook_way": row["lgbm_published_way"],
                      "ours_cv": row["lgbm_cv"], "ours_cv_60m": row["lgbm_cv_60m"],
                      "cv_60m_lo": round(100 * ci["lo"], 2), "cv_60m_hi": round(100 * ci["hi"], 2),
                      "linear": row["linear"], "linear_60m": row["linear_60m"], "ceiling_1m_60m": row["ceiling_1m_60m"]}
        out: dict[str, Any] = {
            "per_domain": per, "max_reproduction_gap": round(self.max_reproduction_gap(), 2),
            "max_cv_gap": round(max(abs(v["ours_cv"] - v["published"]) for v in per.values()), 2),
            "interval_unit": "test mixtures (bias-corrected bootstrap; regression held fixed)", "pick": self.pick}
        if TARGET in self.targets:
            a, b = self.targets[TARGET]["lightgbm"]["rho_60m"], self.targets[TARGET]["lightgbm"]["drop"]
            out["pile_cc_transfer"] = {"rho_60m": a["rho"] * 100, "lo": a["lo"] * 100, "hi": a["hi"] * 100,
                                       "drop": b["diff"] * 100, "drop_lo": b["lo"] * 100, "drop_hi": b["hi"] * 100}
        return to_jsonable(out)

    def to_dict(self) -> dict[str, Any]:
        return to_jsonable({"profile": self.profile, "level": self.level, "targets": self.targets,
                            "pick": self.pick, "max_reproduction_gap": self.max_reproduction_gap(),
                            "interval_unit": "test mixtures (bias-corrected bootstrap; regression held fixed)"})

    def summary(self) -> str:
        t = self.table().round(2)
        s = self.targets.get(TARGET)
        lines = ["RegMix: Spearman ρ × 100 on the 256 test mixtures (regressions fitted on 512 1M runs)",
                 t.to_string(), f"largest gap to the published ρ (notebook's way): {self.max_reproduction_gap():.2f}"]
        if s is not None:
            a, b = s["lightgbm"]["rho_60m"], s["lightgbm"]["drop"]
            lines.append(f"{TARGET}, LightGBM (CV rounds) at 60M: {100 * a['rho']:.2f} "
                         f"[{100 * a['lo']:.2f}, {100 * a['hi']:.2f}]; 1M − 60M: {100 * b['diff']:.2f} "
                         f"[{100 * b['lo']:.2f}, {100 * b['hi']:.2f}] ({self.level:.0%}, over test mixtures)")
            p = self.pick
            lines.append(f"best predicted test mixture #{p['index']}: rank {p['rank_1m']} of {p['n']} at 1M, "
                         f"{p['rank_60m']} at 60M")
        return "\n".join(lines)


def reproduce(profile: str = "full", *, seed: int = 0, level: float = 0.95, data: RegmixData | None = None
              ) -> RegmixResult:
    """The study on the registered files. ``full``: all 13 target domains, 2,000 resamples; ``smoke``: Pile-CC
    and Ubuntu IRC, 200 resamples (the same point estimates for those two; only the intervals are coarser)."""
    if profile not in PROFILES:
        raise UserError(f"profile {profile!r}: expected one of {', '.join(PROFILES)}")
    cfg = PROFILES[profile]
    d = load() if data is None else data
    targets, preds = {}, None
    for t in cfg["targets"]:
        p = predictions(d, t)
        targets[t] = score_target(d, t, n_boot=cfg["n_boot"], seed=seed, level=level, preds=p)
        if t == TARGET:
            preds = p["lightgbm"]["pred"]
    pick = best_pick(d, preds) if preds is not None else {}
    ranks_ = {}
    if preds is not None:
        from scipy.stats import rankdata

        ranks_ = {"predicted": rankdata(preds), "actual_1m": rankdata(d.y_test_1m[TARGET]),
                  "actual_60m": rankdata(d.y_test_60m[TARGET])}
    return RegmixResult(profile, targets, pick, ranks_, level)


def plot_rank_agreement(result: RegmixResult, ax=None):
    """Two panels: Pile-CC's predicted rank against its actual rank at 60M (each point a test mixture), and ρ
    per domain, ours (LightGBM, CV rounds; linear) beside the published. ``ax``: a pair of axes, or None for a
    new figure. Returns the figure."""
    import matplotlib.pyplot as plt

    if ax is None:
        fig, ax = plt.subplots(1, 2, figsize=(11, 4.2))
    else:
        fig = ax[0].figure
    left, right = ax
    r = result.target_ranks
    if r:
        left.scatter(r["predicted"], r["actual_60m"], s=8, alpha=0.6, label="60M actual")
        left.plot([1, len(r["predicted"])], [1, len(r["predicted"])], color="grey", lw=0.8)
        rho = result.targets[TARGET]["lightgbm"]["rho_60m"]["rho"]
        left.set(xlabel="rank predicted by the 1M regression (LightGBM)", ylabel="rank by actual loss at 60M",
                 title=f"Pile-CC: the 1M regression on 60M models (ρ = {rho:.3f})")
    t = result.table()
    y = np.arange(len(t))
    right.scatter(t["published"], y, marker="x", color="k", label="published (LightGBM)", zorder=3)
    right.scatter(t["lgbm_cv"], y, label="LightGBM, rounds by CV (1M)")
    right.scatter(t["lgbm_cv_60m"], y, marker="s", facecolors="none", edgecolors="C1",
                  label="same regression, 60M losses")
    right.scatter(t["linear"], y, marker="^", color="C2", label="linear (1M)")
    right.set_yticks(y, t.index)
    right.set(xlabel="Spearman ρ × 100 on the 256 test mixtures", title="per domain: ours and published")
    right.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2)
    fig.tight_layout()
    return fig
