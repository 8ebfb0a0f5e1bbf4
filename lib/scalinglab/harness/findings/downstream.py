"""Notebook 07's findings: task accuracy from a ladder (Bhagia et al. 2024) and loss-to-loss (Brandfonbrener
et al. 2024)."""

from __future__ import annotations

from collections.abc import Mapping
from math import comb
from typing import Any

from scalinglab.harness.findings.format import Finding, _cap, _span, _Summary, dec, pct

DISPLAY = {"mmlu": "MMLU", "hellaswag": "HellaSwag", "piqa": "PIQA", "socialiqa": "SocialIQa",
           "arc_challenge": "ARC-Challenge", "arc_easy": "ARC-Easy", "csqa": "CSQA", "openbookqa": "OpenBookQA"}


def _names(items: list[str]) -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}" if items else "none"


def downstream(summary: Mapping[str, Any]) -> list[Finding]:
    s = _Summary("07_downstream", summary)
    out = []
    m = s.sub("misses")
    rep = s.sub("reproduction")
    gap = m("max_abs_diff_from_theirs")
    within = "0.01" if gap < 0.01 else dec(gap, 2)
    out.append(Finding(
        f"Refitting Bhagia et al.'s two steps (task loss from N and D, then accuracy from task loss) reproduces "
        f"all 16 of their chained 7B and 13B predictions to within {within} points. The mean absolute error is "
        f"{dec(m('mae', 'bpb_chain'), 1)} points; on ARC-Challenge, ARC-Easy, "
        f"CSQA and OpenBookQA it is {dec(m('mae_other_four'), 1)} (their abstract: 6.9)."))
    out.append(_intervals(s, rep))
    out.append(_distance(s, rep, m))
    ll = s.sub("loss_to_loss")
    out.append(_translation(ll))
    out.append(_big(ll))
    out.append(_own_ladder(s.sub("own_ladder")))
    return _cap(out)


def _intervals(s: _Summary, rep: _Summary) -> Finding:
    """Both intervals' coverage, counted per task too, and what the misses can and cannot say."""
    level = rep("level")
    cov = s.sub("chained_coverage")
    cal = rep.sub("coverage_by_task", "calibrated")
    n_tasks = cal("n_tasks")
    rows = rep("table")
    missed = [r for r in rows if not r["inside"]]
    tasks = list(dict.fromkeys(DISPLAY.get(r["task"], r["task"]) for r in missed))
    lead = (f"{pct(level, 0)} intervals with the target's checkpoint noise: parameter-only (ladder runs resampled) "
            f"hold {cov('inside')} of 16 actuals, calibrated on ladder runs left out {cal('points_inside')} "
            f"({dec(cal('tasks_inside'), 1).rstrip('0').rstrip('.')} of {n_tasks} tasks, each two sizes). ")
    if not missed:
        return Finding(lead + "None misses the parameter-only intervals.")
    beyond = [r["actual"] - r["upper"] if r["actual"] > r["upper"] else r["lower"] - r["actual"] for r in missed]
    widths = [r["upper"] - r["lower"] for r in missed]
    # P(this many tasks or more outside) were the tasks independent checks, each outside with 1 − level
    k, q = len(tasks), 1 - level
    chance = sum(comb(n_tasks, j) * q ** j * (1 - q) ** (n_tasks - j) for j in range(k, n_tasks + 1))
    verdict = ("no evidence against its form" if chance >= q else
               "more than chance gives: the intervals are too narrow for the targets")
    return Finding(
        lead + f"{_names(tasks)} {'misses' if k == 1 else 'miss'} the parameter-only ones by "
        f"{_span(beyond, lambda v: dec(v, 1))} points beyond intervals {_span(widths, lambda v: dec(v, 0))} wide: "
        f"{k} task{'s' if k > 1 else ''} of {n_tasks}, which chance gives {pct(chance, 0)} of the time, {verdict}.")


