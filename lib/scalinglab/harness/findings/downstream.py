"""Notebook 07's findings: task accuracy from a ladder (Bhagia et al. 2024) and loss-to-loss (Brandfonbrener
et al. 2024)."""

from __future__ import annotations

from collections.abc import Mapping
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

    cov = s.sub("chained_coverage")
    rows = rep("table")
    missed = [r for r in rows if not r["inside"]]
    tasks = list(dict.fromkeys(DISPLAY.get(r["task"], r["task"]) for r in missed))
    below = all(r["actual"] > r["upper"] for r in missed)
    short = _span([r["actual"] - r["ours"] for r in missed], lambda v: dec(v, 1)) if missed else ""
    low = list(dict.fromkeys(DISPLAY.get(r["task"], r["task"]) for r in missed if r["actual"] > r["upper"]))
    high = list(dict.fromkeys(DISPLAY.get(r["task"], r["task"]) for r in missed if r["actual"] < r["lower"]))
    if not missed:
        verdict = "None misses."
    elif below:
        verdict = (f"The misses are {_names(tasks)}, every one predicted too low (by {short} points): the form "
                   "is wrong there, not the noise.")
    else:
        verdict = (f"Predicted too low: {_names(low)}; too high: {_names(high)}. Misses by more than the "
                   "checkpoint noise and both steps' uncertainty: the form is wrong there.")
    out.append(Finding(
        f"Prediction intervals at {pct(rep('level'), 0)} (ladder runs resampled, both steps refitted, the target's "
        f"checkpoint noise added) hold {cov('inside')} of {cov('total')} actuals. " + verdict))

    out.append(Finding(
        f"{m('n_loss_below_ladder')} of 16 predicted task losses lie below every ladder checkpoint's. Step 1 misses "
        f"the targets' task loss by {pct(m('step1_loss_rel_error_mean'))} on average; step 2 at the actual loss errs "
        f"by {dec(m('step2_alone_mae'), 1)} points (chained: {dec(m('mae', 'bpb_chain'), 1)}). With the answer's "
        f"probability as the intermediate the mean absolute error is {dec(m('mae', 'prob_chain'), 1)}; fitting "
        f"accuracy on N and D directly, {dec(m('mae', 'one_step'), 1)}."))

    ll = s.sub("loss_to_loss")
    tr = ll("translation")
    out.append(Finding(
        f"Brandfonbrener et al.'s loss-to-loss tables from FineWeb-Edu (κ, K, E₀, E₁; 5 training sets, 4 test "
        f"sets) reproduce to their printed rounding in {ll('n_match')} of {ll('n_rows')} rows. Laws translated "
        f"from another set reach R² {_span([r['ours_mean'] for r in tr], lambda v: dec(v, 3))} on the target's "
        f"sweep; fitting the target's own 20-tokens-per-parameter models gives "
        f"{_span([r['baseline'] for r in tr], lambda v: dec(v, 3))}."))

    out.append(Finding(
        f"At 1e21 FLOP, 20.7 times the sweep's largest budget, the same fits predict the held-out models' losses "
        f"within {_span([abs(e) for e in ll('big_rel_errors')], lambda v: pct(v))}, but their "
        f"{pct(ll('level'), 0)} intervals (model pairs resampled, plus one pair's scatter) hold only "
        f"{ll('big_inside')} of {ll('n_rows')}: the fits are tighter than their extrapolation error."))
    out.append(_own_ladder(s.sub("own_ladder")))
    return _cap(out)


def _own_ladder(o: _Summary) -> Finding:
    """The chain on our own ladder: the targets' accuracy predicted, with the misses and the intervals."""
    rows = o("targets")
    names = " and ".join(r["model"].split(" ")[0] for r in rows)
    inside = sum(bool(r["acc_inside"]) for r in rows)
    return Finding(
        f"On our own ladder ({o('n_ladder')} GPTs of {o('n_min') / 1e3:.0f}k–{o('n_max') / 1e3:.0f}k parameters at "
        f"{_span(o('tokens_per_param'), lambda v: dec(v, 1).rstrip('0').rstrip('.'))} tokens per parameter; "
        f"a {o('items'):,}-item cloze from our corpus), the chain predicts the accuracy of {names} at "
        + " and ".join(f"{dec(100 * r['acc_pred'], 1)}% (actual {dec(100 * r['acc_actual'], 1)})" for r in rows)
        + f"; {inside} of {len(rows)} inside the {pct(o('level'), 0)} intervals ("
        + ", ".join(f"{dec(100 * r['acc_lower'], 1)}–{dec(100 * r['acc_upper'], 1)}" for r in rows)
        + " points; ladder runs resampled, item noise added).")
