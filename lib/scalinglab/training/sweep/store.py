"""Writing the SQLite results database: planned runs, finished runs and their curves, and who is training what.
Its tables are defined in ``scalinglab.sweeps.schema``; results are read through ``scalinglab.sweeps.SweepStore``.

Several processes (``scalinglab sweep`` run twice, on one machine or several sharing the file) share
a sweep by *claiming* runs: a claim is an owner (``host:pid:token``) and a lease (an expiry time,
renewed while the run trains). A run is claimable when it is unfinished and unclaimed, or when its
lease has expired (its owner crashed or was killed); taking a claim is one IMMEDIATE transaction, so
two processes never hold the same run. A result is recorded only by the run's current owner.
"""

from __future__ import annotations

import json
import math
import sqlite3
import time
from dataclasses import asdict
from datetime import datetime, timezone
from pathlib import Path

from scalinglab.errors import OptionError, UserError
from scalinglab.sweeps.schema import ADDED_COLUMNS, ADDED_CURVE_COLUMNS, SCHEMA  # noqa: F401 (SCHEMA re-exported)
from scalinglab.sweeps.store import (check_readable, damaged_runs, db_name, summary_counts,  # noqa: F401
                                     sweep_meta)
from scalinglab.training.sweep.plan import (NON_EMBEDDING_PRESETS, Profile, RunSpec, spec_from_dict,  # noqa: F401
                                           spec_to_dict)


# --- the database --------------------------------------------------------------------------

def connect(db_path: Path | str, identity: tuple[str, str] | None = None) -> sqlite3.Connection:
    """The sweep database at ``db_path``, created if new, its schema brought up to date; a UserError that
    says why not: a folder or another kind of file is "not a sweep database", a folder that does not
    exist or cannot be written (sqlite says only "unable to open database file") is named as such.
    ``identity`` (preset, profile): a database made for another sweep is refused before its schema is touched,
    so a refused sweep leaves the database as it was."""
    try:
        con = sqlite3.connect(db_path, timeout=60)
        if identity and con.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'sweep'").fetchone():
            try:
                check_identity(con, *identity)
            except UserError:
                con.close()
                raise
        con.executescript(SCHEMA)
        _add_missing_columns(con)
    except sqlite3.DatabaseError as exc:  # another kind of file, a folder, or a file system that refuses
        if Path(db_path).is_dir():
            raise UserError(f"{db_path}: not a sweep database (it is a folder)") from None
        problem = cannot_write(db_path) if isinstance(exc, sqlite3.OperationalError) else None
        if problem:
            raise UserError(f"{db_path}: cannot open the sweep database: {problem}") from None
        raise UserError(f"{db_path}: not a sweep database ({exc})") from None
    return con


def cannot_write(db_path: Path | str) -> str | None:
    """Why the file system will not let a sweep database at ``db_path`` be created or written (sqlite also
    writes a journal beside it, so its folder must take new files), or None when it will."""
    import tempfile

    path = Path(db_path)
    folder = path.parent
    if not folder.exists():
        return f"folder {folder} does not exist"
    if not folder.is_dir():
        return f"{folder} is not a folder"
    if path.exists():
        try:
            open(path, "r+b").close()
        except OSError as exc:
            return f"the file cannot be written ({exc.strerror})"
    try:
        tempfile.TemporaryFile(dir=folder).close()
    except OSError as exc:
        return f"folder {folder} is not writable ({exc.strerror})"
    return None


def _add_missing_columns(con: sqlite3.Connection) -> None:
    tables = {"runs": ADDED_COLUMNS, "curves": ADDED_CURVE_COLUMNS}

    def have(table: str) -> set:
        return {row[1] for row in con.execute(f"PRAGMA table_info({table})")}

    if all(set(cols) <= have(table) for table, cols in tables.items()):
        return
    con.execute("BEGIN IMMEDIATE")  # another process may be adding them at this moment
    try:
        for table, cols in tables.items():
            present = have(table)
            for name, definition in cols.items():
                if name not in present:
                    con.execute(f"ALTER TABLE {table} ADD COLUMN {name} {definition}")
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise


def check_identity(con: sqlite3.Connection, preset: str, profile: str) -> None:
    """Refuse a database made for another sweep (cheap: run it before tokenizing)."""
    meta = sweep_meta(con)
    if meta and (meta.get("preset"), meta.get("profile")) != (preset, profile):
        raise OptionError(f"{db_name(con)}: database holds the {meta.get('preset')}/{meta.get('profile')} sweep, "
                          f"not {preset}/{profile}: use another {{db}}", "db")


def register_plan(con: sqlite3.Connection, preset: str, prof: Profile, runs: list[RunSpec], vocab: int) -> None:
    """Write the sweep's identity and its planned runs; refuses a database made for another sweep.
    Planning more seeds than before adds their runs (``seeds`` records the most planned); fewer removes none."""
    check_identity(con, preset, prof.name)
    meta = sweep_meta(con)
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
              r.n_total, json.dumps(spec_to_dict(r))) for r in runs])


