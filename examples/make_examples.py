"""Writes the README tour's tables from our committed CPU sweeps (data/sweeps/).

- examples/cpu_sweep_runs.csv, from the Hoffmann-style sweep (hoffmann.db): one row per (budget, model
  shape), the loss averaged over its 3 seeds: the small table of runs the tour fits.
- examples/cpu_sweep_kaplan_runs.csv, from the Kaplan-style sweep (kaplan.db), the same corpus, tokenizer and
  model family trained with Kaplan's recipe (one run per shape at a constant learning rate, read at each
  budget it passes): the second system the tour's `scalinglab compare` sets against the first. Its rows are
  checkpoints: `run` names the shape, the unit to resample.

Run from the repository root: ``python examples/make_examples.py``.
"""

from pathlib import Path

from scalinglab.training import sweep

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    pts = sweep.isoflop_points(ROOT / "data" / "sweeps" / "hoffmann.db")
    runs = (pts.groupby(["flops", "width", "depth", "n", "tokens"], as_index=False)["loss"].mean()
            .rename(columns={"flops": "budget", "n": "N", "tokens": "D"}))
    runs.insert(0, "run", "w" + runs["width"].astype(str) + "-d" + runs["depth"].astype(str) + "-C"
                + runs["budget"].map("{:.3g}".format))
    runs["C"] = 6.0 * runs["N"] * runs["D"]
    runs = runs[["run", "N", "D", "C", "budget", "loss"]]
    runs.to_csv(ROOT / "examples" / "cpu_sweep_runs.csv", index=False, float_format="%.6g")
    print(f"{len(runs)} runs -> examples/cpu_sweep_runs.csv")

    pts = sweep.isoflop_points(ROOT / "data" / "sweeps" / "kaplan.db")
    ckpt = (pts.groupby(["flops", "width", "depth", "n", "tokens"], as_index=False)["loss"].mean()
            .rename(columns={"flops": "budget", "n": "N", "tokens": "D"}))
    ckpt.insert(0, "run", "w" + ckpt["width"].astype(str) + "-d" + ckpt["depth"].astype(str))
    ckpt["C"] = 6.0 * ckpt["N"] * ckpt["D"]
    ckpt = ckpt[["run", "N", "D", "C", "budget", "loss"]]
    ckpt.to_csv(ROOT / "examples" / "cpu_sweep_kaplan_runs.csv", index=False, float_format="%.6g")
    print(f"{len(ckpt)} checkpoints of {ckpt['run'].nunique()} runs -> examples/cpu_sweep_kaplan_runs.csv")


if __name__ == "__main__":
    main()
