"""papers.porian_ladder: Porian et al.'s ladder read off our own sweep databases."""

import json
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scalinglab.cli import main
from scalinglab.papers import porian_ladder as L
from scalinglab.training import sweep

# Porian et al.'s published a per (dataset, step), small and fixed so the test needs no mirror.
PORIAN = pd.DataFrame([dict(dataset=ds, step=s, a=a0 - 0.1 * i)
                       for ds, a0 in (("rw", 0.8), ("owt2", 0.85)) for i, (_, _, s, _) in enumerate(L.STEPS)])


def law(n, d):
    """Losses the synthetic runs log (a Chinchilla form in nats, well below ln 512)."""
    return 1.5 + 20 / n**0.34 + 15 / d**0.28


def write_synthetic(db, preset: str, seeds: int = 2):
    """A smoke-profile sweep database whose runs 'trained' to law(N_standard, tokens) at every evaluation:
    the plan, claims and records are the real ones, the training is skipped (no tokenizer, no torch)."""
    from scalinglab.accounting.decoder import step_at
    from scalinglab.training.sweep import store

    prof = sweep.get_profile("smoke")
    con = store.connect(db)
    runs = sweep.plan(preset, prof, 512, seeds=seeds)
    store.register_plan(con, preset, prof, runs, 512)
    for spec in runs:
        per_step = spec.train.batch_size * spec.model["seq_len"]
        steps = sorted({step_at(t, per_step) for t in spec.train.eval_at_tokens})
        curve = [dict(step=k, tokens=k * per_step, loss=law(spec.n_standard, k * per_step) * (1 + 0.001 * spec.replicate))
                 for k in steps]
        store.record_result(con, spec, dict(curve=curve, final_loss=curve[-1]["loss"], tokens=curve[-1]["tokens"],
                                            steps=steps[-1], seconds=1.0, tokens_per_s=1.0, device="test",
                                            versions={}, git_commit="test", checkpoint="", tokens_per_step=per_step))
    con.close()


@pytest.fixture
def ladder_dbs(tmp_path):
    """Steps 0 and 2 (their databases); steps 3 and 4 are missing."""
    for preset in ("ladder0", "ladder2"):
        write_synthetic(tmp_path / f"{preset}.db", preset)
    return tmp_path


def test_ladder_report_reads_each_step_and_its_shift(ladder_dbs, monkeypatch):
    monkeypatch.setattr(L, "MIN_SIZES", 3)  # the smoke grid has 5 shapes, not all at every budget
    rep = L.ladder_report(ladder_dbs, method="parabola", n_boot=50, porian=PORIAN)
    steps = {s.step: s for s in rep.steps}
    assert list(steps) == [0, 1, 2, 3, 4]
    # step 1 re-reads step 0's runs at the standard budgets (ladder2's), with the standard N
    one, _ = L._read(ladder_dbs / "ladder0.db", standard=True)
    assert set(one["flops"]) <= set(sweep.get_profile("smoke").budgets["ladder2"]) and len(one) > 0
    with __import__("sqlite3").connect(ladder_dbs / "ladder0.db") as con:
        n_std = {f"w{w}-d{d}": n for w, d, n in con.execute("SELECT width, depth, n_standard FROM runs")}
    assert all(one["n"] == one["shape"].map(n_std))
    # each step-1 point is the seed mean of the loss logged where 6·N_standard·D meets the budget
    from scalinglab.accounting.decoder import step_at
    per_step = sweep.get_profile("smoke").batch_size * sweep.get_profile("smoke").seq_len
    expect = [law(r.n, step_at(math.ceil(r.flops / (6 * r.n)), per_step) * per_step) * 1.0005 for r in one.itertuples()]
    assert one["loss"].to_numpy() == pytest.approx(expect, rel=1e-9)
    assert (one["seeds"] == 2).all()
    # on the smoke grid few sizes reach the standard budgets, so step 1 may have no fit; when it has one, it
    # is paired with step 0 (the same runs), and the later steps are not
    assert steps[1].fit is None and steps[1].reason == "fewer than 2 usable budgets" or steps[1].paired
    assert steps[0].fit is not None and steps[2].fit is not None and not steps[2].paired
    assert steps[2].delta is None or steps[2].delta_ci is not None
    assert steps[3].fit is None and "no ladder3.db" in steps[3].reason
    d = rep.to_dict()
    assert d["steps"][1]["porian"]["rw"]["delta"] == pytest.approx(-0.1)
    assert json.dumps(d)  # JSON-ready
    assert "Porian et al.'s ladder" in rep.summary()
    # every synthetic run records 1 s of training; the missing databases are left out
    with __import__("sqlite3").connect(ladder_dbs / "ladder2.db") as con:
        runs2 = con.execute("SELECT COUNT(*) FROM runs WHERE status = 'finished'").fetchone()[0]
    used = L.compute_used(ladder_dbs)
    assert list(used) == ["ladder0", "ladder2"] and used["ladder2"]["seconds"] == pytest.approx(runs2)
    assert used["ladder2"]["runs"] == runs2 and used["ladder2"]["largest"] == max(
        r.n_total for r in sweep.plan("ladder2", sweep.get_profile("smoke"), 512, seeds=2))