def possible_loss(x) -> bool:
    """A validation loss a run can have: a finite number, at least 0 (cross-entropy)."""
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and x >= 0


def record_result(con: sqlite3.Connection, spec: RunSpec, result: dict, owner: str | None = None) -> bool:
    """The launcher's one write per finished run: its row and its curve in one transaction.

    With ``owner``, only while that owner holds the run's claim: False (and nothing written) when the
    claim was lost, e.g. taken over after the lease expired, or the run was finished by another.
    An impossible loss (NaN, infinite, negative) is refused: the run stays pending."""
    from scalinglab.accounting.decoder import step_at

    bad = next((r for r in result["curve"] if not possible_loss(r["loss"])), None)
    if bad is not None or not possible_loss(result["final_loss"]):
        where = f"at step {bad['step']}" if bad is not None else "at its end"
        value = bad["loss"] if bad is not None else result["final_loss"]
        raise UserError(f"{db_name(con)}: run {spec.run_id} trained to an impossible loss {value!r} {where} "
                        "(diverged?); not recorded, the run stays pending")
    n = spec.n_non_embedding if spec.preset in NON_EMBEDDING_PRESETS else spec.n_standard
    budget_at = {step_at(math.ceil(c / (6 * n)), result["tokens_per_step"]): c for c in spec.budgets}
    con.execute("BEGIN IMMEDIATE")
    try:
        if owner is not None:
            row = con.execute("SELECT status, owner FROM runs WHERE run_id = ?", (spec.run_id,)).fetchone()
            if row is None or row[0] == "finished" or row[1] != owner:
                con.execute("ROLLBACK")
                return False
        con.execute("DELETE FROM curves WHERE run_id = ?", (spec.run_id,))
        con.executemany(
            "INSERT INTO curves (run_id, step, tokens, budget, flops, loss, train_loss, lr, seconds, train_loss_mean) "
            "VALUES (?,?,?,?,?,?,?,?,?,?)",
            [(spec.run_id, r["step"], r["tokens"], budget_at.get(r["step"]), 6.0 * n * r["tokens"], r["loss"],
              r.get("train_loss"), r.get("lr"), r.get("seconds"), r.get("train_loss_mean"))
             for r in result["curve"]])
        con.execute(
            "UPDATE runs SET status='finished', final_loss=?, tokens=?, steps=?, seconds=?, tokens_per_s=?, "
            "device=?, versions=?, git_commit=?, checkpoint=?, finished_at=?, finished_by=?, owner=NULL, "
            "lease_until=NULL WHERE run_id=?",
            (result["final_loss"], result["tokens"], result["steps"], result["seconds"], result["tokens_per_s"],
             result["device"], json.dumps(result["versions"]), result["git_commit"], result["checkpoint"],
             datetime.now(timezone.utc).isoformat(timespec="seconds"), owner, spec.run_id))
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
    return True


def _spec(con: sqlite3.Connection, run_id: str, text) -> RunSpec:
    try:
        return spec_from_dict(json.loads(text))
    except (TypeError, ValueError, KeyError, AttributeError):
        raise UserError(f"{db_name(con)}: run {run_id} has a broken spec (not a run's JSON: {str(text)[:40]!r}); "
                        "rerun the sweep to replan it, or delete the row") from None


def _order(r: RunSpec):
    return (r.replicate, r.budget, r.n_standard)


def pending(con: sqlite3.Connection) -> list[RunSpec]:
    """Unfinished runs, a whole seed's grid before the next seed's: a sweep stopped early still has
    complete replicates."""
    rows = con.execute("SELECT run_id, spec FROM runs WHERE status != 'finished'").fetchall()
    return sorted((_spec(con, r, s) for r, s in rows), key=_order)


# --- claims --------------------------------------------------------------------------------

def _process_gone(owner: str) -> bool:
    """Whether ``owner`` (host:pid:token) names a process of this host that no longer runs. A claim of a process
    killed here need not be waited out: its pid says so at once. Another host's claims can only expire."""
    import os
    import socket

    host, _, rest = owner.partition(":")
    pid = rest.partition(":")[0]
    if host != socket.gethostname() or not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except OSError:   # it exists, under another user
        return False
    return False


def _release_dead(con: sqlite3.Connection) -> None:
    """Inside a write transaction: free the live claims whose owner's process has died on this host."""
    rows = con.execute("SELECT DISTINCT owner FROM runs WHERE status != 'finished' AND owner IS NOT NULL AND "
                       "lease_until >= ?", (time.time(),)).fetchall()
    for (dead,) in [r for r in rows if _process_gone(r[0])]:
        con.execute("UPDATE runs SET owner = NULL, lease_until = NULL WHERE owner = ? AND status != 'finished'",
                    (dead,))


