"""Copy the ladder's databases into data/sweeps/ladder/ (SQLite's backup API, then VACUUM), even while
bench/ladder.sh is still writing them, and print the status table data/sweeps/ladder/PROVENANCE.md shows.

    python bench/ladder_snapshot.py SOURCE_DIR [data/sweeps/ladder]

A run in progress at the copy is 'planned' in the copy: rerunning bench/ladder.sh on the copies trains it
(and every run not yet finished) again; finished runs are kept.
"""

import sqlite3
import sys
from pathlib import Path

from scalinglab.sweeps import SweepStore

PRESETS = ("ladder0", "ladder2", "ladder3", "ladder4")


def main(argv: list[str]) -> int:
    src = Path(argv[0])
    dst = Path(argv[1]) if len(argv) > 1 else Path(__file__).resolve().parents[1] / "data" / "sweeps" / "ladder"
    dst.mkdir(parents=True, exist_ok=True)
    print("| database | runs planned | finished | finished per seed | first and last finish (UTC) | training seconds |")
    print("| --- | --- | --- | --- | --- | --- |")
    for preset in PRESETS:
        db = src / f"{preset}.db"
        if not db.is_file():
            print(f"| `{preset}.db` | not started | | | | |")
            continue
        out = dst / f"{preset}.db"
        out.unlink(missing_ok=True)
        with sqlite3.connect(db) as a, sqlite3.connect(out) as b:
            a.backup(b)
        with sqlite3.connect(out) as con:
            con.execute("VACUUM")
        runs = SweepStore(out).runs()
        finished_at = [r["finished_at"] for r in runs if r["status"] == "finished"]
        planned, done, secs = len(runs), len(finished_at), sum(r["seconds"] or 0 for r in runs)
        first, last = (min(finished_at), max(finished_at)) if finished_at else (None, None)
        tally: dict[int, list[int]] = {}   # replicate -> [finished, planned]; a spec older than seeds: seed 0
        for r in runs:
            cell = tally.setdefault((r["spec"] or {}).get("replicate", 0), [0, 0])
            cell[0] += r["status"] == "finished"
            cell[1] += 1
        per_seed = [(k, *tally[k]) for k in sorted(tally)]
        seeds = ", ".join(f"seed {r}: {f}/{n}" for r, f, n in per_seed)
        print(f"| `{preset}.db` | {planned} | {done} | {seeds} | {first or '-'} – {last or '-'} | {secs:,.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