def test_the_uniform_loss_rule_drops_points_and_thin_budgets():
    pts = pd.DataFrame(dict(shape=[f"s{i}" for i in range(6)] * 2, n=list(range(1, 7)) * 2,
                            flops=[1.0] * 6 + [2.0] * 6, loss=[6.0, 5.0, 4.0, 4.5, 5.5, 6.2] + [4.0] * 6))
    kept, dropped = L.usable_points(pts, vocab=512)         # ceiling 0.95·ln 512 = 5.93
    assert dropped["loss_ceiling"] == pytest.approx(0.95 * math.log(512))
    assert dropped["near_uniform"] == 2                      # 6.0 and 6.2
    assert dropped["budgets_too_few_sizes"] == [1.0]         # budget 1 keeps 4 sizes, fewer than MIN_SIZES = 5
    assert set(kept["flops"]) == {2.0} and len(kept) == 6


def test_cli_ladder_report_needs_a_folder(capsys):
    assert main(["ladder-report", "--dir", "/nonexistent/ladder"]) == 2
    assert "no such folder" in capsys.readouterr().err


def test_the_committed_ladder_reads(mirror):
    """data/sweeps/ladder (a snapshot of the CPU ladder, PROVENANCE.md): every step with a database gives an
    exponent or a stated reason, and the dropped points are counted under the stated rule."""
    folder = Path(__file__).resolve().parents[1] / "data" / "sweeps" / "ladder"
    if not any(folder.glob("ladder*.db")):
        pytest.skip("no ladder databases committed")
    rep = L.ladder_report(folder, n_boot=50)
    for s in rep.steps:
        if (folder / f"{s.preset}.db").is_file():
            assert (s.fit is not None and np.isfinite(s.fit.a)) or s.reason
            assert s.dropped["loss_ceiling"] == pytest.approx(0.95 * math.log(512))
    assert json.dumps(rep.to_dict())


def _fit(a: float, draws) -> "L.BlockBootstrap":
    draws = np.asarray(draws, float)
    return L.BlockBootstrap(a=a, ci=(float(draws.min()), float(draws.max())), level=0.95, method="spline",
                            n_boot=len(draws), n_dropped=0, budgets_lost=0.0, n_shapes=9, n_budgets=7, draws=draws)


