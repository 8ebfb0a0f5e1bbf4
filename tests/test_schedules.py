"""Learning-rate schedules (scalinglab.schedules): their shapes at known steps, and that training applies and
records exactly them; the schedule family's sweep preset, its curves and its store."""

import sqlite3
import subprocess
import sys

import numpy as np
import pytest
from scalinglab.errors import UserError
from scalinglab.schedules import SCHEDULES, Schedule

# 100 steps of one position each, 10 of warmup, peak 1: the values below are exact fractions
KW = dict(peak=1.0, total=100, warmup=10)


def test_every_schedule_warms_up_linearly_to_the_peak():
    for name in SCHEDULES:
        s = Schedule(name, **KW)
        # nanoGPT's lr·(it+1)/warmup: the first step learns at a tenth, the tenth step is at the peak
        assert [s.at_step(i) for i in range(10)] == pytest.approx([(i + 1) / 10 for i in range(10)])
        assert s.at_step(10) == 1.0


def test_constant_stays_at_the_peak():
    s = Schedule("constant", **KW)
    assert set(s.lrs()[10:]) == {1.0} and s.at_step(10**6) == 1.0


def test_cosine_halves_at_mid_decay_and_ends_near_the_floor():
    s = Schedule("cosine", **KW, min_lr_ratio=0.1)
    assert s.at_step(55) == pytest.approx(0.55)       # half-way through the decay: mean of peak and floor
    assert s.at_step(99) == pytest.approx(0.1 + 0.45 * (1 + np.cos(np.pi * 89 / 90)))
    assert s.at_step(100) == pytest.approx(0.1) and s.at_step(500) == pytest.approx(0.1)
    assert np.all(np.diff(s.lrs()[10:]) < 0)


def test_wsd_is_stable_then_cools_down_linearly_over_the_last_fifth():
    s = Schedule("wsd", **KW, cooldown=0.2, min_lr_ratio=0.1)
    lrs = s.lrs()
    assert set(lrs[10:81]) == {1.0}                    # stable up to the cooldown's first step (step 80)
    assert lrs[90] == pytest.approx(0.1 + 0.9 * 10 / 20)  # half-way down: 0.55
    assert lrs[99] == pytest.approx(0.1 + 0.9 / 20)       # the last step, one step above the floor
    steps = np.diff(lrs[80:])
    assert steps == pytest.approx(np.full(19, -0.9 / 20))  # linear: equal decrements
    assert s.at_step(100) == pytest.approx(0.1)
    zero = Schedule("wsd", **KW, min_lr_ratio=0.0)          # Hägele et al.'s decay to zero
    assert zero.at_step(90) == pytest.approx(0.5) and zero.at_step(100) == 0.0


def test_step_drops_by_the_factor_at_half_way():
    s = Schedule("step", **KW, drop_at=0.5, drop_factor=0.1)
    lrs = s.lrs()
    assert set(lrs[10:50]) == {1.0} and lrs[50:] == pytest.approx(np.full(50, 0.1))
    late = Schedule("step", **KW, drop_at=0.8, drop_factor=0.3)
    assert late.at_step(79) == 1.0 and late.at_step(80) == pytest.approx(0.3)


def test_positions_in_tokens_give_the_same_rates_as_steps():
    for name in SCHEDULES:
        steps = Schedule(name, peak=3e-3, total=100, warmup=10)
        tokens = Schedule(name, peak=3e-3, total=100 * 256, warmup=10 * 256, step_size=256)
        assert tokens.n_steps() == steps.n_steps() == 100
        assert tokens.lrs() == pytest.approx(steps.lrs(), rel=1e-12)
        assert list(tokens.lrs()) == [tokens.at_step(i) for i in range(100)]  # the same floats, not just close


@pytest.mark.parametrize("bad", [dict(name="linear"), dict(cooldown=0), dict(cooldown=1.5), dict(drop_at=1.0),
                                 dict(drop_factor=-0.1), dict(min_lr_ratio=2), dict(total=0), dict(peak=float("nan"))])
def test_impossible_schedules_are_refused(bad):
    args = dict(name="wsd", **KW) | bad
    with pytest.raises(UserError, match="schedule"):
        Schedule(**args)


