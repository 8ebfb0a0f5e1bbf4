"""The notebooks' sweep databases: which presets they read, and whether they train fresh smoke sweeps or read
the committed ones (the workbook's profile decides). Training is ``scalinglab.training.sweep``; reading the
results is ``scalinglab.sweeps``.
"""

from __future__ import annotations

from pathlib import Path

from scalinglab.errors import UserError

# The notebooks' smoke sweeps train two seeds, so CI runs the replicate analysis the committed sweeps need.
WORKBOOK_SMOKE_SEEDS = 2
WORKBOOK_PRESETS = ("kaplan", "hoffmann")  # the sweeps the notebooks read (the ladder's have their own databases)


def workbook_sweeps(profile: str, results_dir: Path | str) -> dict[str, Path | None]:
    """Sweep databases per preset: "smoke" runs (or resumes) both presets' smoke sweeps, with
    WORKBOOK_SMOKE_SEEDS seeds, into ``results_dir/sweeps/<preset>.db``; "full" returns the committed
    files under data/sweeps/."""
    if profile == "smoke":
        from scalinglab.training.sweep.launch import run_sweep

        out = {}
        for preset in WORKBOOK_PRESETS:
            db = Path(results_dir) / "sweeps" / f"{preset}.db"
            run_sweep(preset, "smoke", db, progress=False, seeds=WORKBOOK_SMOKE_SEEDS)
            out[preset] = db
        return out
    if profile != "full":
        raise UserError(f"workbook profile must be smoke or full, not {profile!r}")
    from scalinglab.harness.workbook import project_root

    folder = project_root(Path(__file__).resolve().parent) / "data" / "sweeps"
    return {p: next((f for f in (folder / f"{p}.db", folder / f"{p}.csv") if f.is_file()), None)
            for p in WORKBOOK_PRESETS}
