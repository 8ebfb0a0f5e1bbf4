import json
import math
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scalinglab import sweeps
from scalinglab.accounting.decoder import step_at
from scalinglab.cli import main
from scalinglab.errors import UserError
from scalinglab.harness import sweeps as notebook_sweeps
from scalinglab.training import sweep
from scalinglab.training.model import GPTConfig


def test_plans_follow_the_presets():
    prof = sweep.get_profile("cpu")
    kaplan = sweep.plan("kaplan", prof, vocab_size=1024)
    hoffmann = sweep.plan("hoffmann", prof, vocab_size=1024)
    assert len(kaplan) == len(prof.shapes_for("kaplan"))                      # one run per shape
    # one run per (budget, shape) whose tokens per parameter lie in the profile's window
    lo, hi = prof.tokens_per_param
    pairs = {(c, w, d) for c in prof.budgets["hoffmann"] for w, d in prof.shapes}
    inside = {(r.budget, r.width, r.depth) for r in hoffmann}
    assert len(inside) == len(hoffmann) and inside <= pairs and len(inside) < len(pairs)
    assert all(lo <= r.budget / (6 * r.n_standard**2) <= hi for r in hoffmann)
    assert all(sum(r.budget == c for r in hoffmann) >= 5 for c in prof.budgets["hoffmann"])  # an isoFLOP each
    for r in kaplan:
        t = r.train
        assert (t.schedule, t.lr, t.batch_size, t.warmup_tokens) == (
            "constant", prof.kaplan_lr, prof.batch_size, prof.kaplan_warmup_tokens)
        # each logged budget is reached: 6 * N_non_embedding * D >= C, by less than one token's worth
        for c, d in zip(r.budgets, t.eval_at_tokens):
            assert 0 <= 6 * r.n_non_embedding * d - c < 6 * r.n_non_embedding
        assert t.total_tokens <= prof.kaplan_max_tokens
    # the smallest Kaplan models are cheap in Kaplan's count and miss the largest budgets
    assert len(kaplan[0].budgets) < len(kaplan[-1].budgets) == len(prof.budgets["kaplan"])
    top = [r for r in hoffmann if r.budget == max(prof.budgets["hoffmann"])]
    assert all(r.train.schedule == "cosine" and r.train.beta2 == 0.99 for r in top)
    for r in hoffmann:  # whole steps, at least MIN_STEPS of them: D is C/(6N) to within half a step
        step = r.train.batch_size * prof.seq_len
        assert r.train.total_tokens % step == 0 and r.train.total_tokens >= sweep.MIN_STEPS * step
        assert abs(r.train.total_tokens - r.budget / (6 * r.n_standard)) <= step / 2 + 1
    for r in hoffmann:  # evaluated every half-octave of compute on the way, for Approach 1; the end last
        evals = r.train.eval_at_tokens
        assert evals[-1] == r.train.total_tokens and list(evals) == sorted(evals)
        ratios = np.diff(np.log2(evals[:-1]))
        assert np.allclose(ratios, 0.5, atol=0.01)
        assert all(6 * r.n_standard * t >= min(prof.budgets["hoffmann"]) * 0.999 for t in evals[:-1])
    top_evals = top[0].train.eval_at_tokens
    assert len(top_evals) == 2 * len(prof.budgets["hoffmann"]) - 1  # the largest budget reaches down to the smallest
    lrs = [r.train.lr for r in top]
    assert all(b < a for a, b in zip(lrs, lrs[1:]))                            # lr falls with N
    assert all(r.n_standard - r.n_non_embedding == 1024 * r.width for r in top)  # the head's matrix
    with pytest.raises(Exception, match="unknown sweep preset"):
        sweep.plan("chinchilla", prof, 1024)


