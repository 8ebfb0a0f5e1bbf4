"""Bhagia et al. 2024's OLMo ladder as tables: every evaluation of the 16 ladder runs and the two targets.

The registry holds one CSV per run (``olmo-ladder-<size>-<mult>xc``). ``evaluations()`` stacks them into one
long table with the chain's columns: ``run``, ``n`` (non-embedding parameters), ``flops_per_token`` (OLMo's
forward + backward count, attention included: not 6N), ``d`` (tokens so far), ``c`` = d·flops_per_token, and
per task ``<task>_loss`` (bits per byte of the correct continuation, 5-shot RC), ``<task>_acc`` (length-normalised
accuracy), ``<task>_prob`` (the correct answer's probability) and ``<task>_logprob``. MMLU is the authors' weighted
average of its four test categories. ``step1_points``/``step2_points``/``target_rows`` apply the authors'
procedure (their ``src/scaling/utils.py``): the mean of each run's last five evaluations for step 1; every
evaluation after the first 10%, smoothed by a five-point trailing mean, for step 2.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

# The eight tasks of the paper's main set (``v2_main``): our name -> (their key, display name, chance accuracy).
# Chance is the start of step 2's fit (their ``task_minimum``: 0.25 unless listed).
TASKS: dict[str, tuple[str, str, float]] = {
    "mmlu": ("mmlu_avg_test", "MMLU", 0.25),
    "hellaswag": ("hellaswag_val", "HellaSwag", 0.25),
    "piqa": ("piqa_val", "PIQA", 0.5),
    "socialiqa": ("socialiqa_val", "SocialIQa", 1 / 3),
    "arc_challenge": ("arc_challenge_test", "ARC-Challenge", 0.25),
    "arc_easy": ("arc_easy_test", "ARC-Easy", 0.25),
    "csqa": ("csqa_val", "CSQA", 0.2),
    "openbookqa": ("openbookqa_test", "OpenBookQA", 0.25),
}
# Their WEIGHT_BY_KEY: MMLU's categories weighted by their share of test questions.
MMLU_WEIGHTS = {"mmlu_stem_test": 0.215, "mmlu_humanities_test": 0.335, "mmlu_social_sciences_test": 0.219,
                "mmlu_other_test": 0.231}

SIZES = {"190M": (190_354_176, 1_903_391_232), "370M": (371_262_464, 3_443_922_944),
         "760M": (758_220_288, 6_373_843_968), "1.3B": (1_279_395_840, 10_109_071_360)}
MULTS = (1, 2, 5, 10)


@dataclass(frozen=True)
class Target:
    name: str          # "7B" or "13B"
    dataset: str       # registry name
    n: float           # non-embedding parameters
    d: float           # tokens at the final checkpoint (the authors' -d argument)
    flops_per_token: float


TARGETS = {"7B": Target("7B", "olmo-ladder-target-7b", 6_887_575_552, 3_945_065_873_408, 49_412_071_424),
           "13B": Target("13B", "olmo-ladder-target-13b", 13_202_396_160, 5_000_088_518_656, 91_335_915_520)}


def run_name(size: str, mult: int) -> str:
    return f"{size}-{mult}xC"


def _dataset(size: str, mult: int) -> str:
    return f"olmo-ladder-{size.replace('1.3B', '1B').lower()}-{mult}xc"


def _columns(raw: pd.DataFrame) -> pd.DataFrame:
    """One raw export's task columns renamed to ``<task>_loss``/``_acc``/``_prob``/``_logprob``."""
    out = {}
    for task, (key, _, _) in TASKS.items():
        subs = list(MMLU_WEIGHTS) if key == "mmlu_avg_test" else [key]
        w = np.array([MMLU_WEIGHTS.get(s, 1.0) for s in subs])
        for suffix, (folder, tail) in {"loss": ("downstream_bpb", "bpb"), "acc": ("downstream", "len_norm"),
                                       "prob": ("downstream_soft", "soft"),
                                       "logprob": ("downstream_soft_log", "soft_log")}.items():
            cols = [f"eval/{folder}/{s}_rc_5shot_{tail}" for s in subs]
            out[f"{task}_{suffix}"] = raw[cols].to_numpy(float) @ w / w.sum()
    return pd.DataFrame(out, index=raw.index)


def evaluations() -> pd.DataFrame:
    """Every evaluation of the 16 ladder runs, in order within each run (one row each)."""
    from scalinglab import data

    frames = []
    for size, (n, fpt) in SIZES.items():
        for mult in MULTS:
            raw = data.load(_dataset(size, mult))
            df = _columns(raw)
            df.insert(0, "run", run_name(size, mult))
            df.insert(1, "size", size)
            df.insert(2, "n", float(n))
            df.insert(3, "flops_per_token", float(fpt))
            df.insert(4, "d", raw["throughput/total_tokens"].to_numpy(float))
            df.insert(5, "c", df["d"] * fpt)
            frames.append(df)
    return pd.concat(frames, ignore_index=True)


