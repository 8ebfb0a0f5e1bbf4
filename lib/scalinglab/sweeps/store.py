"""Reading a sweep database: :class:`SweepStore`, the one place that reads its tables for results.

``SweepStore(path)`` opens a sweep's SQLite database (or a CSV export of its isoFLOP points) and answers:
``points()`` (the finished runs' isoFLOP points), ``curves()`` (every evaluation of every finished run),
``dense_curves()`` (the same with each row's learning rate and training loss: the schedules preset's dense
curves), ``runs()`` (one row per planned run), ``meta()`` (the sweep's identity and provenance) and
``counts()``. It never writes the database; ``select_replicates`` writes a copy of it elsewhere. A file that
is not a sweep database, or one whose finished runs are damaged, is refused in one line naming it.

The writer is ``scalinglab.training.sweep.store`` (planning, claims, results); the tables are defined once, in
:mod:`scalinglab.sweeps.schema`. The connection-level readers here (``sweep_meta``, ``summary_counts``,
``damaged_runs``, ``check_readable``) are shared with the writer.
"""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

from scalinglab.errors import UserError, printable
from scalinglab.files import sweep_database
from scalinglab.sweeps.schema import ADDED_CURVE_COLUMNS, NON_EMBEDDING_PRESETS, REPLICATE_OF

_REPLICATE = f"{REPLICATE_OF} AS replicate"


# --- on a connection (shared with the writer) ----------------------------------------------

# A run id as a sweep's plan writes one (``hoffmann-C1e+15-w64-d2``, ``lrbatch-w64-d2-lr0.001-b32-s1``): it names the
# run's checkpoint file, so one read from an edited database must not reach outside that folder or the terminal.
RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+=-]{0,199}")


def check_run_id(run_id, where) -> str:
    """``run_id`` when it is one a sweep writes (a letter or digit, then letters, digits and ``. _ + = -``, no
    ``..``), else a UserError naming ``where`` (the database): it becomes a file name."""
    if not isinstance(run_id, str) or not RUN_ID.fullmatch(run_id) or ".." in run_id:
        raise UserError(f"{where}: run id '{printable(str(run_id), 60)}' is not one a sweep writes (at most 200 "
                        "letters, digits and . _ + = -, no '..'); the database was edited")
    return run_id


def db_name(con: sqlite3.Connection) -> str:
    """The file behind a connection, for messages."""
    return next((row[2] for row in con.execute("PRAGMA database_list") if row[1] == "main"), "") or "<memory>"


def sweep_meta(con: sqlite3.Connection) -> dict:
    """The sweep table: {key: its JSON value}; a UserError naming the key when one is not JSON."""
    out = {}
    for key, value in con.execute("SELECT key, value FROM sweep"):
        try:
            out[key] = json.loads(value)
        except (TypeError, ValueError):
            raise UserError(f"{db_name(con)}: the sweep table's {key!r} is not JSON ({str(value)[:40]!r}); "
                            "the database is damaged") from None
    return out


def summary_counts(con: sqlite3.Connection) -> dict:
    """{planned, finished}: how many runs the database plans and how many of them finished."""
    planned, finished = con.execute(
        "SELECT COUNT(*), COALESCE(SUM(status = 'finished'), 0) FROM runs").fetchone()
    return dict(planned=planned, finished=finished)


_IMPOSSIBLE = "NOT (typeof({0}) IN ('real', 'integer') AND {0} >= 0 AND {0} < 9e999)"


def damaged_runs(con: sqlite3.Connection, finished_only: bool = True) -> dict[str, str]:
    """Runs whose rows cannot be trusted: {run_id: why}. A spec that is not JSON, or an impossible loss
    (NaN, infinite, negative or not a number) in a finished run's final loss or curve."""
    where = "status = 'finished' AND " if finished_only else ""
    out = {}
    for run_id, spec in con.execute(f"SELECT run_id, spec FROM runs WHERE {where}NOT json_valid(spec)"):
        out[run_id] = f"a broken spec (not JSON: {str(spec)[:40]!r})"
    for run_id, loss in con.execute(f"SELECT run_id, final_loss FROM runs WHERE status = 'finished' AND "
                                    f"final_loss IS NOT NULL AND {_IMPOSSIBLE.format('final_loss')}"):
        out.setdefault(run_id, f"an impossible final loss {loss!r}")
    for run_id, step, loss in con.execute(
            f"SELECT c.run_id, c.step, c.loss FROM curves c JOIN runs r USING (run_id) WHERE r.status = 'finished' "
            f"AND {_IMPOSSIBLE.format('c.loss')} ORDER BY c.run_id, c.step"):
        out.setdefault(run_id, f"an impossible loss {loss!r} at step {step}")
    # Every finished run recorded its curve in the same transaction: one without any lost it since (a curves
    # table dropped and recreated empty reported the sweep as complete).
    for (run_id,) in con.execute("SELECT run_id FROM runs r WHERE status = 'finished' AND NOT EXISTS "
                                 "(SELECT 1 FROM curves c WHERE c.run_id = r.run_id)"):
        out.setdefault(run_id, "no curve rows (its curve was lost from the database)")
    return out


