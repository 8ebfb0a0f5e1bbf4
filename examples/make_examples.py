"""Writes examples/cpu_sweep_runs.csv from our committed Hoffmann-style CPU sweep (data/sweeps/hoffmann.db).

One row per (budget, model shape), the loss averaged over its 3 seeds: the small table of runs the README's
tour fits. Run from the repository root: ``python examples/make_examples.py``.
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


if __name__ == "__main__":
    main()
