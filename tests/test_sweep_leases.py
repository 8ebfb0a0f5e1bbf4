"""A sweep never goes quiet: a claim whose process died on this host is taken at once, a wait for another live
process says so, and a database whose finished runs lost their curves says so instead of reporting them done."""

import shutil
import socket
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest
from scalinglab.errors import UserError
from scalinglab.training.sweep import store

KAPLAN = Path(__file__).resolve().parents[1] / "data" / "sweeps" / "kaplan.db"


@pytest.fixture
def db(tmp_path):
    """A copy of a committed sweep with two runs set back to planned."""
    path = tmp_path / "k.db"
    shutil.copy(KAPLAN, path)
    con = store.connect(path)   # adds the claim columns a database from before them lacks
    ids = [r[0] for r in con.execute("SELECT run_id FROM runs ORDER BY run_id LIMIT 2")]
    con.executemany("UPDATE runs SET status = 'planned' WHERE run_id = ?", [(i,) for i in ids])
    con.commit()
    return con, ids


def _dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def _hold(con, run_id, owner, seconds=120.0):
    con.execute("UPDATE runs SET owner = ?, lease_until = ? WHERE run_id = ?", (owner, time.time() + seconds, run_id))
    con.commit()


def test_a_dead_processes_claim_is_taken_at_once(db):
    con, ids = db
    dead = f"{socket.gethostname()}:{_dead_pid()}:abcd"
    for run_id in ids:
        _hold(con, run_id, dead)
    assert store.held_elsewhere(con, "me:1:x") == {}          # nothing worth waiting for
    spec = store.claim_next(con, "me:1:x", 60.0)              # before: None until the 120 s lease ran out
    assert spec is not None and spec.run_id in ids


def test_a_live_processes_claim_is_waited_for_and_timed(db):
    import os

    con, ids = db
    alive = f"{socket.gethostname()}:{os.getpid()}:beef"      # this very process: certainly running
    elsewhere = "another-host:12345:cafe"                      # another host: only its lease can tell
    _hold(con, ids[0], alive, 100.0)
    _hold(con, ids[1], elsewhere, 50.0)
    assert store.claim_next(con, "me:1:x", 60.0) is None
    assert set(store.held_elsewhere(con, "me:1:x")) == set(ids)
    assert 40 < store.lease_left(con, "me:1:x") <= 50


def test_finished_runs_without_curves_are_damaged(tmp_path):
    path = tmp_path / "k.db"
    shutil.copy(KAPLAN, path)
    con = sqlite3.connect(path, isolation_level=None)
    store.check_readable(con, path)                            # as committed: every finished run has its curve
    con.execute("DELETE FROM curves")                          # as if the table was dropped and recreated empty
    with pytest.raises(UserError, match="no curve rows"):
        store.check_readable(con, path)
