"""SLDBench (Lin et al. 2025, "Can Language Models Discover Scaling Laws?", arXiv:2507.21184) on its own split
and metric: our laws beside the human-designed laws' published R².

Splits are transcribed from the benchmark's loaders at github.com/linhaowei1/SLD@61c9d591 (``data/*_loader.py``);
the metric from its evaluator: fit on the training rows, predict the test rows, R² = 1 − NMSE with
NMSE = MSE_test / Var(y_test) (the normaliser from later versions, under which the baselines were scored);
``r2_v0`` divides by the variance of the test and training targets together (the evaluator at 61c9d591).

The baselines (Harbor's SLDBench adapter, "Oracle Results (Human Expert Baseline)") were scored on the Hugging
Face copy of the data, which later versions use and which is not mirrored; the staged files are the older
ones, so a baseline need not carry over exactly (the lr task's least of all).

The data-constrained task is scored twice: with its columns as published (``unique_tokens`` read as U and
``tokens`` as D, as the file labels them) and corrected (the two swapped back; ``data.readers``). Tasks whose
forms neither the registry nor ``benchmark.forms`` has (lr/batch size, domain mixture) are listed as out of
scope with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from scalinglab.serialization import to_jsonable

# Published human-law R² per task (Harbor adapter parity README, Oracle Results; Lin et al. 2025's baselines).
BASELINE_R2 = {"data_constrained": 0.911, "domain_mixture": 0.671, "lr_bsz": -0.076, "moe": 0.703, "sft": 0.957,
               "vocab": 0.966}
OUT_OF_SCOPE = {
    "lr_bsz": "needs a law in learning rate and batch size (StepFun's), which neither registry has; its 117 test "
              "rows (D = 1e13) also look mis-entered",
    "domain_mixture": "five mixture proportions to five domain losses: a multi-output mixture law neither "
                      "registry has",
}
SFT_FILES = ("flan", "gigaword", "wikiword")


def data_constrained_test(unique_tokens_published, params) -> np.ndarray:
    """The loader's test rows: the published ``unique_tokens`` at or above its second-largest value, or
    ``params`` at or above its second-largest (21 of 182 rows)."""
    u = np.asarray(unique_tokens_published, float)
    n = np.asarray(params, float)
    return (u >= np.unique(u)[-2]) | (n >= np.unique(n)[-2])


def r2_scores(y_test, pred, y_train) -> tuple[float, float]:
    """(R², R² with the old normaliser): 1 − MSE/Var(y_test), and 1 − MSE/Var(y_test ∪ y_train)."""
    y_test, pred = np.asarray(y_test, float), np.asarray(pred, float)
    mse = float(np.mean((pred - y_test) ** 2))
    both = np.concatenate([y_test, np.asarray(y_train, float)])
    return 1.0 - mse / float(np.var(y_test)), 1.0 - mse / float(np.var(both))


@dataclass(frozen=True)
class Task:
    """One task's rows as (inputs by role, target) for fitting and testing; ``groups``: one fit per group (the
    fine-tuning task fits each model × dataset curve alone)."""

    name: str
    variant: str
    train: dict[str, np.ndarray]
    test: dict[str, np.ndarray]
    laws: tuple[str, ...]
    groups: tuple[np.ndarray, np.ndarray] | None = None   # (train labels, test labels)


def _rows(df: pd.DataFrame, roles: dict[str, str], target: str) -> dict[str, np.ndarray]:
    out = {role: df[col].to_numpy(float) for role, col in roles.items()}
    out["y"] = df[target].to_numpy(float)
    return out


def tasks(*, sft_files=SFT_FILES) -> list[Task]:
    """The SLDBench tasks the benchmark scores, on the loaders' splits; ``sft_files``: the fine-tuning files
    read (none: no fine-tuning task)."""
    from scalinglab import data

    out = []
    dc = data.load("sldbench-data-constrained")
    test = data_constrained_test(dc["unique_tokens_as_published"], dc["params"])
    for variant, d_col, u_col in (("as published", "tokens_as_published", "unique_tokens_as_published"),
                                  ("corrected", "tokens", "unique_tokens")):
        roles = {"n": "params", "d": d_col, "u": u_col}
        out.append(Task("data_constrained", variant, _rows(dc[~test], roles, "loss"), _rows(dc[test], roles, "loss"),
                        ("chinchilla", "data_constrained", "kaplan")))
    moe = data.load("sldbench-moe")
    moe = moe[moe["step"] == 249000]
    test = moe["dense_parameter_count"] == moe["dense_parameter_count"].max()
    roles = {"n": "dense_parameter_count", "x": "num_experts"}
    out.append(Task("moe", "", _rows(moe[~test], roles, "loss_validation"), _rows(moe[test], roles, "loss_validation"),
                    ("moe_bilinear",)))
    vocab = data.load("sldbench-vocab").assign(vocab_params=lambda t: t["vocab_size"] * t["embed_dim"])
    test = vocab["vocab_size"] == vocab["vocab_size"].max()
    roles = {"n": "Non_vocab_parameters", "x": "vocab_params", "d": "num_characters"}
    out.append(Task("vocab", "", _rows(vocab[~test], roles, "Lossu"), _rows(vocab[test], roles, "Lossu"), ("vocab",)))
    long = []
    for f in sft_files:
        wide = data.load(f"sldbench-sft-{f}")
        sizes = [c for c in wide.columns if c not in ("model", "0")]
        for _, r in wide.iterrows():
            long += [{"group": f"{r['model']}|{f}", "x": float(s), "y": float(r[s])} for s in sizes]
    if not long:   # no fine-tuning files asked for
        return out
    sft = pd.DataFrame(long)
    test = sft["x"] == sft["x"].max()
    out.append(Task("sft", "", _rows(sft[~test], {"x": "x"}, "y"), _rows(sft[test], {"x": "x"}, "y"),
                    ("rectified", "saturating"),
                    (sft.loc[~test, "group"].to_numpy(), sft.loc[test, "group"].to_numpy())))
    return out


def _law(name: str):
    from scalinglab.benchmark.forms import TASK_LAWS
    from scalinglab.fitting import laws

    return TASK_LAWS[name] if name in TASK_LAWS else laws.get(name)


def _fit_predict(law, train: dict, test: dict) -> np.ndarray:
    from scalinglab.fitting.laws import fit_law

    inputs = {k: v for k, v in train.items() if k in law.inputs}
    fit = fit_law(law, inputs, train["y"])
    return fit.predict({k: v for k, v in test.items() if k in law.inputs})


def score_task(task: Task, law_name: str) -> dict[str, Any]:
    """One law on one task: its R² (and the old normaliser's) on the test rows, fitted on the training rows
    (per group where the task has groups)."""
    law = _law(law_name)
    if task.groups is None:
        pred = _fit_predict(law, task.train, task.test)
    else:
        tr, te = task.groups
        pred = np.full(len(task.test["y"]), np.nan)
        for g in np.unique(te):
            a, b = tr == g, te == g
            pred[b] = _fit_predict(law, {k: v[a] for k, v in task.train.items()},
                                   {k: v[b] for k, v in task.test.items()})
    r2, r2_v0 = r2_scores(task.test["y"], pred, task.train["y"])
    return {"task": task.name, "variant": task.variant, "law": law_name, "r2": r2, "r2_v0": r2_v0,
            "n_train": len(task.train["y"]), "n_test": len(task.test["y"])}


@dataclass(frozen=True)
class SLDBenchResult:
    """Every scored (task, variant, law), the best per task beside its published baseline, and the tasks left
    out with why."""

    rows: tuple[dict[str, Any], ...]
    out_of_scope: dict[str, str] = field(default_factory=lambda: dict(OUT_OF_SCOPE))

    def best(self) -> dict[str, dict[str, Any]]:
        """{task (variant appended where there are two): {"r2", "baseline_r2", "law", "r2_v0"}}."""
        out: dict[str, dict[str, Any]] = {}
        for r in self.rows:
            key = r["task"] + (f" ({r['variant']})" if r["variant"] else "")
            if key not in out or r["r2"] > out[key]["r2"]:
                out[key] = {"r2": r["r2"], "r2_v0": r["r2_v0"], "law": r["law"],
                            "baseline_r2": BASELINE_R2[r["task"]]}
        return out

    def to_dict(self) -> dict[str, Any]:
        return to_jsonable({"rows": list(self.rows), "best": self.best(), "out_of_scope": self.out_of_scope,
                            "baselines": BASELINE_R2})

    def summary(self) -> str:
        lines = [f"{'task':<34}{'best law':<18}{'R2':>8}{'R2 (v0)':>9}{'baseline':>10}"]
        for k, b in self.best().items():
            lines.append(f"{k:<34}{b['law']:<18}{b['r2']:>8.3f}{b['r2_v0']:>9.3f}{b['baseline_r2']:>10.3f}")
        lines += [f"{k:<34}out of scope: {v}" for k, v in self.out_of_scope.items()]
        return "\n".join(lines)


def run(*, sft_files=SFT_FILES, only: tuple[str, ...] | None = None) -> SLDBenchResult:
    """Every in-scope task with each of its laws; ``only``: those task names."""
    rows = []
    for task in tasks(sft_files=sft_files):
        if only and task.name not in only:
            continue
        rows += [score_task(task, name) for name in task.laws]
    return SLDBenchResult(tuple(rows))
