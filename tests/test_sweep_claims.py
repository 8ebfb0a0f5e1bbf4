"""Sweeps shared by several processes (claims with leases), damaged databases and checkpoints, and the
launcher's refusals before any work."""

import json
import os
import pickle
import re
import signal
import sqlite3
import subprocess
import sys
import time

import pytest
import torch
from scalinglab import sweeps
from scalinglab.cli import main
from scalinglab.errors import UserError
from scalinglab.training import sweep
from scalinglab.training.sweep import launch, store


def _rows(db, cols="run_id, status, claims, owner, finished_by, finished_at, final_loss"):
    con = sqlite3.connect(db)
    try:
        return {r[0]: r[1:] for r in con.execute(f"SELECT {cols} FROM runs")}
    finally:
        con.close()


def _planned_only(db, preset="hoffmann"):
    """A database with the smoke plan registered and nothing trained (no tokenizer needed)."""
    prof = sweep.get_profile("smoke")
    con = sweep.connect(db)
    sweep.register_plan(con, preset, prof, sweep.plan(preset, prof, 512), 512)
    return con


def _sweep_cmd(db, *extra):
    return [sys.executable, "-m", "scalinglab", "sweep", "--preset", "hoffmann", "--profile", "smoke",
            "--db", str(db), *extra]


# --- claims --------------------------------------------------------------------------------

def test_claims_are_exclusive_until_their_lease_runs_out(tmp_path):
    con = _planned_only(tmp_path / "h.db")
    order = [r.run_id for r in store.pending(con)]
    a = store.claim_next(con, "hostA:1:aa", lease_s=2.0)
    assert a.run_id == order[0]
    b = [store.claim_next(con, "hostB:2:bb", lease_s=30.0) for _ in order[1:]]
    assert [r.run_id for r in b] == order[1:]                      # the first run is A's: B takes the others
    assert store.claim_next(con, "hostC:3:cc", lease_s=30.0) is None  # everything is held
    assert set(store.held_elsewhere(con, "hostC:3:cc")) == set(order)
    assert store.renew(con, "hostB:2:bb", lease_s=30.0) == len(order) - 1  # B's heartbeat; A has stopped beating
    (expiry,) = con.execute("SELECT lease_until FROM runs WHERE run_id = ?", (a.run_id,)).fetchone()
    time.sleep(max(expiry - time.time(), 0) + 0.05)
    c = store.claim_next(con, "hostC:3:cc", lease_s=30.0)
    assert c.run_id == a.run_id                                     # A's lease ran out: its run is C's now
    assert store.claim_next(con, "hostC:3:cc", lease_s=30.0) is None
    # A, come back late, cannot record a result over C's claim
    result = dict(curve=[dict(step=1, tokens=256, loss=5.0)], final_loss=5.0, tokens=256, steps=1, seconds=1.0,
                  tokens_per_s=256.0, device="cpu", versions={}, git_commit="x", checkpoint="x", tokens_per_step=256)
    assert not store.record_result(con, a, result, owner="hostA:1:aa")
    assert store.record_result(con, c, result, owner="hostC:3:cc")
    assert store.record_result(con, c, result, owner="hostC:3:cc") is False  # finished: never recorded twice
    row = _rows(tmp_path / "h.db")[a.run_id]
    assert row[:4] == ("finished", 2, None, "hostC:3:cc")           # claimed twice, finished by C
    store.release(con, "hostB:2:bb")                                # B stops: its runs are claimable at once
    assert store.claim_next(con, "hostD:4:dd", lease_s=1.0).run_id == order[1]
    con.close()