def test_schedules_need_no_torch():
    code = "import sys, scalinglab.schedules; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_training_applies_and_records_the_schedules_rates():
    import torch
    from scalinglab.training.loop import TrainConfig, schedule_of, train
    from scalinglab.training.model import GPTConfig

    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    tokens = (np.cumsum(rng.integers(1, 3, 20_000)) % 32).astype(np.uint16)
    model = GPTConfig(vocab_size=32, seq_len=16, width=16, depth=1, head_dim=8)
    per_step = 4 * 16
    for name in ("wsd", "step"):
        cfg = TrainConfig(lr=1e-2, schedule=name, warmup_tokens=2 * per_step, total_tokens=24 * per_step,
                          batch_size=4, eval_at_tokens=[s * per_step for s in range(1, 24)], eval_tokens=128)
        applied = []
        orig = torch.optim.AdamW.step

        def spy(self, *a, **k):
            applied.append(self.param_groups[0]["lr"])
            return orig(self, *a, **k)

        torch.optim.AdamW.step = spy
        try:
            res = train(model, cfg, tokens, tokens[:2000])
        finally:
            torch.optim.AdamW.step = orig
        sched = schedule_of(cfg, per_step)
        assert applied == list(sched.lrs()) and len(applied) == 24  # every step's rate is the schedule's
        assert [r["lr"] for r in res.curve] == [applied[r["step"] - 1] for r in res.curve]  # and recorded exactly
        # the smoothed training loss is the mean of the batches since the last row: at every step here, the batch's
        assert [r["train_loss_mean"] for r in res.curve] == [r["train_loss"] for r in res.curve]


def test_smoothed_training_loss_averages_the_interval_and_survives_a_resume(tmp_path):
    import torch
    from scalinglab.training.loop import TrainConfig, train
    from scalinglab.training.model import GPTConfig

    torch.set_num_threads(1)
    rng = np.random.default_rng(1)
    tokens = (np.cumsum(rng.integers(1, 3, 20_000)) % 32).astype(np.uint16)
    model = GPTConfig(vocab_size=32, seq_len=16, width=16, depth=1, head_dim=8)
    cfg = TrainConfig(lr=1e-2, schedule="wsd", total_tokens=30 * 64, batch_size=4, eval_at_tokens=[10 * 64, 20 * 64],
                      eval_tokens=256, checkpoint_every_s=0.0)
    every = train(model, TrainConfig(**{**cfg.__dict__, "eval_at_tokens": [s * 64 for s in range(1, 31)]}),
                  tokens, tokens[:2000])
    ref = train(model, cfg, tokens, tokens[:2000])
    batch = [r["train_loss"] for r in every.curve]  # each step's batch loss (same seed, same batches)
    # rows at steps 10, 20, 30: each the mean of its ten batches (float sums in another order: 1e-12)
    assert [r["train_loss_mean"] for r in ref.curve] == pytest.approx(
        [np.mean(batch[0:10]), np.mean(batch[10:20]), np.mean(batch[20:30])], rel=1e-12)

    class Killed(Exception):
        pass

    def die(row):
        if row["step"] == 20:
            raise Killed

    ckpt = tmp_path / "c.pt"
    with pytest.raises(Killed):  # checkpoints at every step, so the one before step 20 holds a partial sum
        train(model, cfg, tokens, tokens[:2000], checkpoint=ckpt, on_eval=die)
    resumed = train(model, cfg, tokens, tokens[:2000], checkpoint=ckpt)
    assert [r["train_loss_mean"] for r in resumed.curve] == [r["train_loss_mean"] for r in ref.curve]


