"""Brandfonbrener et al. 2024, "Loss-to-Loss Prediction: Scaling Laws for All Datasets" (arXiv:2411.12925).

Their 529-model sweep over six training sets (registry ``loss-to-loss-sweep``; the repository has no licence,
so it is read from the data mirror and never copied) reproduced with ``scalinglab.downstream.loss_to_loss``:
the train-to-train and train-to-test tables from FineWeb-Edu (E0, E1 from their released Kaplan-style fits, as
their notebooks take them), the translation experiment (a law fitted on one set, carried to another through a
train-to-train fit on the ~20-tokens-per-parameter models, scored by R² on the target's whole sweep, against
that target's own fit to the same few models), and the 1e21-FLOP models predicted with intervals. The
published numbers are the LaTeX rows their notebooks print (``loss_relationships.ipynb`` cells 32 and 34,
``translation_experiment.ipynb`` cell 24), rounded as printed.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from scalinglab.downstream import loss_to_loss as T
from scalinglab.fitting.laws import fit_law

SOURCE = "fineweb-edu-100b"
NAMES = {"fineweb-100b": "FineWeb", "fineweb-edu-100b": "FineWeb-Edu", "proof-pile-2": "ProofPile 2",
         "slimpajama-chunk1": "SlimPajama", "smollm-corpus": "SmolLM Corpus", "starcoder": "StarCoder"}
TESTS = {"hellaswag": "HellaSwag", "arc_easy": "ARC-Easy", "mmlu_humanities": "MMLU-Humanities",
         "mmlu_stem": "MMLU-STEM"}

# (kappa, K, E0, E1) as printed.
TRAIN_TO_TRAIN = {"fineweb-100b": (1.00, 1.01, 1.97, 2.17), "proof-pile-2": (1.07, 0.60, 1.97, 1.32),
                  "slimpajama-chunk1": (0.97, 1.05, 1.97, 1.97), "smollm-corpus": (1.01, 1.07, 1.97, 1.53),
                  "starcoder": (1.10, 0.63, 1.97, 0.85)}
TRAIN_TO_TEST = {"hellaswag": (1.08, 0.93, 1.97, 2.12), "arc_easy": (0.36, 4.68, 1.97, 0.07),
                 "mmlu_humanities": (0.96, 1.14, 1.97, 2.79), "mmlu_stem": (0.53, 2.35, 1.97, 1.41)}
# R² on the target's sweep: skyline (its own fit to all its models), ours (mean over the 5 sources), baseline.
TRANSLATION = {"fineweb-100b": (0.992, 0.990, 0.961), "fineweb-edu-100b": (0.992, 0.990, 0.953),
               "proof-pile-2": (0.988, 0.988, 0.928), "slimpajama-chunk1": (0.992, 0.991, 0.975),
               "smollm-corpus": (0.992, 0.991, 0.947), "starcoder": (0.987, 0.986, 0.450)}


def test_key(task: str) -> str:
    return f"eval/downstream_ce_loss/{task}_test_ce_loss"


def load() -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(sweep, the 1e21 models, their Kaplan-style fits)."""
    from scalinglab import data

    fits = data.load("loss-to-loss-fits")
    return data.load("loss-to-loss-sweep"), data.load("loss-to-loss-extrapolation"), fits[fits["kaplan"]]


def floor(fits: pd.DataFrame, dataset: str, key: str) -> float:
    """E of their Kaplan-style fit of ``key`` on ``dataset``'s sweep."""
    return float(fits[(fits["data"] == dataset) & (fits["loss_name"] == key)]["E"].iloc[0])