def _distance(s: _Summary, rep: _Summary, m) -> Finding:
    """How the chain's error grows from a ladder run left out to the targets, and the alternatives."""
    rows = rep("table")
    sds = [r["cal_sd"] for r in rows]
    errs = [abs(r["ours"] - r["actual"]) for r in rows]
    return Finding(
        f"{m('n_loss_below_ladder')} of 16 predicted task losses lie below every ladder checkpoint's. A left-out "
        f"ladder run is predicted within {_span(sds, lambda v: dec(v, 1))} points (sd), the far-off targets miss by "
        f"up to {dec(max(errs), 0)}: error grows with extrapolation. Mean errors: step 2 at the actual loss "
        f"{dec(m('step2_alone_mae'), 1)}, answer probability as intermediate {dec(m('mae', 'prob_chain'), 1)}, "
        f"accuracy on N and D directly {dec(m('mae', 'one_step'), 1)}.")


def _translation(ll: _Summary) -> Finding:
    """The loss-to-loss tables, the translation, and why the baseline differs from the printed one."""
    tr = ll("translation")
    match = ll.sub("translation_match")
    b = ll.sub("baseline_check")
    rng = b("above_range")
    stop = (f"{b('above_optimum')} lie {pct(rng[0], 0)}–{pct(rng[1], 0)} above the optimum of their own objective: "
            "where their optimiser stopped sets those R²." if rng else "each at the optimum of its own objective.")
    return Finding(
        f"Brandfonbrener et al.'s loss-to-loss tables reproduce to their printed rounding in "
        f"{ll('n_match')} of {ll('n_rows')} rows, the translated laws' R² in {match('ours')} of {len(tr)}; the "
        f"baseline (five parameters, {b('n_models', 0)}–{b('n_models', 1)} models) in {match('baseline')}. "
        f"Their printed baseline laws score their R² here in {b('scoring_reproduced')} of {b('n')}; " + stop)


def _big(ll: _Summary) -> Finding:
    floors = ll("big_floors")
    return Finding(
        f"At 1e21 FLOP, 20.7 times the sweep's largest budget, the fits predict the held-out losses within "
        f"{_span([abs(e) for e in ll('big_rel_errors')], lambda v: pct(v))}. With E₀ and E₁ fixed, their "
        f"{pct(ll('level'), 0)} intervals (model pairs resampled) hold {ll('big_inside')} of {ll('n_rows')}; "
        f"refitting E₀ and E₁ on each resample, {ll('big_floors_inside')} of {len(floors)}. All nine predict from "
        "one FineWeb-Edu model and share its E₀.")


def _own_ladder(o: _Summary) -> Finding:
    """The chain on our own ladder: the targets' accuracy predicted with its calibrated interval, beside the
    straight-line rival."""
    rows = o("targets")
    line = o.sub("line_baseline")
    names = " and ".join(r["model"].split(" ")[0] for r in rows)
    inside = sum(bool(r["acc_cal_inside"]) for r in rows)
    closer = "closer" if (sum(abs(r["miss"]) for r in line("targets"))
                          < sum(abs(r["acc_miss"]) for r in rows)) else "farther"
    return Finding(
        f"On our own ladder ({o('n_ladder')} GPTs, {o('n_min') / 1e3:.0f}k–{o('n_max') / 1e3:.0f}k parameters; a "
        f"{o('items'):,}-item cloze), the chain predicts {names} at "
        + " and ".join(f"{dec(100 * r['acc_pred'], 1)}% (actual {dec(100 * r['acc_actual'], 1)})" for r in rows)
        + f"; {inside} of {len(rows)} inside the calibrated {pct(o('level'), 0)} intervals ("
        + ", ".join(f"{dec(100 * r['acc_cal_lower'], 1)}–{dec(100 * r['acc_cal_upper'], 1)}" for r in rows)
        + "). A line on log N predicts "
        + " and ".join(dec(100 * r["pred"], 1) for r in line("targets"))
        + f", {closer}; two targets cannot rank them.")
