"""The sweep database's one reader (scalinglab.sweeps.SweepStore) and the plan's stored specs, on the committed
databases: they read as before, and a committed database still loads and resumes with its specs unchanged."""

from __future__ import annotations

import dataclasses
import importlib
import json
import shutil
import sqlite3
from pathlib import Path

import pytest
from scalinglab import sweeps
from scalinglab.errors import UserError
from scalinglab.sweeps import SweepStore, schema
from scalinglab.training import sweep
from scalinglab.training.config import TrainConfig
from scalinglab.training.sweep import store

plan = importlib.import_module("scalinglab.training.sweep.plan")  # the module (the package re-exports a function plan)

DATA = Path(__file__).resolve().parents[1] / "data" / "sweeps"
COMMITTED = sorted(DATA.glob("*.db")) + sorted(DATA.glob("*/*.db"))


def test_the_reader_and_the_plan_agree_on_which_presets_count_non_embedding_n():
    assert schema.NON_EMBEDDING_PRESETS == plan.NON_EMBEDDING_PRESETS


@pytest.mark.parametrize("db", COMMITTED, ids=lambda p: p.stem)
def test_a_committed_database_loads_and_its_specs_are_the_plans(db):
    meta = SweepStore(db).meta()
    planned = {r.run_id: r for r in sweep.plan(meta["preset"], meta["profile"], meta["vocab_size"], meta["seeds"])}
    with sqlite3.connect(db) as con:
        stored = dict(con.execute("SELECT run_id, spec FROM runs"))
    assert stored and set(stored) <= set(planned)
    for run_id, text in stored.items():
        spec = store.spec_from_dict(json.loads(text))
        assert spec == planned[run_id] and isinstance(spec.train, TrainConfig)
        # the train part is stored exactly as the plan writes it (byte for byte); the whole spec too, except in
        # the kaplan and hoffmann databases, made before the spec named its replicate and standard budgets
        written = plan.spec_to_dict(planned[run_id])
        assert json.dumps(written["train"]) == json.dumps(json.loads(text)["train"])
        if db.stem not in ("kaplan", "hoffmann"):
            assert json.dumps(written) == text


@pytest.mark.parametrize("name", ["hoffmann.db", "ladder/ladder0.db"])
def test_resuming_a_committed_database_changes_no_spec_and_trains_nothing(tmp_path, name):
    db = tmp_path / "copy.db"
    shutil.copyfile(DATA / name, db)
    with sqlite3.connect(db) as con:
        before = con.execute("SELECT run_id, spec, status FROM runs ORDER BY run_id").fetchall()
    meta = SweepStore(db).meta()
    prof = sweep.get_profile(meta["profile"])
    runs = sweep.plan(meta["preset"], prof, meta["vocab_size"], meta["seeds"])
    con = store.connect(db)   # what `scalinglab sweep` does on resuming, before it trains
    store.register_plan(con, meta["preset"], prof, runs, meta["vocab_size"])
    assert store.mark_for_retraining(con, {r.run_id: r for r in runs}) == []
    assert store.pending(con) == []
    after = con.execute("SELECT run_id, spec, status FROM runs ORDER BY run_id").fetchall()
    con.close()
    assert after == before


def test_train_config_is_frozen_and_stored_as_planned():
    (run, *_) = sweep.plan("hoffmann", "smoke", 512)
    with pytest.raises(dataclasses.FrozenInstanceError):
        run.train.lr = 1.0
    assert isinstance(run.train.eval_at_tokens, tuple)
    assert list(plan.spec_to_dict(run)["train"]) == [k for k in plan.SPEC_TRAIN_FIELDS if k not in plan.SCHEDULE_SHAPE]
    (sched, *_) = sweep.plan("schedules", "smoke", 512)
    assert list(plan.spec_to_dict(sched)["train"]) == list(plan.SPEC_TRAIN_FIELDS)
    assert store.spec_from_dict(json.loads(json.dumps(plan.spec_to_dict(sched)))) == sched
    with pytest.raises(UserError):
        TrainConfig(schedule="linear")


def test_the_store_reads_points_curves_runs_and_meta():
    hoffmann = SweepStore(DATA / "hoffmann.db")
    meta, counts = hoffmann.meta(), hoffmann.counts()
    assert meta["preset"] == "hoffmann" and counts == dict(planned=99, finished=99)
    points = hoffmann.points()
    assert (points["n"] == points["n_standard"]).all() and set(points["replicate"]) == {0, 1, 2}
    runs = hoffmann.runs(finished_only=True)
    assert len(runs) == 99 and all(r["spec"]["run_id"] == r["run_id"] for r in runs)
    kaplan = SweepStore(DATA / "kaplan.db").points()
    assert (kaplan["n"] == kaplan["n_non_embedding"]).all()   # Kaplan's count
    curves = SweepStore(DATA / "kaplan.db").curves(mean_over_seeds=True)
    assert set(curves["seeds"]) == {3}


def test_dense_curves_carry_each_rows_rate_and_schedule_and_read_old_databases():
    dense = SweepStore(DATA / "schedules" / "schedules.db").dense_curves()
    assert set(dense["schedule"]) == set(sweep.SCHEDULE_FAMILY) and dense["lr"].notna().all()
    assert (dense.groupby("run_id")["step"].diff().dropna() > 0).all()   # each run's rows in step order
    old = SweepStore(DATA / "ladder" / "ladder0.db").dense_curves()   # made before train_loss_mean was kept
    assert len(old) and old["train_loss_mean"].isna().all()


def test_sweep_report_is_a_frozen_result_not_a_dict():
    rep = sweeps.report(DATA / "kaplan.db")
    assert not isinstance(rep, dict)
    with pytest.raises(dataclasses.FrozenInstanceError):
        rep.finished = 0
    d = rep.to_dict()
    assert list(d)[:5] == ["db", "preset", "profile", "planned", "finished"] and "wall_seconds" not in d
    assert rep.summary().startswith("kaplan/cpu: 24/24 runs finished")


def test_a_file_that_is_not_a_sweep_database_is_named(tmp_path):
    bad = tmp_path / "notes.db"
    bad.write_text("not sqlite\n")
    for read in (lambda s: s.points(), lambda s: s.meta(), lambda s: s.runs(), lambda s: s.dense_curves()):
        with pytest.raises(UserError, match="notes.db: not a sweep database"):
            read(SweepStore(bad))
    with pytest.raises(UserError, match="no such sweep database"):
        SweepStore(tmp_path / "none.db")