def test_ladder_presets_make_one_change_per_step():
    """Porian et al.'s ladder: each trained step differs from the one before in the intended fields."""
    prof = sweep.get_profile("cpu-ladder")
    vocab = 512
    plans = {p: sweep.plan(p, prof, vocab, seeds=3) for p in sweep.LADDER}
    for p, runs in plans.items():
        budgets = prof.budgets[p]
        assert max(budgets) / min(budgets) >= 100 * (1 - 1e-9)                 # at least two decades
        assert len({r.run_id for r in runs}) == len(runs)                       # distinct run ids
        first = [r for r in runs if r.replicate == 0]
        assert len(runs) == 3 * len(first) and {r.replicate for r in runs} == {0, 1, 2}
        assert all(sorted(r.train.seed for r in runs if re.sub(r"-s\d+$", "", r.run_id) == f.run_id)
                   == [0, 1, 2] for f in first)
        for c in budgets:  # an isoFLOP curve at every budget: >= 5 sizes
            assert sum(c in r.budgets for r in first) >= 5, (p, c)
        for r in first:
            GPTConfig(**r.model)
    one = {p: [r for r in runs if r.replicate == 0] for p, runs in plans.items()}

    def cfg(r):  # what a step may change, per run
        t = r.train
        return dict(lr=t.lr, batch=t.batch_size, beta2=t.beta2, schedule=t.schedule,
                    warmup=t.warmup_tokens)

    # step 0: Kaplan's count and a long fixed warmup, one constant-LR run per shape read at every budget it passes
    for r in one["ladder0"]:
        assert cfg(r) == dict(lr=prof.kaplan_lr, batch=prof.batch_size, beta2=0.95, schedule="constant",
                              warmup=prof.kaplan_warmup_tokens)
        for c, d in zip(r.budgets, sorted(set(r.train.eval_at_tokens) - {math.ceil(c / (6 * r.n_standard))
                                                                             for c in r.standard_budgets})):
            assert 0 <= 6 * r.n_non_embedding * d - c < 6 * r.n_non_embedding
        # step 1 re-reads these runs with the standard count at ladder2's budgets: they are evaluated there
        assert r.standard_budgets and set(r.standard_budgets) <= set(prof.budgets["ladder2"])
        assert {math.ceil(c / (6 * r.n_standard)) for c in r.standard_budgets} <= set(r.train.eval_at_tokens)
    assert max(len(r.standard_budgets) for r in one["ladder0"]) == len(prof.budgets["ladder2"])
    # step 2: the standard count and a short warmup (N tokens); nothing else
    by_shape0 = {(r.width, r.depth): r for r in one["ladder0"]}
    for r in one["ladder2"]:
        assert cfg(r) == {**cfg(by_shape0[r.width, r.depth]), "warmup": r.n_standard}
        assert r.train.warmup_tokens < prof.kaplan_warmup_tokens or r.n_standard >= prof.kaplan_warmup_tokens
        for c, d in zip(r.budgets, r.train.eval_at_tokens):
            assert 0 <= 6 * r.n_standard * d - c < 6 * r.n_standard
    # step 3: a cosine to each budget, one run per (budget, shape); same lr, batch and beta2
    for r in one["ladder3"]:
        assert r.budgets == (r.budget,) and r.train.schedule == "cosine"
        assert (r.train.lr, r.train.batch_size, r.train.beta2) == (prof.kaplan_lr, prof.batch_size, 0.95)
        assert r.train.warmup_tokens == min(r.n_standard, r.train.total_tokens // 4)
    # step 4: per-size lr, batch and beta2 (the hoffmann rule), the same (budget, shape) runs and schedule
    three = {(r.budget, r.width, r.depth): r for r in one["ladder3"]}
    four = {(r.budget, r.width, r.depth): r for r in one["ladder4"]}
    assert set(three) == set(four)
    lrs = {r.n_standard: r.train.lr for r in one["ladder4"]}
    assert list(dict(sorted(lrs.items())).values()) == sorted(lrs.values(), reverse=True)  # lr falls with N
    for k, r in four.items():
        assert r.train.beta2 == 0.99 and r.train.schedule == "cosine"
        assert r.train.warmup_tokens == min(r.n_standard, r.train.total_tokens // 4)
        assert r.train.lr == min(prof.hoffmann_lr * (r.n_standard / prof.n_ref) ** prof.lr_power, prof.max_lr)
    assert any(r.train.batch_size != prof.batch_size for r in four.values())
    # the budget bookkeeping counts each step's N: Kaplan's for step 0, the standard one after
    assert sweep.NON_EMBEDDING_PRESETS == ("kaplan", "ladder0")
    assert sweeps.PORIAN_STEPS["ladder0"] == ("kaplan_reproduction", "plus_head")


@pytest.mark.parametrize("preset", sweep.LADDER)
def test_ladder_smoke_sweeps_train_and_count_their_own_n(preset, cache, tmp_path):
    # Two seeds where a run is one per shape (ladder0, ladder2); one where it is one per (budget, shape), whose
    # seeds run the same code path at several times the cost (test_sweep's seed tests cover replicates).
    seeds = 2 if sweep.PRESET_CONFIG[preset][2] == "constant" else 1
    db = tmp_path / f"{preset}.db"
    assert main(["sweep", "--preset", preset, "--profile", "smoke", "--db", str(db), "--seeds", str(seeds)]) == 0
    points = sweeps.isoflop_points(db)
    prof = sweep.get_profile("smoke")
    assert set(points["flops"]) == set(prof.budgets[preset]) and set(points["replicate"]) == set(range(seeds))
    count = "n_non_embedding" if preset == "ladder0" else "n_standard"
    assert (points["n"] == points[count]).all()
    curves = sweeps.loss_curves(db)
    tagged = curves[curves["budget"].notna()]
    per_step = prof.batch_size * prof.seq_len  # each tagged point within half a step of 6·N·D = C
    assert (abs(tagged["flops"] - tagged["budget"]) <= 6 * tagged["n"] * per_step / 2 + 6 * tagged["n"]).all()
    if preset == "ladder0":  # step 1's points: standard-count budgets, evaluated, untagged
        untagged = curves[curves["budget"].isna()]
        assert len(untagged) > 0


def test_gpu_profiles_are_wired_for_cuda():
    for name in ("gpu-quick", "gpu"):
        prof = sweep.get_profile(name)
        assert prof.device == "cuda"
        for preset in sweep.PRESETS:
            runs = sweep.plan(preset, prof, vocab_size=50257 if prof.tokenizer == "gpt2" else 8192)
            if preset in ("optimal", "schedules", "lrbatch"):  # families: one run per shape (and schedule or
                # grid point), each its own budget
                per_shape = {"schedules": len(sweep.SCHEDULE_FAMILY),
                             "lrbatch": len(prof.lrbatch_lr_multiples) * len(prof.lrbatch_batches)}.get(preset, 1)
                assert len(runs) == per_shape * len(prof.shapes_for(preset)) and all(len(r.budgets) == 1 for r in runs)
            else:
                per_budget = [sum(c in r.budgets for r in runs) for c in prof.budgets[preset]]
                assert len(per_budget) >= 4 and sorted(per_budget)[1] >= 5  # >= 4 budgets, nearly all >= 5 sizes
            for r in runs:
                GPTConfig(**r.model)  # a valid model (heads divide the width)
            assert all(r.train.device == "cuda" for r in runs)
    if not __import__("torch").cuda.is_available():  # no GPU here: the job must refuse, not fall back silently
        spec = sweep.plan("hoffmann", "gpu-quick", 50257)[0]
        with pytest.raises(UserError, match="no GPU"):
            sweep.run_job(sweep.spec_to_dict(spec), "/nonexistent")


def _finished(db):
    con = sqlite3.connect(db)
    try:
        return {r[0]: r[1:] for r in con.execute(
            "SELECT run_id, final_loss, finished_at, tokens FROM runs WHERE status = 'finished'")}
    finally:
        con.close()


def test_sigkill_mid_sweep_then_resume_loses_and_duplicates_nothing(cache, tmp_path, capsys):
    db = tmp_path / "h.db"
    env = dict(os.environ, SCALINGLAB_CACHE=str(cache))
    cmd = [sys.executable, "-m", "scalinglab", "sweep", "--preset", "hoffmann", "--profile", "smoke", "--db", str(db),
           "--max-runs", "6"]  # the first 6 of 15 runs: enough to kill mid-way, cheap enough for CI
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            if len(_finished(db)) >= 3:
                break
        except sqlite3.OperationalError:  # the file exists a moment before its tables do
            pass
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    before = _finished(db)
    planned = len(sweep.plan("hoffmann", "smoke", 512))
    assert 3 <= len(before) < 6, "the kill must land mid-sweep"

    counts = sweep.run_sweep("hoffmann", "smoke", db, progress=False, max_runs=6 - len(before))
    after = _finished(db)
    assert counts == dict(planned=planned, finished=6)
    assert {k: after[k] for k in before} == before        # finished runs were not run again
    with sqlite3.connect(db) as con:
        assert con.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == planned
        per_run = dict(con.execute("SELECT run_id, COUNT(*) FROM curves GROUP BY run_id").fetchall())
        specs = {r: json.loads(sp) for r, sp in con.execute("SELECT run_id, spec FROM runs WHERE status = 'finished'")}
        meta = con.execute("SELECT device, versions, git_commit, spec FROM runs LIMIT 1").fetchone()
    # each finished run holds its planned evaluations exactly once: none lost to the kill, none written twice
    assert len(per_run) == 6
    for run, spec in specs.items():
        tps = spec["train"]["batch_size"] * spec["model"]["seq_len"]
        total = step_at(spec["train"]["total_tokens"], tps)
        assert per_run[run] == len({min(total, step_at(t, tps)) for t in spec["train"]["eval_at_tokens"]} | {total})
    assert meta[0].startswith("cpu") and "torch" in json.loads(meta[1]) and meta[2]
    assert json.loads(meta[3])["train"]["schedule"] == "cosine"

    points = sweeps.isoflop_points(db)
    assert list(points.columns[:10]) == ["preset", "run_id", "width", "depth", "n", "n_non_embedding",
                                         "n_standard", "n_total", "flops", "tokens"][:10]
    assert (points["n"] == points["n_standard"]).all() and len(points) == 6
    # whole steps: every cosine run has at least MIN_STEPS steps, so D meets C/(6N) to within 1/(2*MIN_STEPS)
    assert np.allclose(6 * points["n"] * points["tokens"] / points["flops"], 1, atol=0.5 / sweep.MIN_STEPS)

    assert main(["sweep-report", "--db", str(db), "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert (rep["planned"], rep["finished"], rep["preset"]) == (planned, 6, "hoffmann")
    assert "exponent" in rep and ("reason" in rep["exponent"]) == (rep["exponent"]["a"] is None)

    # the database belongs to this sweep: another preset is refused with a one-line error (exit 2)
    assert main(["sweep", "--preset", "kaplan", "--profile", "smoke", "--db", str(db)]) == 2
    assert "holds the hoffmann/smoke sweep" in capsys.readouterr().err


def test_kaplan_runs_log_every_budget_they_pass(cache, tmp_path):
    db = tmp_path / "k.db"
    sweep.run_sweep("kaplan", "smoke", db, progress=False, max_runs=2)
    points = sweeps.isoflop_points(db)
    prof = sweep.get_profile("smoke")
    assert points["run_id"].nunique() == 2
    specs = {r.run_id: r for r in sweep.plan("kaplan", prof, 512)}
    for run_id, g in points.groupby("run_id"):  # one row per budget the run passes
        assert sorted(g["flops"]) == sorted(specs[run_id].budgets)
    assert points.groupby("run_id").size().max() >= 2
    # each finished run leaves its weights for others (e.g. inverse scaling) to load, named by run
    from scalinglab.training.model import load_checkpoint

    run_id = points["run_id"].iloc[0]
    model, meta = load_checkpoint(sweep.checkpoint_path(db, run_id))
    assert meta["run_id"] == run_id and meta["tokenizer"] == prof.tokenizer
    assert model.param_counts()["non_embedding"] == points["n_non_embedding"].iloc[0]
    assert (points["n"] == points["n_non_embedding"]).all()
    first = points[points["run_id"] == points["run_id"].iloc[0]].sort_values("flops")
    assert first["tokens"].is_monotonic_increasing


def test_seeds_replicate_the_grid_and_keep_the_first_seeds_run_ids():
    prof = sweep.get_profile("cpu")
    one = sweep.plan("hoffmann", prof, vocab_size=1024)
    three = sweep.plan("hoffmann", prof, vocab_size=1024, seeds=3)
    assert len(three) == 3 * len(one) and len({r.run_id for r in three}) == len(three)
    # a one-seed sweep is the first replicate of the three-seed one: extending a database retrains nothing
    assert [r for r in three if r.replicate == 0] == one
    by_cell = {}
    for r in three:
        by_cell.setdefault((r.budget, r.width, r.depth), []).append(r)
    for cell in by_cell.values():  # replicates differ in their seed, and only there
        assert sorted(r.train.seed for r in cell) == [prof.seed, prof.seed + 1, prof.seed + 2]
        assert all({**r.train.to_dict(), "seed": 0} == {**cell[0].train.to_dict(), "seed": 0} and r.model == cell[0].model for r in cell)
    for bad in (0, -1, 1.5, True):
        with pytest.raises(UserError, match="seeds must be a whole number"):
            sweep.plan("kaplan", prof, vocab_size=1024, seeds=bad)


def test_more_seeds_on_a_finished_database_train_only_the_new_replicates(cache, tmp_path):
    db = tmp_path / "k.db"
    sweep.run_sweep("kaplan", "smoke", db, progress=False)
    before = _finished(db)
    # pending order runs a whole replicate before the next, so a stopped sweep has complete seeds
    sweep.run_sweep("kaplan", "smoke", db, progress=False, seeds=3, max_runs=len(before) + 1)
    after = _finished(db)
    assert {k: after[k] for k in before} == before  # nothing retrained
    new = sorted(set(after) - set(before))
    assert len(new) == len(before) + 1 and sum(r.endswith("-s1") for r in new) == len(before)
    con = sweep.connect(db)
    assert sweep.sweep_meta(con)["seeds"] == 3 and sweep.summary_counts(con)["planned"] == 3 * len(before)
    con.close()
    points = sweeps.isoflop_points(db)
    assert set(points["replicate"]) == {0, 1, 2}
    s1 = next(r for r in new if r.endswith("-s1"))
    pair = points[points["run_id"].isin([s1.removesuffix("-s1"), s1])]
    # another seed is another initialisation and batch order: the same shape's losses differ
    assert pair.groupby("flops")["loss"].nunique().min() == 2


def test_submitit_launcher_records_results_from_its_jobs(cache, tmp_path):
    pytest.importorskip("submitit")
    db = tmp_path / "s.db"
    seen = []
    counts = sweep.run_sweep("hoffmann", "smoke", db, launcher="submitit", executor="local", max_runs=2,
                             progress=False, on_finish=lambda spec, res: seen.append(spec.run_id))
    assert counts["finished"] == 2 and len(seen) == 2
    logs = list((tmp_path / "s.db.submitit").glob("*_result.pkl"))
    assert len(logs) == 2  # each run was its own submitit job, in its own process
    assert set(_finished(db)) == set(seen)


def test_concurrent_workers_record_the_same_runs_as_one_at_a_time(cache, tmp_path):
    """The GPU profiles run several tiny models at once (--workers): same results, each recorded once."""
    serial, pooled = tmp_path / "serial.db", tmp_path / "pooled.db"
    sweep.run_sweep("hoffmann", "smoke", serial, max_runs=3, progress=False)
    counts = sweep.run_sweep("hoffmann", "smoke", pooled, max_runs=3, workers=2, progress=False)
    assert counts["finished"] == 3
    a, b = _finished(serial), _finished(pooled)
    assert set(a) == set(b)
    # Training on CPU is deterministic for a seed, whichever process runs it.
    assert {k: v[0] for k, v in a.items()} == {k: v[0] for k, v in b.items()}


def test_submitit_records_the_other_runs_when_one_job_fails(cache, tmp_path):
    """A failed job is reported by run id once the rest are recorded; it stays pending for a rerun."""
    pytest.importorskip("submitit")
    db = tmp_path / "s.db"
    sweep.run_sweep("hoffmann", "smoke", db, max_runs=0, progress=False)  # plan only
    con = sqlite3.connect(db)
    first, second = [r for (r,) in con.execute("SELECT run_id FROM runs ORDER BY budget, n_standard LIMIT 2")]
    spec = json.loads(con.execute("SELECT spec FROM runs WHERE run_id = ?", (first,)).fetchone()[0])
    # the job dies building its GPTConfig, in its own process (a train field the TrainConfig lacks would be
    # refused by the launcher already, which replans a spec it cannot read)
    spec["model"]["no_such_option"] = 1
    with con:
        con.execute("UPDATE runs SET spec = ? WHERE run_id = ?", (json.dumps(spec), first))
    con.close()
    with pytest.raises(UserError, match=f"1 of 2 runs failed.*{re.escape(first)}.*TypeError"):
        sweep.run_sweep("hoffmann", "smoke", db, launcher="submitit", executor="local", max_runs=2, progress=False)
    status = dict(sqlite3.connect(db).execute("SELECT run_id, status FROM runs WHERE run_id IN (?, ?)",
                                              (first, second)).fetchall())
    assert status == {first: "planned", second: "finished"}


ALPHA, BETA = 0.34, 0.28  # the synthetic sweeps' law: L = 1.7 + 400/N^α + 400/D^β


def synthetic_sweep(db, seeds: int = 1, sd: float = 0.0, rng=None) -> None:
    """A Hoffmann-style sweep database of a Chinchilla law, 5 budgets × 9 sizes, each run ``seeds`` times
    with Gaussian noise ``sd`` on its loss; run ids and specs as ``sweep.plan`` makes them."""
    con = sweep.connect(db)
    with con:
        con.execute("INSERT INTO sweep VALUES ('preset', '\"hoffmann\"'), ('profile', '\"synthetic\"')")
        for c in np.geomspace(1e15, 1e19, 5):
            n_opt = 0.1 * c ** (BETA / (ALPHA + BETA))
            for i, n in enumerate(n_opt * np.geomspace(1 / 8, 8, 9)):
                d = c / (6 * n)
                for rep in range(seeds):
                    loss = 1.7 + 400 / n**ALPHA + 400 / d**BETA + (sd * rng.standard_normal() if sd else 0.0)
                    rid = f"C{c:.0e}-{i}" + (f"-s{rep}" if rep else "")
                    spec = json.dumps(dict(model=dict(width=64, depth=2, vocab_size=1000, seq_len=128),
                                           replicate=rep))
                    con.execute("INSERT INTO runs (run_id, preset, profile, width, depth, budget, n_non_embedding, "
                                "n_standard, n_total, spec, status, tokens, seconds, device, finished_at) "
                                "VALUES (?,?,?,?,?,?,?,?,?,?, 'finished', ?, 10, 'cuda:NVIDIA H100 80GB HBM3', ?)",
                                (rid, "hoffmann", "synthetic", 1, 1, c, int(n * 0.8), int(n), int(n), spec, 10**6,
                                 f"2026-01-01T00:{i:02d}:{rep:02d}+00:00"))
                    con.execute("INSERT INTO curves (run_id, step, tokens, budget, flops, loss) VALUES (?,?,?,?,?,?)",
                                (rid, 1, int(d), c, c, loss))
    con.close()


def test_report_recovers_a_known_exponent(tmp_path):
    """A synthetic Chinchilla-law sweep: the optimum is N* ∝ C^(beta/(alpha+beta)) exactly."""
    a_true = BETA / (ALPHA + BETA)
    db = tmp_path / "syn.db"
    synthetic_sweep(db)
    rep = sweeps.report(db)
    e = rep.exponent
    assert rep.finished == 45 and e["n_budgets"] == 5
    # spline optima on a 9-point grid spaced 1.68x resolve log N* to a small fraction of a step: 0.03 in a
    assert abs(e["a"] - a_true) < 0.03
    assert e["ci"][0] <= e["a"] <= e["ci"][1]
    assert abs(a_true - 0.5) > 0.03  # the check could fail if the analysis simply returned Chinchilla's 0.5
    # Approach 1 on the same runs: with exact losses the envelope's optima lie on the law's frontier.
    env = rep.exponent_envelope
    assert abs(env["a"] - a_true) < 0.03 and env["n_sizes"] >= 2
    # utilisation on a GPU: FLOPs over the runs' wall-clock span (first start to last finish) and the H100 peak
    from scalinglab.accounting.decoder import flops_per_token

    flops = 45 * 10**6 * flops_per_token(64, 2, 1000, seq_len=128).with_attention
    assert rep.train_flops == pytest.approx(flops)
    assert rep.wall_seconds == 8 * 60 + 10  # runs finished at minutes 0..8, the first took 10 s
    assert rep.utilisation == pytest.approx(flops / (490 * 989e12), rel=1e-3)


def test_report_averages_seeds_and_measures_their_noise(tmp_path):
    """Three noisy seeds per run: the report averages them (isoFLOP points and Approach 1's curves) and
    its bootstrap's noise is their measured spread, not the parabolas' residual."""
    a_true = BETA / (ALPHA + BETA)
    db = tmp_path / "seeds.db"
    synthetic_sweep(db, seeds=3, sd=0.004, rng=np.random.default_rng(0))
    noise = sweeps.replicate_noise(db)
    assert noise["seeds"] == 3 and noise["points_with_replicates"] == 45 and noise["dof"] == 90
    assert noise["seed_sd"] == pytest.approx(0.004, rel=0.3)  # 90 dof: relative sd ≈ 7.5%, 0.3 is 4 of those
    assert noise["noise_floor"] == pytest.approx(0.004, rel=0.3)  # the same noise everywhere: the floor is it
    assert [e["replicate"] for e in noise["exponent_by_seed"]] == [0, 1, 2]
    assert all(abs(e["a"] - a_true) < 0.05 for e in noise["exponent_by_seed"])
    # The curves are not parabolas over a 64x range of N: their residual is far above the seeds' spread.
    assert noise["parabola_sd"] > 3 * noise["seed_sd"]
    curves = sweeps.loss_curves(db, mean_over_seeds=True)
    assert len(curves) == 45 and (curves["seeds"] == 3).all() and not curves["run_id"].str.contains("-s").any()
    rep = sweeps.report(db)
    # noise 0.004 (0.0023 for a mean of 3) beside 0.02-0.03 between the sizes next to each minimum:
    # every budget keeps an interior optimum and a lands within 0.03 of the truth, as without noise
    assert abs(rep.exponent["a"] - a_true) < 0.03 and rep.exponent["n_budgets"] == 5
    assert rep.finished == 135
    # resampling seeds: its own point estimate (plain spline optima of the means) and a percentile interval
    boot = rep.exponent_seed_bootstrap
    assert boot["seeds"] == 3 and boot["runs"] == 45 and boot["n_boot_failed"] == 0
    assert abs(boot["a"] - a_true) < 0.03 and boot["ci"][0] <= boot["a"] <= boot["ci"][1]
    # GLS with the seeds' covariance plus the budgets' scatter: on a noiseless law the optima sit on the
    # line up to the spline's grid (0.03 in a, as above), so τ is small next to the 1.68x size spacing
    scatter = boot["scatter"]
    assert scatter["n_budgets"] == 5 and scatter["df"] == 3 and len(scatter["budget_seed_sd"]) == 5
    assert abs(scatter["a"] - a_true) < 0.03 and 0 <= scatter["tau"] < 0.1 * np.log(1.68)
    # here wider than the seed-noise-only interval (t on 3 df and τ² > 0); not guaranteed in general
    assert scatter["ci"][1] - scatter["ci"][0] >= boot["ci"][1] - boot["ci"][0]
    # seed 0 alone, as a one-seed sweep: exactly replicate 0's points, and no replicate analysis
    one = sweeps.select_replicates(db, [0], tmp_path / "one.db")
    points = sweeps.isoflop_points(db)
    pd.testing.assert_frame_equal(sweeps.isoflop_points(one), points[points["replicate"] == 0].reset_index(drop=True))
    assert sweeps.report(one).finished == 45 and sweeps.replicate_noise(one)["seed_sd"] is None
    assert sweeps.seed_bootstrap(one)["a"] is None
    # ... which is what exponent_by_seed(noise="fallback") analyses for seed 0
    assert sweeps.exponent_by_seed(db, noise="fallback")[0]["a"] == sweeps.exponent(one)["a"]
    with pytest.raises(UserError, match="noise must be measured or fallback"):
        sweeps.exponent_by_seed(db, noise="pooled")
    with pytest.raises(UserError, match="no such sweep database"):
        sweeps.select_replicates(tmp_path / "none.db", [0], tmp_path / "x.db")
    # the same data as two "sweeps": a difference of 0 by every estimator, seeds included
    diffs = sweeps.exponent_differences(db, db)
    assert diffs["seeds"]["assumption_holds"] and diffs["seeds"]["difference"] == 0
    assert diffs["seeds"]["ci"][0] < 0 < diffs["seeds"]["ci"][1]
    assert diffs["seeds_scatter"]["difference"] == 0 and diffs["seeds_scatter"]["ci"][0] < 0


def test_report_needs_budgets_and_a_real_database(tmp_path, capsys):
    db = tmp_path / "empty.db"
    sweep.connect(db).close()
    # the schema but no sweep planned in it: one line, not "None/None: 0/0 runs finished"
    assert main(["sweep-report", "--db", str(db)]) == 2
    assert "no sweep in this database" in capsys.readouterr().err
    assert main(["sweep-report", "--db", str(tmp_path / "nope.db")]) == 2
    assert "no such sweep database" in capsys.readouterr().err
    bad = tmp_path / "bad.db"
    bad.write_text("not sqlite")
    assert main(["sweep-report", "--db", str(bad)]) == 2


def test_workbook_full_profile_points_at_committed_results(tmp_path):
    out = notebook_sweeps.workbook_sweeps("full", tmp_path)
    assert set(out) == set(notebook_sweeps.WORKBOOK_PRESETS)
    for path in out.values():
        assert path is None or (path.is_file() and path.parent.name == "sweeps")
    with pytest.raises(Exception, match="smoke or full"):
        notebook_sweeps.workbook_sweeps("cpu", tmp_path)


@pytest.mark.parametrize("preset", sweep.PRESETS)
def test_cost_counts_the_steps_tokens_and_evaluations_train_makes(preset):
    from dataclasses import replace

    from scalinglab.accounting.decoder import flops_per_token
    from scalinglab.training.loop import train

    # one tiny shape; the Kaplan run's length (15,651 tokens) is 61.1 steps, which train rounds to 61
    prof = replace(sweep.get_profile("smoke"), shapes=((16, 1),), shapes_by_preset={}, kaplan_warmup_tokens=2048,
                   budgets=dict(kaplan=(1.5e8, 3.11e8), hoffmann=(1.2e9,), ladder0=(1.5e8, 3.11e8),
                                ladder2=(6e8, 1.2e9), ladder3=(1.2e9,), ladder4=(1.2e9,)), schedules_seeds=(),
                   lrbatch_lr_multiples=(1.0,), lrbatch_batches=(8,))  # lrbatch: a one-point grid
    runs = sweep.plan(preset, prof, vocab_size=512)
    run = runs[0]  # one run, or (preset schedules) four alike but for the schedule
    assert len(runs) == (len(sweep.SCHEDULE_FAMILY) if preset == "schedules" else 1)
    tokens = np.random.default_rng(0).integers(0, 512, 50_000).astype(np.uint16)
    res = train(GPTConfig(**run.model), run.train, tokens, tokens[:4_000])
    c = sweep.cost(preset, prof, vocab_size=512)
    fpt = flops_per_token(16, 1, 512, seq_len=prof.seq_len).with_attention
    k = len(runs)
    assert (c["runs"], c["steps"], c["tokens"]) == (k, k * res.steps, k * res.tokens)
    # evaluations are forward passes (a third of fpt) over eval_tokens each; the run's end is evaluated once
    assert c["flops"] == pytest.approx(k * (fpt * res.tokens + fpt / 3 * len(res.curve) * prof.eval_tokens),
                                       rel=1e-12)


def test_lrbatch_plans_every_size_at_every_rate_and_batch_to_the_same_tokens_per_parameter():
    prof = sweep.get_profile("cpu-lrbatch")
    runs = sweep.plan("lrbatch", prof, vocab_size=512)
    assert len(runs) == 45 and len({r.run_id for r in runs}) == 45
    grid = {(r.width, r.depth, r.train.lr, r.train.batch_size) for r in runs}
    assert len(grid) == 45  # every (shape, lr, batch) once
    for (w, d) in prof.shapes:
        mine = [r for r in runs if (r.width, r.depth) == (w, d)]
        rule = prof.optimal_lr_at_64 * (64 / w) ** prof.lrbatch_width_power
        # 5 distinct peak rates, a factor of 2 apart, straddling the profile's rule, at each of 3 batches
        rates = sorted({r.train.lr for r in mine})
        assert len(rates) == 5 and rates[0] < rule < rates[-1]
        assert np.allclose(np.diff(np.log2(rates)), 1.0, atol=1e-3)
        assert sorted({r.train.batch_size for r in mine}) == [8, 16, 32]
        for r in mine:
            t = r.train
            per_step = t.batch_size * prof.seq_len
            # whole steps to ~20 tokens per standard-count parameter (within one step), a cosine, short warmup
            assert t.total_tokens % per_step == 0
            assert abs(t.total_tokens - prof.optimal_tokens_per_param * r.n_standard) <= per_step
            assert t.schedule == "cosine" and t.warmup_tokens == min(r.n_standard, t.total_tokens // 4)
            assert t.total_tokens // per_step >= sweep.MIN_STEPS and t.eval_at_tokens[-1] == t.total_tokens
            assert r.budget == pytest.approx(6 * r.n_standard * t.total_tokens)
            assert sweep.spec_from_dict(sweep.spec_to_dict(r)) == r  # stored and read back whole
    # lr and batch are what a stored spec records
    stored = sweep.spec_to_dict(runs[0])["train"]
    assert stored["lr"] == runs[0].train.lr and stored["batch_size"] == runs[0].train.batch_size


def test_negative_max_runs_is_a_user_error(tmp_path):
    with pytest.raises(UserError, match="max_runs must be at least 0, got -1"):
        sweep.run_sweep("kaplan", "smoke", tmp_path / "k.db", max_runs=-1, progress=False)
    assert not (tmp_path / "k.db").exists()


def test_planning_and_reports_do_not_import_torch(tmp_path):
    from scalinglab.training.sweep import store

    db = tmp_path / "planned.db"   # a sweep planned, nothing trained
    con = store.connect(db)
    prof = sweep.get_profile("smoke")
    store.register_plan(con, "hoffmann", prof, sweep.plan("hoffmann", prof, 512), 512)
    con.close()
    code = ("import sys; from scalinglab import sweeps; from scalinglab.training import sweep; "
            "sweep.plan('hoffmann', 'cpu', 1024); "
            "sweep.cost('kaplan', 'cpu', 1024); sweeps.report(sys.argv[1]); print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code, str(db)], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_cli_choices_mirror_the_library():
    from scalinglab.cli import sweep as cli_sweep

    assert cli_sweep.PRESETS == sweep.PRESETS and cli_sweep.PROFILES == tuple(sweep.PROFILES)


def test_a_db_that_is_not_sqlite_is_a_user_error(tmp_path, capsys):
    bad = tmp_path / "notes.db"
    bad.write_text("not sqlite\n")
    with pytest.raises(UserError, match="notes.db: not a sweep database"):
        sweep.connect(bad)
    with pytest.raises(UserError, match="not a sweep database"):
        sweep.connect(tmp_path)  # a folder
    assert main(["sweep", "--preset", "kaplan", "--db", str(bad)]) == 2  # before any data is needed
    assert "not a sweep database" in capsys.readouterr().err
    assert bad.read_text() == "not sqlite\n"


def test_report_text_warns_when_budgets_share_runs(capsys):
    # The committed CPU sweeps: the kaplan preset reads each run at every budget it passes, the hoffmann
    # preset trains one run per (budget, size). Only the first gets the note; Approach 1's dropped
    # resamples are counted where there are any (the kaplan envelope loses about a third).
    from pathlib import Path

    folder = Path(__file__).resolve().parents[1] / "data" / "sweeps"
    assert main(["sweep-report", "--db", str(folder / "kaplan.db")]) == 0
    kaplan = capsys.readouterr().out
    runs = sweeps.budget_sharing(folder / "kaplan.db")["runs"]
    assert f"{runs} of {runs} runs give a point at more than one budget" in kaplan
    assert "resamples left fewer than 2 sizes and were dropped" in kaplan
    assert main(["sweep-report", "--db", str(folder / "hoffmann.db")]) == 0
    hoffmann = capsys.readouterr().out
    assert "more than one budget" not in hoffmann
    # committed with seeds: both reports give the measured noise and the seed bootstrap, not the fallback
    for text, db in ((kaplan, "kaplan.db"), (hoffmann, "hoffmann.db")):
        seeds = sweeps.replicate_noise(folder / db)["seeds"]
        assert seeds > 1 and f"seeds: up to {seeds} per point" in text
        assert f"resampling each run's {seeds} seeds" in text and "each seed's runs alone" in text
        assert "with the budgets' scatter about the line added" in text
        assert "one seed per point" not in text


def test_a_db_in_a_folder_that_cannot_be_written_says_so(tmp_path, capsys):
    # sqlite says only "unable to open database file"; that is not "not a sweep database".
    with pytest.raises(UserError, match=r"cannot open the sweep database: folder .*missing does not exist"):
        sweep.connect(tmp_path / "missing" / "sweep.db")
    unwritable = tmp_path / "ro"
    unwritable.mkdir()
    unwritable.chmod(0o555)
    try:
        probe = unwritable / "probe"
        probe.touch()  # root writes anyway: fall back to /sys, which refuses new files even to root
        probe.unlink()
        unwritable = Path("/sys")
        if not unwritable.is_dir() or os.access(unwritable / "sweep.db", os.F_OK):
            pytest.skip("no folder here refuses new files")
    except PermissionError:
        pass
    try:
        assert main(["sweep", "--preset", "kaplan", "--db", str(unwritable / "sweep.db")]) == 2
        err = capsys.readouterr().err
        assert "is not writable" in err and "not a sweep database" not in err and err.count("\n") == 1, err
    finally:
        (tmp_path / "ro").chmod(0o755)