def _row(l2l: T.LossToLoss, published, name: str, big_x: float, big_y: float, n_boot: int, seed: int,
         level: float) -> dict[str, Any]:
    point, lo, hi = T.extrapolation_interval(l2l, big_x, n_boot=n_boot, seed=seed, level=level)
    rounded = (round(l2l.kappa, 2), round(l2l.K, 2), round(l2l.E0, 2), round(l2l.E1, 2))
    return {"target": name, "kappa": l2l.kappa, "K": l2l.K, "E0": l2l.E0, "E1": l2l.E1, "r2": l2l.r2,
            "n_pairs": l2l.n_pairs, "published": list(published),
            "match": all(abs(a - b) < 0.005 + 1e-9 for a, b in zip(rounded, published)),
            "max_diff": max(abs(a - b) for a, b in zip((l2l.kappa, l2l.K, l2l.E0, l2l.E1), published)),
            "big_pred": point, "big_lower": lo, "big_upper": hi, "big_actual": big_y,
            "big_rel_error": (point - big_y) / big_y, "big_inside": bool(lo <= big_y <= hi)}


def tables(*, n_boot: int = 500, seed: int = 0, level: float = 0.95) -> dict[str, pd.DataFrame]:
    """Train-to-train (5 targets) and train-to-test (4 test sets) from FineWeb-Edu, each with the 1e21 model's
    prediction and its interval (model pairs resampled)."""
    sweep, big, fits = load()
    e0 = floor(fits, SOURCE, "val_loss")
    bx = float(big[big["data"] == SOURCE]["val_loss"].iloc[0])
    tt = []
    for t, pub in TRAIN_TO_TRAIN.items():
        p = T.pair(sweep, SOURCE, t)
        f = T.fit_loss_to_loss(p["x"], p["y"], e0, floor(fits, t, "val_loss"), source=NAMES[SOURCE],
                               target=NAMES[t])
        tt.append(_row(f, pub, NAMES[t], bx, float(big[big["data"] == t]["val_loss"].iloc[0]), n_boot, seed, level))
    own = sweep[sweep["data"] == SOURCE]
    ts = []
    for t, pub in TRAIN_TO_TEST.items():
        k = test_key(t)
        f = T.fit_loss_to_loss(own["val_loss"], own[k], e0, floor(fits, SOURCE, k), source=NAMES[SOURCE],
                               target=TESTS[t])
        ts.append(_row(f, pub, TESTS[t], bx, float(big[big["data"] == SOURCE][k].iloc[0]), n_boot, seed, level))
    return {"train_to_train": pd.DataFrame(tt), "train_to_test": pd.DataFrame(ts)}


def small_models(sweep: pd.DataFrame) -> pd.DataFrame:
    """Their ``chinchilla_df``: about 20 tokens per parameter (16 < D/N < 23), the 20-layer duplicates dropped."""
    return sweep[(sweep["data_ratio"] > 16) & (sweep["data_ratio"] < 23) & (sweep["n_layers"] != 20)]


def translation(datasets=None) -> pd.DataFrame:
    """R² on each target's whole sweep: its own law (skyline), laws translated from each other set (ours), and
    its own law fitted to its ~20-tokens-per-parameter models only (baseline)."""
    sweep, _, _ = load()
    small = small_models(sweep)
    names = list(datasets or NAMES)

    def law_on(df):
        return fit_law(T.KAPLAN_E, {"n": df["params"], "d": df["tokens"]}, df["val_loss"]).params

    own = {d: law_on(sweep[sweep["data"] == d]) for d in names}
    rows = []
    for d2 in names:
        full = sweep[sweep["data"] == d2]
        r2 = lambda p: T.r_squared(p, full["params"], full["tokens"], full["val_loss"])  # noqa: E731
        translated = []
        for d1 in names:
            if d1 != d2:
                p = T.pair(small, d1, d2)
                # E1 fitted, as theirs (fit_ey=True): the target's own floor is not known from a few models.
                f = T.fit_loss_to_loss(p["x"], p["y"], float(own[d1]["E"]), None)
                translated.append(r2(T.translate(own[d1], f)))
        sky, base = r2(own[d2]), r2(law_on(small[small["data"] == d2]))
        pub = TRANSLATION.get(d2, (np.nan,) * 3)
        rows.append({"target": NAMES[d2], "skyline": sky, "ours_mean": float(np.mean(translated)),
                     "ours_min": float(np.min(translated)), "baseline": base, "n_sources": len(translated),
                     "published_skyline": pub[0], "published_ours": pub[1], "published_baseline": pub[2]})
    return pd.DataFrame(rows)