def claim_next(con: sqlite3.Connection, owner: str, lease_s: float) -> RunSpec | None:
    """Claim the first claimable run (in :func:`pending`'s order) for ``owner`` until now + ``lease_s``;
    None when every unfinished run is held by a live claim (or none is left). A claim whose process has died
    on this host is claimable at once (a resume after SIGKILL waited out the dead process's 120 s lease)."""
    now = time.time()
    con.execute("BEGIN IMMEDIATE")  # no other writer until COMMIT: the check and the claim are one step
    try:
        _release_dead(con)
        rows = con.execute("SELECT run_id, spec FROM runs WHERE status != 'finished' AND "
                           "(owner IS NULL OR lease_until IS NULL OR lease_until < ?)", (now,)).fetchall()
        specs = sorted((_spec(con, r, s) for r, s in rows), key=_order)
        if specs:
            con.execute("UPDATE runs SET owner = ?, lease_until = ?, claims = COALESCE(claims, 0) + 1 "
                        "WHERE run_id = ?", (owner, now + lease_s, specs[0].run_id))
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
    return specs[0] if specs else None


def held_elsewhere(con: sqlite3.Connection, owner: str) -> dict[str, str]:
    """Unfinished runs under another live owner's live claim: {run_id: owner}."""
    rows = con.execute("SELECT run_id, owner FROM runs WHERE status != 'finished' AND owner IS NOT NULL "
                       "AND owner != ? AND lease_until >= ?", (owner, time.time())).fetchall()
    return {run_id: who for run_id, who in rows if not _process_gone(who)}


def lease_left(con: sqlite3.Connection, owner: str) -> float:
    """Seconds until the first live claim of another owner expires (0 when there is none)."""
    row = con.execute("SELECT MIN(lease_until) FROM runs WHERE status != 'finished' AND owner IS NOT NULL AND "
                      "owner != ? AND lease_until >= ?", (owner, time.time())).fetchone()
    return max(0.0, (row[0] or 0.0) - time.time())


def renew(con: sqlite3.Connection, owner: str, lease_s: float) -> int:
    """Extend every claim ``owner`` holds to now + ``lease_s``; how many it holds."""
    with con:
        return con.execute("UPDATE runs SET lease_until = ? WHERE owner = ? AND status != 'finished'",
                           (time.time() + lease_s, owner)).rowcount


def release(con: sqlite3.Connection, owner: str, run_id: str | None = None) -> None:
    """Give up ``owner``'s claims (on ``run_id`` only, if given): the runs become claimable at once."""
    with con:
        con.execute("UPDATE runs SET owner = NULL, lease_until = NULL WHERE owner = ? AND status != 'finished'"
                    + (" AND run_id = ?" if run_id else ""), (owner, run_id) if run_id else (owner,))


def holder(db_path: Path | str, run_id: str) -> str | None:
    """Who holds ``run_id``'s claim now (a job checks it is still its launcher's, with its own connection)."""
    con = sqlite3.connect(db_path, timeout=60)
    try:
        row = con.execute("SELECT owner, status FROM runs WHERE run_id = ?", (run_id,)).fetchone()
    finally:
        con.close()
    return None if row is None or row[1] == "finished" else row[0]


# --- damage (found by scalinglab.sweeps.store.damaged_runs) ----------------------------------

def mark_for_retraining(con: sqlite3.Connection, planned: dict[str, RunSpec]) -> list[str]:
    """Damaged runs of this sweep back to planned, their specs rewritten from ``planned`` (run id -> spec)
    where broken, their results and curves dropped; a line per run saying so. A damaged run the plan
    does not know is refused (nothing here can say what it was)."""
    con.execute("BEGIN IMMEDIATE")
    try:
        bad = damaged_runs(con, finished_only=False)
        for run_id, spec in con.execute("SELECT run_id, spec FROM runs WHERE status != 'finished'").fetchall():
            if run_id not in bad:
                try:
                    _spec(con, run_id, spec)
                except UserError:
                    bad[run_id] = f"a broken spec (not a run's JSON: {str(spec)[:40]!r})"
        unknown = sorted(set(bad) - set(planned))
        if unknown:
            raise UserError(f"{db_name(con)}: run {unknown[0]} has {bad[unknown[0]]} and is not in this sweep's "
                            "plan, so it cannot be replanned; delete its row (and its curve) to go on")
        notes = []
        for run_id, why in sorted(bad.items()):
            con.execute("DELETE FROM curves WHERE run_id = ?", (run_id,))
            con.execute("UPDATE runs SET spec = ?, status = 'planned', final_loss = NULL, tokens = NULL, "
                        "steps = NULL, seconds = NULL, tokens_per_s = NULL, finished_at = NULL, finished_by = NULL "
                        "WHERE run_id = ?", (json.dumps(spec_to_dict(planned[run_id])), run_id))
            notes.append(f"{db_name(con)}: run {run_id} had {why}; marked for retraining")
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
    return notes