def test_the_schedules_preset_plans_the_family():
    from scalinglab.accounting.decoder import flops_per_token
    from scalinglab.training import sweep

    prof = sweep.get_profile("cpu-schedules")
    runs = sweep.plan("schedules", prof, 512)
    shapes = sorted({(r.width, r.depth) for r in runs})
    assert len(shapes) >= 3
    for w, d in shapes:
        mine = [r for r in runs if (r.width, r.depth) == (w, d)]
        seeds = 3 if (w, d) == shapes[len(shapes) // 2] else 1            # the middle size has 3 seeds
        assert len(mine) == 4 * seeds and {r.replicate for r in mine} == set(range(seeds))
        assert {r.train.schedule for r in mine} == set(sweep.SCHEDULE_FAMILY)
        one = {k: v for k, v in mine[0].train.to_dict().items() if k not in ("schedule", "seed")}
        assert all({k: v for k, v in r.train.to_dict().items() if k not in ("schedule", "seed")} == one for r in mine)
        t = mine[0].train
        # every size at the same tokens per parameter, 20, to within a step
        assert abs(t.total_tokens / mine[0].n_standard - 20) * mine[0].n_standard <= t.batch_size * 128
        steps = t.total_tokens // (t.batch_size * 128)
        evals = np.array(t.eval_at_tokens) // (t.batch_size * 128)
        # >= 100 points, the last at the end, no gap wider than a hundredth of the run (+1 for rounding)
        assert len(evals) >= 100 and evals[-1] == steps and np.diff(np.r_[0, evals]).max() <= steps / 100 + 1
        # evaluations cost under 15% of the training's FLOPs (forward only: a third of a training token)
        fpt = flops_per_token(w, d, 512, seq_len=128).with_attention
        assert len(evals) * prof.eval_tokens * fpt / 3 < 0.15 * fpt * t.total_tokens
    assert len({r.run_id for r in runs}) == len(runs) == 20
    assert sweep.cost("schedules", prof, 512)["seconds"] <= 4 * 3600   # within ~4 core-hours, as measured


def test_the_schedules_smoke_sweep_records_dense_curves(cache, tmp_path):
    from scalinglab.training import sweep
    from scalinglab.training.loop import schedule_of

    db = tmp_path / "schedules.db"
    counts = sweep.run_sweep("schedules", "smoke", db, progress=False)
    assert counts == dict(planned=20, finished=20)
    con = sqlite3.connect(db)
    rows = con.execute("SELECT r.spec, c.step, c.lr, c.loss, c.train_loss_mean FROM curves c JOIN runs r "
                       "USING (run_id) ORDER BY c.run_id, c.step").fetchall()
    con.close()
    by_run: dict = {}
    for spec, step, lr, loss, mean in rows:
        by_run.setdefault(spec, []).append((step, lr, loss, mean))
    assert len(by_run) == 20
    for spec, curve in by_run.items():
        run = sweep.spec_from_dict(__import__("json").loads(spec))
        sched = schedule_of(run.train, run.train.batch_size * run.model["seq_len"])
        assert len(curve) >= sweep.get_profile("smoke").curve_points and curve[-1][0] == sched.n_steps()
        assert [lr for _, lr, _, _ in curve] == [sched.at_step(s - 1) for s, _, _, _ in curve]  # exactly
        assert all(m is not None and m > 0 for *_, m in curve)


def test_a_database_made_before_the_smoothed_loss_still_reads_and_records(tmp_path):
    from scalinglab.training import sweep
    from scalinglab.training.sweep import store

    db = tmp_path / "old.db"
    old = store.SCHEMA.replace("    train_loss_mean REAL, PRIMARY KEY", "    PRIMARY KEY")
    assert old != store.SCHEMA
    con = sqlite3.connect(db)
    con.executescript(old)
    con.close()
    con = store.connect(db)   # brought up to date
    assert "train_loss_mean" in {r[1] for r in con.execute("PRAGMA table_info(curves)")}
    prof = sweep.get_profile("smoke")
    (run, *_) = sweep.plan("schedules", prof, 512)
    store.register_plan(con, "schedules", prof, [run], 512)
    curve = [dict(step=30, tokens=30 * 256, loss=3.0, train_loss=3.1, lr=1e-3, seconds=1.0)]  # no mean: NULL
    assert store.record_result(con, run, dict(curve=curve, final_loss=3.0, tokens=7680, steps=30, seconds=1.0,
                                              tokens_per_s=1.0, device="cpu", versions={}, git_commit="x",
                                              checkpoint="c", tokens_per_step=256))
    assert con.execute("SELECT loss, train_loss_mean FROM curves").fetchall() == [(3.0, None)]
    con.close()