def test_an_old_database_gains_the_claim_columns_and_stays_readable(tmp_path):
    """A database made before claims (data/sweeps/*.db): readers never alter it; a sweep adds the columns."""
    db = tmp_path / "old.db"
    con = sqlite3.connect(db)
    old_schema = store.SCHEMA.replace(",\n    owner TEXT, lease_until REAL, claims INTEGER NOT NULL DEFAULT 0, "
                                      "finished_by TEXT", "")
    assert old_schema != store.SCHEMA
    con.executescript(old_schema)
    prof = sweep.get_profile("smoke")
    sweep.register_plan(con, "hoffmann", prof, sweep.plan("hoffmann", prof, 512), 512)
    con.close()
    before = db.read_bytes()
    sweeps.report(db)
    sweeps.isoflop_points(db)
    assert db.read_bytes() == before
    con = sweep.connect(db)
    cols = {r[1] for r in con.execute("PRAGMA table_info(runs)")}
    assert set(store.ADDED_COLUMNS) <= cols
    assert store.claim_next(con, "h:1:t", 5.0) is not None
    con.close()
    sweep.connect(db).close()  # a second time: nothing to add


def test_two_processes_share_one_sweep_and_train_every_run_once(cache, tmp_path):
    db = tmp_path / "h.db"
    env = dict(os.environ, SCALINGLAB_CACHE=str(cache), SCALINGLAB_SWEEP_LEASE_S="5")
    procs = [subprocess.Popen(_sweep_cmd(db, *extra), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              text=True) for extra in ((), ("--workers", "2"))]  # one serial, one with a pool
    errs = [p.communicate(timeout=300)[1] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], errs
    rows = _rows(db)
    planned = len(sweep.plan("hoffmann", "smoke", 512))
    assert len(rows) == planned and all(r[0] == "finished" for r in rows.values())
    # each run was claimed (its training started) once, and recorded by the process that claimed it
    assert all(r[1] == 1 for r in rows.values()), {k: r[1] for k, r in rows.items()}
    assert all(r[2] is None for r in rows.values())                 # no claim left behind
    pids = {int(r[3].split(":")[1]) for r in rows.values()}
    assert pids == {p.pid for p in procs}                           # both did some of the work
    con = sqlite3.connect(db)
    per_run = dict(con.execute("SELECT run_id, COUNT(*) FROM curves GROUP BY run_id").fetchall())
    con.close()
    assert set(per_run) == set(rows)


