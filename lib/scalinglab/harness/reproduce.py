"""`make reproduce`: run the training sweeps (on a GPU), then every notebook headlessly.

    python -m scalinglab.harness.reproduce --profile full --results results --sweep-profile auto

Each notebook gets only the parameters its `parameters` cell declares:
``profile`` always, and ``sweep_dir`` (notebook 02) when this run trained its own
sweeps. Without a GPU the sweeps are skipped and the notebooks read the sweep
results committed under data/sweeps/. Notebook 03 scores the model ladder committed
under data/models/ (its ``ladder_dir`` takes another exported ladder by hand).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from scalinglab.errors import UserError
from scalinglab.harness import notebook_format
from scalinglab.harness.workbook import RESULTS_ENV, project_root


def sweep_profile_for(choice: str) -> str | None:
    """'auto' means gpu-quick when torch sees a GPU, else no sweep (use the committed results)."""
    if choice == "none":
        return None
    if choice != "auto":
        return choice
    from scalinglab.harness.workbook import pick_device

    return "gpu-quick" if pick_device() == "cuda" else None


def run_sweeps(profile: str, sweep_dir: Path) -> None:
    from scalinglab.harness.sweeps import WORKBOOK_PRESETS
    from scalinglab.training.sweep.launch import run_sweep

    for preset in WORKBOOK_PRESETS:  # the sweeps the notebooks read
        db = sweep_dir / f"{preset}.db"
        print(f"== sweep {preset} ({profile}) -> {db}", flush=True)
        run_sweep(preset, profile, db)


def notebook_parameters(declared: set[str], profile: str, sweep_dir: Path | None) -> dict:
    params = {"profile": profile}
    if sweep_dir is not None:
        if "sweep_dir" in declared:
            params["sweep_dir"] = str(sweep_dir)
    return {k: v for k, v in params.items() if k in declared}


def workbook_notebooks() -> list[Path]:
    return sorted((project_root() / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def run_notebooks(profile: str, results: Path, sweep_dir: Path | None = None,
                  notebooks: list[Path] | None = None, progress: bool = True) -> None:
    import os

    import papermill as pm

    results = Path(results).resolve()  # the kernels run in notebooks/: a relative folder would land there
    os.environ[RESULTS_ENV] = str(results)
    for nb in notebooks or workbook_notebooks():
        declared = set(pm.inspect_notebook(str(nb)))
        params = notebook_parameters(declared, profile, sweep_dir)
        out = results / nb.stem / nb.name
        out.parent.mkdir(parents=True, exist_ok=True)
        print(f"== {nb.stem} {params}", flush=True)
        t0 = time.perf_counter()
        pm.execute_notebook(str(nb), str(out), parameters=params, cwd=str(nb.parent), kernel_name="python3",
                            progress_bar=progress)
        # In the form JupyterLab saves, without papermill's record of this run (its paths, times): opening the
        # output in Lab leaves it as it is, and it can be committed as it is.
        notebook_format.rewrite(out)
        print(f"   {time.perf_counter() - t0:.0f} s -> {out}", flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m scalinglab.harness.reproduce", description=__doc__.splitlines()[0])
    ap.add_argument("--profile", default="full", choices=("full", "smoke"))
    ap.add_argument("--results", default="results", type=Path)
    ap.add_argument("--sweep-profile", default="auto",
                    help="auto (gpu-quick on a GPU, else none), none, smoke, cpu, gpu-quick or gpu")
    args = ap.parse_args(argv)
    results = args.results.resolve()
    sweep_profile = sweep_profile_for(args.sweep_profile)
    sweep_dir = None
    try:
        if sweep_profile:
            sweep_dir = results / "sweeps"
            run_sweeps(sweep_profile, sweep_dir)
        else:
            print("== no GPU (or --sweep-profile none): notebooks use the sweep results committed under data/sweeps/")
        run_notebooks(args.profile, results, sweep_dir)
    except UserError as exc:  # e.g. an unknown --sweep-profile: one line, no traceback
        print(f"{ap.prog}: error: {exc}", file=sys.stderr)
        return 2
    print(f"Executed notebooks, figures and summary.json files are under {results}/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