def check_readable(con: sqlite3.Connection, db_path: Path | str | None = None) -> None:
    """Refuse, in one line naming the database and the run, a database whose finished runs are damaged, or any
    of whose run ids is not one a sweep writes."""
    for (run_id,) in con.execute("SELECT run_id FROM runs"):
        check_run_id(run_id, db_path or db_name(con))
    bad = damaged_runs(con)
    if bad:
        run_id, why = next(iter(bad.items()))
        more = f" (and {len(bad) - 1} more run(s))" if len(bad) > 1 else ""
        raise UserError(f"{db_path or db_name(con)}: run {run_id} has {why}{more}; rerun `scalinglab sweep` "
                        "on this database to retrain it")


def _parsed(spec: str) -> dict | None:
    """A run's stored spec as a dict; None where it is not JSON (``damaged_runs`` names such runs)."""
    try:
        return json.loads(spec)
    except (TypeError, ValueError):
        return None


def run_of(run_ids):
    """The run of the one-seed grid each run id replicates: a replicate's id is that run's plus -s<i>."""
    return run_ids.str.replace(r"-s\d+$", "", regex=True)


# --- the store -----------------------------------------------------------------------------

class SweepStore:
    """A sweep database, read-only: its isoFLOP points, curves, runs and meta (see the module's docstring)."""

    def __init__(self, path: Path | str):
        self.path = Path(path)
        sweep_database(self.path)  # a missing file or a wrong suffix: one line

    def __repr__(self) -> str:
        return f"SweepStore({str(self.path)!r})"

    def _query(self, fn, check: bool = True):
        """``fn(con)`` on a fresh connection (the database checked first, with ``check``); a file that is not
        a sweep database is a UserError naming it."""
        import pandas as pd

        try:
            with sqlite3.connect(self.path) as con:
                if check:
                    check_readable(con, self.path)  # a broken spec or an impossible loss: refused, naming the run
                return fn(con)
        except (sqlite3.DatabaseError, pd.errors.DatabaseError, TypeError) as exc:
            raise UserError(f"{self.path}: not a sweep database ({exc})") from None

    def meta(self) -> dict:
        """The sweep's identity and provenance: preset, profile, tokenizer, vocab_size, profile_config, seeds
        (what the sweep table holds; empty for a database in which no sweep was planned)."""
        return self._query(sweep_meta, check=False)

    def counts(self) -> dict:
        """{planned, finished} runs."""
        return self._query(summary_counts)

    def points(self):
        """The finished runs' isoFLOP points, one row per (run, budget it passed): preset, run_id, width, depth,
        n (the preset's N), n_non_embedding, n_standard, n_total, flops (the budget C), tokens, loss
        (validation), replicate. A CSV (an export of this very table) is read as it is."""
        import pandas as pd

        if self.path.suffix == ".csv":
            df = pd.read_csv(self.path)
            return df if "replicate" in df else df.assign(replicate=0)
        df = self._query(lambda con: pd.read_sql_query(
            "SELECT r.preset, r.run_id, r.width, r.depth, r.n_non_embedding, r.n_standard, r.n_total, "
            f"c.budget AS flops, c.tokens, c.loss, {_REPLICATE} FROM curves c JOIN runs r USING (run_id) "
            "WHERE c.budget IS NOT NULL AND r.status = 'finished' ORDER BY c.budget, r.n_standard", con))
        df.insert(4, "n", df["n_non_embedding"].where(df["preset"].isin(NON_EMBEDDING_PRESETS), df["n_standard"]))
        return df

    def curves(self, mean_over_seeds: bool = False):
        """Every logged evaluation of every finished run, for Approach 1 (``scalinglab.fitting.frontier.envelope``):
        preset, run_id, shape ("w<width>-d<depth>"), width, depth, n (the preset's N), step, tokens, flops
        (6·N·tokens), budget (the budget a row stands for, if any), loss (validation) and replicate.

        ``mean_over_seeds`` averages each run's replicates evaluation by evaluation (they share their
        schedule): one curve per run of the one-seed grid, under its run id, with ``seeds`` (how many
        were averaged) in place of ``replicate``."""
        import pandas as pd

        df = self._query(lambda con: pd.read_sql_query(
            "SELECT r.preset, r.run_id, r.width, r.depth, r.n_non_embedding, r.n_standard, c.step, c.tokens, "
            f"c.flops, c.budget, c.loss, {_REPLICATE} FROM curves c JOIN runs r USING (run_id) "
            "WHERE r.status = 'finished' "
            "ORDER BY r.n_standard, c.flops", con))
        df.insert(2, "shape", "w" + df["width"].astype(str) + "-d" + df["depth"].astype(str))
        df.insert(5, "n", df["n_non_embedding"].where(df["preset"].isin(NON_EMBEDDING_PRESETS),
                                                      df["n_standard"]).astype(float))
        df = df.drop(columns=["n_non_embedding", "n_standard"])
        if mean_over_seeds:
            cols = list(df.columns)
            df["run_id"] = run_of(df["run_id"])
            keys = [c for c in cols if c not in ("loss", "replicate")]
            df = (df.groupby(keys, as_index=False, dropna=False, sort=False)
                  .agg(loss=("loss", "mean"), seeds=("replicate", "size")))
            df = df[[c if c != "replicate" else "seeds" for c in cols]]
        return df

    def dense_curves(self):
        """Every curve row of every finished run, in run and step order, with what a curve law reads: run_id,
        preset, schedule (the run's learning-rate schedule), width, depth, n_non_embedding, n_standard, step,
        tokens, budget, flops, loss (validation), train_loss (the batch's), train_loss_mean (since the previous
        row; None where it was not kept), lr (the rate of the step that ended there), seconds, replicate."""
        import pandas as pd

        def read(con):
            # columns added since the first schema (schema.ADDED_CURVE_COLUMNS) are NULL in a database made before
            have = {row[1] for row in con.execute("PRAGMA table_info(curves)")}
            added = ", ".join(f"c.{c}" if c in have else f"NULL AS {c}" for c in ADDED_CURVE_COLUMNS)
            return pd.read_sql_query(
                "SELECT c.run_id, r.preset, json_extract(r.spec, '$.train.schedule') AS schedule, r.width, r.depth, "
                "r.n_non_embedding, r.n_standard, c.step, c.tokens, c.budget, c.flops, c.loss, c.train_loss, "
                f"{added}, c.lr, c.seconds, {_REPLICATE} FROM curves c JOIN runs r USING (run_id) "
                "WHERE r.status = 'finished' ORDER BY r.rowid, c.step", con)

        return self._query(read)

    def runs(self, finished_only: bool = False) -> list[dict]:
        """One dict per planned run (or finished run), in the order they were planned, its values as stored:
        run_id, preset, profile, width, depth, budget, n_non_embedding, n_standard, n_total, status, final_loss,
        tokens, steps, seconds, device, git_commit, finished_at and spec (the run's spec, parsed)."""
        cols = ("run_id", "preset", "profile", "width", "depth", "budget", "n_non_embedding", "n_standard",
                "n_total", "status", "final_loss", "tokens", "steps", "seconds", "device", "git_commit",
                "finished_at", "spec")
        where = " WHERE status = 'finished'" if finished_only else ""
        rows = self._query(lambda con: con.execute(f"SELECT {', '.join(cols)} FROM runs{where} ORDER BY rowid")
                           .fetchall(), check=finished_only)
        for row in rows:
            check_run_id(row[0], self.path)
        return [dict(zip(cols, row[:-1]), spec=_parsed(row[-1])) for row in rows]

    def throughput_rows(self) -> list[tuple]:
        """The finished runs' (spec, tokens, seconds, device, finished_at), in the order they finished."""
        return self._query(lambda con: con.execute(
            "SELECT spec, tokens, seconds, device, finished_at FROM runs "
            "WHERE status='finished' ORDER BY finished_at").fetchall())

    def usage(self) -> dict:
        """What the finished runs cost: {runs, seconds (of training, summed), largest (the most parameters,
        all of them, of one model)}."""
        runs, seconds, largest = self._query(lambda con: con.execute(
            "SELECT COUNT(*), COALESCE(SUM(seconds), 0), MAX(n_total) FROM runs WHERE status = 'finished'")
            .fetchone(), check=False)
        return dict(runs=int(runs), seconds=float(seconds), largest=largest)

    def select_replicates(self, replicates, out_path: Path | str) -> Path:
        """A copy of the database with only the runs of ``replicates`` (e.g. ``[0]``: the sweep as a one-seed
        sweep would have been), so that every analysis can be rerun on a subset of the seeds. Overwrites
        ``out_path``; this database is left as it is."""
        out_path = Path(out_path)
        keep = sorted({int(r) for r in replicates})
        out_path.unlink(missing_ok=True)
        src, dst = sqlite3.connect(self.path), sqlite3.connect(out_path)
        try:
            src.backup(dst)
            with dst:
                dst.execute(f"CREATE TEMP TABLE drop_runs AS SELECT run_id FROM runs r WHERE {REPLICATE_OF} "
                            f"NOT IN ({','.join('?' * len(keep))})", keep)
                dst.execute("DELETE FROM curves WHERE run_id IN (SELECT run_id FROM drop_runs)")
                dst.execute("DELETE FROM runs WHERE run_id IN (SELECT run_id FROM drop_runs)")
                dst.execute("INSERT OR REPLACE INTO sweep VALUES ('seeds', ?)", (json.dumps(len(keep)),))
        except sqlite3.DatabaseError as exc:
            raise UserError(f"{self.path}: not a sweep database ({exc})") from None
        finally:
            src.close()
            dst.close()
        return out_path