def test_a_sigkilled_claimants_run_is_taken_over_without_waiting_out_its_lease(cache, tmp_path, monkeypatch):
    db = tmp_path / "h.db"
    env = dict(os.environ, SCALINGLAB_CACHE=str(cache), SCALINGLAB_SWEEP_LEASE_S="3")
    # Kill a claimant while it holds a run. The kill can still land in the instant between one run's end and
    # the next claim (most likely on a loaded machine); then nothing is held, and a new claimant takes over
    # the same database and is killed in turn (SIGKILL releases nothing, so the earlier state stays).
    held, proc = {}, None
    for _attempt in range(5):
        proc = subprocess.Popen(_sweep_cmd(db), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 120
        killed = False
        while time.time() < deadline and not killed:
            try:
                rows = _rows(db, "run_id, status, owner, lease_until")
            except sqlite3.OperationalError:  # tables not there yet, or the column not yet added
                rows = {}
            holding = [k for k, r in rows.items() if r[0] != "finished" and r[1]]
            if sum(r[0] == "finished" for r in rows.values()) >= 2 and holding:
                proc.send_signal(signal.SIGKILL)
                proc.wait()
                killed = True
                rows = _rows(db, "run_id, status, owner, lease_until")
                held = {k: r for k, r in rows.items() if r[0] != "finished" and r[1]}
            time.sleep(0.02)
        proc.kill()
        proc.wait()
        if held:
            break
        time.sleep(3.5)  # let any lease of the killed process run out before the next claimant starts
    assert held and len(held) == 1, "the kill must land while the claimant holds a run"
    (run_id, (_, dead_owner, lease_until)), = held.items()
    assert int(dead_owner.split(":")[1]) == proc.pid
    finished_before = {k: r for k, r in _rows(db).items() if r[0] == "finished"}

    claimed = []
    real_claim = launch.claim_next

    def logged_claim(con, owner, lease_s):
        spec = real_claim(con, owner, lease_s)
        if spec is not None:
            claimed.append((time.time(), spec.run_id))
        return spec

    monkeypatch.setattr(launch, "claim_next", logged_claim)
    counts = sweep.run_sweep("hoffmann", "smoke", db, progress=False, lease_s=3)
    planned = len(sweep.plan("hoffmann", "smoke", 512))
    assert counts == dict(planned=planned, finished=planned)
    rows = _rows(db)
    # the killed process's run: claimed again exactly once, then finished here (its process being gone from this
    # host, without waiting out the lease: tests/test_sweep_leases.py checks that part deterministically)
    assert [r for _, r in claimed].count(run_id) == 1
    assert rows[run_id][1] == 2 and rows[run_id][3] != dead_owner
    # every other run was trained once: the dead process's finished runs were left alone
    assert all(r[1] == 1 for k, r in rows.items() if k != run_id)
    assert {k: rows[k] for k in finished_before} == finished_before
    assert {r for _, r in claimed} == set(rows) - set(finished_before)


def test_the_submitit_launcher_skips_runs_another_process_holds(cache, tmp_path):
    pytest.importorskip("submitit")
    db = tmp_path / "s.db"
    con = _planned_only(db)
    first = store.claim_next(con, "elsewhere:1:zz", lease_s=600)  # a live claim of another machine's sweep
    con.close()
    counts = sweep.run_sweep("hoffmann", "smoke", db, launcher="submitit", executor="local", max_runs=2,
                             progress=False)
    assert counts["finished"] == 2
    rows = _rows(db)
    assert rows[first.run_id][:3] == ("planned", 1, "elsewhere:1:zz")  # untouched
    assert sorted(r[1] for r in rows.values() if r[0] == "finished") == [1, 1]


# --- damaged checkpoints, specs and losses -------------------------------------------------

class _Boom:
    def __reduce__(self):
        return (os.system, ("touch hacked",))


@pytest.mark.parametrize("damage", ["garbage", "truncated", "hostile", "other_run"])
def test_a_damaged_resume_checkpoint_is_moved_aside_and_the_run_restarts(damage, cache, tmp_path, capsys,
                                                                         monkeypatch):
    monkeypatch.chdir(tmp_path)
    db = tmp_path / "h.db"
    con = _planned_only(db)
    order = [r.run_id for r in store.pending(con)]
    con.close()
    ckpt = sweep.checkpoint_path(db, order[0])
    ckpt.parent.mkdir(parents=True)
    if damage == "garbage":
        ckpt.write_bytes(b"not a checkpoint at all")
    elif damage == "truncated":  # a real checkpoint cut short
        from scalinglab.training.model import GPT, GPTConfig, save_checkpoint
        save_checkpoint(ckpt, GPT(GPTConfig(vocab_size=512, seq_len=32, width=8, depth=1, head_dim=8)))
        ckpt.write_bytes(ckpt.read_bytes()[:300])
    elif damage == "hostile":  # a pickle that would run a command if it were unpickled without weights_only
        ckpt.write_bytes(pickle.dumps(_Boom()))
    else:  # another run's finished checkpoint, copied over this one's
        sweep.run_sweep("hoffmann", "smoke", db, max_runs=2, progress=False)  # trains order[0] and order[1]
        con = sqlite3.connect(db)
        with con:
            con.execute("UPDATE runs SET status='planned' WHERE run_id = ?", (order[0],))
        con.close()
        ckpt.write_bytes(sweep.checkpoint_path(db, order[1]).read_bytes())
    damaged = ckpt.read_bytes()
    assert main(["sweep", "--preset", "hoffmann", "--profile", "smoke", "--db", str(db), "--max-runs", "1"]) == 0
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if "cannot resume" in ln]
    assert len(lines) == 1 and f"{db}: run {order[0]}: " in lines[0] and "moved it to" in lines[0]
    assert "Traceback" not in err
    assert (ckpt.with_name(ckpt.name + ".corrupt")).read_bytes() == damaged
    assert _rows(db)[order[0]][0] == "finished" and ckpt.is_file()
    assert not (tmp_path / "hacked").exists()