def test_total_shift_table_and_aligned_summary():
    """A report built by hand: a0 = 0.6 with draws 0.5..0.7, a4 = 0.4 with every draw 0.4, so a0 − a4 = 0.2
    and its 95% interval is the 2.5th and 97.5th percentiles of 0.1..0.3 (101 evenly spaced): 0.105, 0.295."""
    fits = {0: _fit(0.6, np.linspace(0.5, 0.7, 101)), 4: _fit(0.4, np.full(101, 0.4))}
    steps = tuple(L.LadderStep(k, preset, p, change, fits.get(k), {}, 10, 3 if k else 2,
                               reason=None if k in fits else "no ladder.db", seeds_max=3)
                  for k, preset, p, change in L.STEPS)
    rep = L.LadderReport(steps, PORIAN)
    tot = rep.total()
    assert tot["a_first_minus_last"] == pytest.approx(0.2)
    assert tot["ci"] == pytest.approx([0.105, 0.295], abs=1e-9)
    assert tot["porian"]["rw"] == pytest.approx(0.4) and tot["porian"]["owt2"] == pytest.approx(0.4)
    t = rep.table()
    assert t["a"].tolist() == ["0.600", "n/a", "n/a", "n/a", "0.400"]
    assert t["seeds"].tolist() == ["2-3", "3", "3", "3", "3"]
    assert t["Porian RW a (Δa)"].tolist()[:2] == ["0.800", "0.700 (-0.100)"]
    assert "[no ladder.db]" in t["change"][1]
    lines = rep.summary().splitlines()
    end = lines[2].index("seeds") + len("seeds")          # right-aligned: every row's seeds end under the header's
    assert all(line[end - 1] != " " and line[end:end + 2] in ("  ", "") for line in lines[3:8])
    assert max(map(len, lines[:8])) <= 120                # the changes are listed below, not in the table
    assert lines[8].startswith("a0 − a4 = +0.200 [+0.105, +0.295]; Porian et al.: RW +0.400")
    assert lines[-5].startswith("  step 0: Kaplan's setup") and "[no ladder.db]" in lines[-4]
    d = rep.to_dict()
    assert d["total"]["a_first_minus_last"] == pytest.approx(0.2) and d["steps"][0]["seeds_max"] == 3
    assert d["largest_shift"]["step"] is None      # no step has a shift here: its neighbours lack fits
    assert json.dumps(d)


def test_dropped_resamples_bound_what_the_interval_holds():
    """55 of 1000 resamples dropped: the interval holds 95% of the 945 kept, i.e. 89.775% of all 1000, and at
    most 89.775% + 5.5% = 95.275% had every dropped one fallen inside; the table and summary print both."""
    fit = replace(_fit(0.5, np.linspace(0.4, 0.6, 1000)), n_dropped=55)
    assert fit.level_bounds == pytest.approx((0.95 * 0.945, 0.95 * 0.945 + 0.055))
    assert _fit(0.5, [0.4, 0.6]).level_bounds == pytest.approx((0.95, 0.95))   # nothing dropped: nominal
    steps = tuple(L.LadderStep(k, preset, p, change, fit if k == 0 else None, {}, 10, 3, seeds_max=3,
                               reason=None if k == 0 else "no ladder.db") for k, preset, p, change in L.STEPS)
    t = L.LadderReport(steps, PORIAN).table()
    assert t["dropped"][0] == "55/1000" and t["holds"][0] == "89.8%-95.3%"
    assert "holds 89.8% to 95.3% of all of them" in fit.summary()


def test_largest_shift_names_the_step_and_compares_with_porians():
    """Our shifts −0.05, −0.02, +0.03, −0.15 put the largest move at step 4 (interval excludes 0); Porian's
    made-up a (0.80, 0.60, 0.55, 0.52, 0.50) puts theirs at step 1 (−0.20): they disagree."""
    porian = pd.DataFrame([dict(dataset=ds, step=s, a=a) for ds in ("rw", "owt2")
                           for (_, _, s, _), a in zip(L.STEPS, (0.80, 0.60, 0.55, 0.52, 0.50))])
    deltas = {1: (-0.05, (-0.2, 0.1)), 2: (-0.02, (-0.2, 0.2)), 3: (0.03, (-0.1, 0.2)), 4: (-0.15, (-0.3, -0.01))}
    steps = tuple(L.LadderStep(k, preset, p, change, _fit(0.5, [0.4, 0.6]), {}, 10, 3, seeds_max=3,
                               delta=deltas.get(k, (None,))[0], delta_ci=deltas.get(k, (None, None))[1])
                  for k, preset, p, change in L.STEPS)
    top = L.LadderReport(steps, porian).largest_shift()
    assert top["step"] == 4 and top["delta"] == -0.15 and top["excludes_zero"]
    assert top["porian"]["rw"]["step"] == 1 and top["porian"]["rw"]["delta"] == pytest.approx(-0.2)
    assert top["agrees"] is False
