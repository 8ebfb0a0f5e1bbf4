"""The SQLite results database: planned runs, finished runs and their curves.
"""

from __future__ import annotations

import json
import math
import sqlite3
from dataclasses import asdict
from datetime import datetime, timezone
from pathlib import Path

from scalinglab.errors import UserError
from scalinglab.training.sweep.plan import NON_EMBEDDING_PRESETS, Profile, RunSpec


# --- the database --------------------------------------------------------------------------

SCHEMA = """
CREATE TABLE IF NOT EXISTS sweep (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY, preset TEXT NOT NULL, profile TEXT NOT NULL,
    width INTEGER NOT NULL, depth INTEGER NOT NULL, budget REAL NOT NULL,
    n_non_embedding INTEGER NOT NULL, n_standard INTEGER NOT NULL, n_total INTEGER NOT NULL,
    spec TEXT NOT NULL, status TEXT NOT NULL DEFAULT 'planned',
    final_loss REAL, tokens INTEGER, steps INTEGER, seconds REAL, tokens_per_s REAL,
    device TEXT, versions TEXT, git_commit TEXT, checkpoint TEXT, finished_at TEXT
);
CREATE TABLE IF NOT EXISTS curves (
    run_id TEXT NOT NULL REFERENCES runs(run_id), step INTEGER NOT NULL, tokens INTEGER NOT NULL,
    budget REAL, flops REAL NOT NULL, loss REAL NOT NULL, train_loss REAL, lr REAL, seconds REAL,
    PRIMARY KEY (run_id, step)
);
"""


def connect(db_path: Path | str) -> sqlite3.Connection:
    try:
        con = sqlite3.connect(db_path, timeout=60)
        con.executescript(SCHEMA)
    except sqlite3.DatabaseError as exc:  # another kind of file, or a folder
        raise UserError(f"{db_path}: not a sweep database ({exc})") from None
    return con


def sweep_meta(con: sqlite3.Connection) -> dict:
    return {k: json.loads(v) for k, v in con.execute("SELECT key, value FROM sweep")}


def register_plan(con: sqlite3.Connection, preset: str, prof: Profile, runs: list[RunSpec], vocab: int) -> None:
    """Write the sweep's identity and its planned runs; refuses a database made for another sweep.
    Planning more seeds than before adds their runs (``seeds`` records the most planned); fewer removes none."""
    meta = sweep_meta(con)
    if meta and (meta.get("preset"), meta.get("profile")) != (preset, prof.name):
        raise UserError(f"database holds the {meta.get('preset')}/{meta.get('profile')} sweep, "
                        f"not {preset}/{prof.name}: use another --db")
    seeds = max([meta.get("seeds", 1)] + [r.replicate + 1 for r in runs])
    with con:
        for key, value in dict(preset=preset, profile=prof.name, tokenizer=prof.tokenizer, vocab_size=vocab,
                               profile_config=asdict(prof)).items():
            con.execute("INSERT OR IGNORE INTO sweep VALUES (?, ?)", (key, json.dumps(value)))
        con.execute("INSERT OR REPLACE INTO sweep VALUES ('seeds', ?)", (json.dumps(seeds),))
        con.executemany(
            "INSERT OR IGNORE INTO runs (run_id, preset, profile, width, depth, budget, n_non_embedding, "
            "n_standard, n_total, spec) VALUES (?,?,?,?,?,?,?,?,?,?)",
            [(r.run_id, r.preset, r.profile, r.width, r.depth, r.budget, r.n_non_embedding, r.n_standard,
              r.n_total, json.dumps(asdict(r))) for r in runs])


def record_result(con: sqlite3.Connection, spec: RunSpec, result: dict) -> None:
    """The launcher's one write per finished run: its row and its curve in one transaction."""
    from scalinglab.accounting.decoder import step_at

    n = spec.n_non_embedding if spec.preset in NON_EMBEDDING_PRESETS else spec.n_standard
    budget_at = {step_at(math.ceil(c / (6 * n)), result["tokens_per_step"]): c for c in spec.budgets}
    with con:
        con.execute("DELETE FROM curves WHERE run_id = ?", (spec.run_id,))
        con.executemany(
            "INSERT INTO curves VALUES (?,?,?,?,?,?,?,?,?)",
            [(spec.run_id, r["step"], r["tokens"], budget_at.get(r["step"]), 6.0 * n * r["tokens"], r["loss"],
              r.get("train_loss"), r.get("lr"), r.get("seconds")) for r in result["curve"]])
        con.execute(
            "UPDATE runs SET status='finished', final_loss=?, tokens=?, steps=?, seconds=?, tokens_per_s=?, "
            "device=?, versions=?, git_commit=?, checkpoint=?, finished_at=? WHERE run_id=?",
            (result["final_loss"], result["tokens"], result["steps"], result["seconds"], result["tokens_per_s"],
             result["device"], json.dumps(result["versions"]), result["git_commit"], result["checkpoint"],
             datetime.now(timezone.utc).isoformat(timespec="seconds"), spec.run_id))


def pending(con: sqlite3.Connection) -> list[RunSpec]:
    """Unfinished runs, a whole seed's grid before the next seed's: a sweep stopped early still has
    complete replicates."""
    rows = con.execute("SELECT spec FROM runs WHERE status != 'finished'").fetchall()
    return sorted((spec_from_dict(json.loads(s)) for (s,) in rows), key=lambda r: (r.replicate, r.budget, r.n_standard))


def spec_from_dict(d: dict) -> RunSpec:
    return RunSpec(**{**d, "budgets": tuple(d["budgets"]), "standard_budgets": tuple(d.get("standard_budgets", ()))})


def summary_counts(con: sqlite3.Connection) -> dict:
    planned, finished = con.execute(
        "SELECT COUNT(*), COALESCE(SUM(status = 'finished'), 0) FROM runs").fetchone()
    return dict(planned=planned, finished=finished)