def test_train_refuses_a_damaged_checkpoint_in_one_line_and_leaves_it(tmp_path):
    import numpy as np
    from scalinglab.training.loop import CheckpointError, TrainConfig, train
    from scalinglab.training.model import GPTConfig, load_checkpoint

    bad = tmp_path / "run.pt"
    bad.write_bytes(b"\x00garbage")
    tokens = np.random.default_rng(0).integers(0, 64, 5_000).astype(np.uint16)
    cfg = GPTConfig(vocab_size=64, seq_len=16, width=8, depth=1, head_dim=8)
    with pytest.raises(CheckpointError, match=r"run\.pt: cannot resume from this checkpoint \(") as exc:
        train(cfg, TrainConfig(total_tokens=2_000, batch_size=4, device="cpu"), tokens, tokens, checkpoint=bad)
    assert isinstance(exc.value, UserError) and "\n" not in str(exc.value)
    assert bad.read_bytes() == b"\x00garbage"
    with pytest.raises(UserError, match=r"run\.pt: not a scalinglab GPT checkpoint"):
        load_checkpoint(bad)
    # a real checkpoint whose curve was tampered with (a NaN loss) is refused too
    good = tmp_path / "good.pt"
    train(cfg, TrainConfig(total_tokens=2_000, batch_size=4, device="cpu"), tokens, tokens, checkpoint=good)
    state = torch.load(good, weights_only=True)
    state["curve"][-1]["loss"] = float("nan")
    torch.save(state, good)
    with pytest.raises(CheckpointError, match="finite losses"):
        train(cfg, TrainConfig(total_tokens=2_000, batch_size=4, device="cpu"), tokens, tokens, checkpoint=good)


def _damage(db, sql, *args):
    con = sqlite3.connect(db)
    with con:
        con.execute(sql, args)
    con.close()


@pytest.mark.parametrize("damage", ["spec", "negative", "inf", "nan_text", "final_loss"])
def test_a_damaged_finished_run_is_refused_by_readers_and_retrained_by_the_sweep(damage, cache, tmp_path,
                                                                                  capsys):
    db = tmp_path / "h.db"
    sweep.run_sweep("hoffmann", "smoke", db, max_runs=2, progress=False)
    points = sweeps.isoflop_points(db)
    run_id = points["run_id"].iloc[0]
    if damage == "spec":
        _damage(db, "UPDATE runs SET spec = '{\"run_id\": \"x\", broken' WHERE run_id = ?", run_id)
    elif damage == "final_loss":
        _damage(db, "UPDATE runs SET final_loss = -3 WHERE run_id = ?", run_id)
    else:
        value = {"negative": "-1.5", "inf": "9e999", "nan_text": "'NaN'"}[damage]
        _damage(db, f"UPDATE curves SET loss = {value} WHERE run_id = ? AND step = "
                    "(SELECT MAX(step) FROM curves WHERE run_id = ?)", run_id, run_id)
    for read in (sweeps.isoflop_points, sweeps.loss_curves, sweeps.report):
        with pytest.raises(UserError, match=re.escape(f"{db}: run {run_id} has ")) as exc:
            read(db)
        assert "\n" not in str(exc.value)
    assert main(["sweep-report", "--db", str(db)]) == 2
    err = capsys.readouterr().err
    assert f"run {run_id} has" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    # the sweep marks it for retraining (here: re-recorded from its intact final checkpoint)
    sweep.run_sweep("hoffmann", "smoke", db, max_runs=0, progress=False)
    assert f"{db}: run {run_id} had " in capsys.readouterr().err
    assert _rows(db)[run_id][0] == "planned"
    sweep.run_sweep("hoffmann", "smoke", db, max_runs=1, progress=False)
    assert _rows(db)[run_id][0] == "finished"
    after = sweeps.isoflop_points(db)
    assert after.equals(points)