def trailing_mean(x, k: int) -> np.ndarray:
    """The authors' moving average: a k-point trailing mean, the first k − 1 points averaging what precedes them."""
    x = np.asarray(x, float)
    c = np.cumsum(x)
    out = c / np.arange(1, len(x) + 1)
    if len(x) >= k:
        out[k:] = (c[k:] - c[:-k]) / k
        out[k - 1] = c[k - 1] / k
    return out


def step1_points(evals: pd.DataFrame, tasks=None, *, last: int = 5) -> pd.DataFrame:
    """One row per run: n, d and c at its final evaluation, each task's loss and accuracy averaged over the last
    ``last`` evaluations (the authors' ``--moving_avg 5`` in step 1)."""
    cols = [c for t in (tasks or TASKS) for c in (f"{t}_loss", f"{t}_acc", f"{t}_prob", f"{t}_logprob")]
    rows = []
    for run, g in evals.groupby("run", sort=False):
        tail = g.iloc[-last:]
        row = {"run": run, "size": g["size"].iloc[0], "n": g["n"].iloc[-1], "d": g["d"].iloc[-1],
               "c": g["c"].iloc[-1]}
        row.update(tail[cols].mean().to_dict())
        rows.append(row)
    return pd.DataFrame(rows)


def step2_points(evals: pd.DataFrame, tasks=None, *, skip: float = 0.1, smooth: int = 5) -> pd.DataFrame:
    """Every evaluation after the first ``skip`` share of each run, loss and accuracy smoothed per run by a
    ``smooth``-point trailing mean after the skip (the authors' order: skip, then average)."""
    cols = [c for t in (tasks or TASKS) for c in (f"{t}_loss", f"{t}_acc", f"{t}_prob", f"{t}_logprob")]
    parts = []
    for _, g in evals.groupby("run", sort=False):
        g = g.iloc[int(np.ceil(skip * len(g))):].copy()
        for c in cols:
            g[c] = trailing_mean(g[c].to_numpy(), smooth)
        parts.append(g)
    return pd.concat(parts, ignore_index=True)


def target_rows(name: str, *, smooth: int = 5) -> pd.DataFrame:
    """The target's evaluations, smoothed by the trailing mean; the actual is the last row (the authors')."""
    from scalinglab import data

    t = TARGETS[name]
    raw = data.load(t.dataset)
    df = _columns(raw)
    for c in df.columns:
        df[c] = trailing_mean(df[c].to_numpy(), smooth)
    df.insert(0, "run", name)
    df.insert(1, "n", float(t.n))
    df.insert(2, "d", float(t.d))
    df.insert(3, "c", float(t.d) * t.flops_per_token)
    return df


def target_actuals(smooth: int = 5) -> pd.DataFrame:
    """One row per target: n, d, c and each task's actual (the smoothed last evaluation)."""
    return pd.concat([target_rows(k, smooth=smooth).iloc[[-1]] for k in TARGETS], ignore_index=True)


def checkpoint_noise(name: str, tasks=None, *, last: int = 10) -> dict[str, float]:
    """Each task's checkpoint-to-checkpoint SD of accuracy at the end of the target's training: the SD of
    successive differences over its last ``last`` evaluations, divided by √2 (a slow trend cancels in the
    differences). The 13B from its final evaluations; the 7B, whose annealed checkpoint is a single row, from
    its last evaluations before annealing."""
    from scalinglab import data

    raw = data.load("olmo-ladder-target-7b-full" if name == "7B" else TARGETS[name].dataset)
    df = _columns(raw).iloc[-last:]
    return {t: float(np.std(np.diff(df[f"{t}_acc"].to_numpy()), ddof=1) / np.sqrt(2)) for t in (tasks or TASKS)}


def actual_noise(tasks=None, *, smooth: int = 5) -> dict[str, dict[str, float]]:
    """Per target and task, the SD of its actual accuracy: the checkpoint SD (``checkpoint_noise``) over
    √(evaluations the actual averages: one for the 7B's annealed checkpoint, ``smooth`` for the 13B)."""
    out = {}
    for k in TARGETS:
        noise = checkpoint_noise(k, tasks)
        averaged = min(smooth, len(target_rows(k, smooth=smooth)))
        out[k] = {t: v / np.sqrt(averaged) for t, v in noise.items()}
    return out


def write_tables(folder) -> tuple[str, str]:
    """The ladder's evaluations and the two targets as the CSVs `scalinglab chain` reads (from the data mirror);
    the targets carry ``<task>_acc_sd``, their actual's noise (``actual_noise``), which the chain's intervals add."""
    from pathlib import Path

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    runs, targets = folder / "olmo_ladder_evals.csv", folder / "olmo_targets.csv"
    evaluations().drop(columns=["size", "flops_per_token", "c"]).to_csv(runs, index=False)
    ta = target_actuals().drop(columns=["c"])
    noise = actual_noise()
    for t in TASKS:
        ta[f"{t}_acc_sd"] = [noise[k][t] for k in ta["run"]]
    ta.to_csv(targets, index=False)
    return str(runs), str(targets)


if __name__ == "__main__":   # python -m scalinglab.downstream.ladder FOLDER
    import sys

    print("\n".join(write_tables(sys.argv[1] if len(sys.argv) > 1 else ".")))