def test_a_broken_spec_of_a_planned_run_is_replanned_and_an_unknown_one_refused(cache, tmp_path, capsys):
    db = tmp_path / "h.db"
    con = _planned_only(db)
    first = store.pending(con)[0]
    con.close()
    _damage(db, "UPDATE runs SET spec = 'not json' WHERE run_id = ?", first.run_id)
    sweep.run_sweep("hoffmann", "smoke", db, max_runs=1, progress=False)
    assert f"run {first.run_id} had a broken spec" in capsys.readouterr().err
    assert _rows(db)[first.run_id][0] == "finished"
    con = sqlite3.connect(db)
    assert store.spec_from_dict(json.loads(con.execute("SELECT spec FROM runs WHERE run_id = ?",
                                                       (first.run_id,)).fetchone()[0])) == first
    with con:
        con.execute("INSERT INTO runs (run_id, preset, profile, width, depth, budget, n_non_embedding, n_standard, "
                    "n_total, spec) VALUES ('stranger', 'hoffmann', 'smoke', 1, 1, 1, 1, 1, 1, '{oops')")
    con.close()
    with pytest.raises(UserError, match=re.escape(f"{db}: run stranger has a broken spec") + ".* not in this sweep's plan"):
        sweep.run_sweep("hoffmann", "smoke", db, max_runs=1, progress=False)


def test_an_impossible_loss_from_training_is_not_recorded(tmp_path):
    db = tmp_path / "h.db"
    con = _planned_only(db)
    spec = store.claim_next(con, "h:1:t", 60)
    result = dict(curve=[dict(step=1, tokens=256, loss=float("nan"))], final_loss=float("nan"), tokens=256,
                  steps=1, seconds=1.0, tokens_per_s=256.0, device="cpu", versions={}, git_commit="x",
                  checkpoint="x", tokens_per_step=256)
    with pytest.raises(UserError, match=re.escape(f"{db}: run {spec.run_id} trained to an impossible loss nan")):
        store.record_result(con, spec, result, owner="h:1:t")
    con.close()
    assert _rows(db)[spec.run_id][0] == "planned"


# --- refused before any work ---------------------------------------------------------------

@pytest.mark.parametrize("workers", [0, -2])
def test_workers_below_one_are_refused(workers, tmp_path, capsys):
    with pytest.raises(UserError, match=f"workers must be a whole number of at least 1, got {workers}"):
        sweep.run_sweep("kaplan", "smoke", tmp_path / "k.db", workers=workers, progress=False)
    assert main(["sweep", "--preset", "kaplan", "--db", str(tmp_path / "k.db"), "--workers", str(workers)]) == 2
    err = capsys.readouterr().err
    assert f"--workers must be >= 1, not {workers}" in err
    assert not (tmp_path / "k.db").exists()


def test_a_bad_lease_is_refused(tmp_path, monkeypatch):
    with pytest.raises(UserError, match="lease must be a positive number of seconds, got 0"):
        sweep.run_sweep("kaplan", "smoke", tmp_path / "k.db", lease_s=0, progress=False)
    monkeypatch.setenv(launch.LEASE_ENV, "soon")
    with pytest.raises(UserError, match=r"got 'soon' \(from \$SCALINGLAB_SWEEP_LEASE_S\)"):
        sweep.run_sweep("kaplan", "smoke", tmp_path / "k.db", progress=False)


@pytest.mark.parametrize("preset, profile", [("kaplan", "smoke"), ("hoffmann", "cpu")])
def test_another_sweeps_database_is_refused_before_tokenizing(preset, profile, tmp_path, monkeypatch, capsys):
    db = tmp_path / "h.db"
    _planned_only(db).close()  # a hoffmann/smoke database

    def no_tokenizing(prof):
        raise AssertionError("tokenized before checking the database")

    monkeypatch.setattr(launch, "load_tokens", no_tokenizing)
    with pytest.raises(UserError, match=f"{db}: database holds the hoffmann/smoke sweep, not {preset}/{profile}"):
        sweep.run_sweep(preset, profile, db, progress=False)
    assert main(["sweep", "--preset", preset, "--profile", profile, "--db", str(db)]) == 2
    assert "holds the hoffmann/smoke sweep" in capsys.readouterr().err
