"""Notebook 04's findings: extrapolation."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from scalinglab.harness.findings.format import (
    Finding,
    MissingSummaryKey,
    _cap,
    _span,
    _Summary,
    dec,
    interval,
    pct,
    sig,
)

CORPORA = {"c4_original": "C4", "rpj": "RedPajama", "rw_original": "RefinedWeb"}


TRAINING_RUNS = "95% over training runs:"   # the unit every fit's bootstrap in this notebook resamples


def extrapolation(summary: Mapping[str, Any]) -> list[Finding]:
    s = _Summary("04_extrapolation", summary)
    out = []

    m1 = s.sub("m_le_1")
    fits = [(CORPORA.get(k, k), m1.sub(k)) for k in m1.data]
    over = [f("by_kind", "over_trained", "mean_rel_error") for _, f in fits]
    all_below = all(f("by_kind", "over_trained", "all_below") for _, f in fits)
    inside = sum(f("heldout", "summary", "n_inside_interval") for _, f in fits)
    n_held = sum(f("heldout", "summary", "n") for _, f in fits)
    new_run = [f("heldout", "summary").get("n_inside_new_run_interval") for _, f in fits]
    n_over = sum(f("by_kind", "over_trained", "n") for _, f in fits)
    # Runs of one model size share its misfit, so the sign is also counted by size, the unit.
    sizes = sum(f("by_kind", "over_trained", "sizes") for _, f in fits)
    sizes_below = sum(f("by_kind", "over_trained", "sizes_all_below") for _, f in fits)
    by_size = (f"in all {sizes} model sizes" if sizes_below == sizes
               else f"all of them in {sizes_below} of {sizes} model sizes")
    if None in new_run:   # a summary without the new-run intervals: the mean law's count
        coverage = f"Only {inside} of {n_held} held-out runs fall inside the fits' 95% intervals"
    else:
        coverage = f"New-run 95% intervals hold {sum(new_run)} of {n_held} held-out runs"
    held_in = sum(new_run) if None not in new_run else inside
    # 95% intervals holding under 90% of the runs, with misses of one sign: a shared offset, not noise
    biased = all_below and held_in < 0.9 * n_held
    out.append(Finding(
        f"Fitted on Gadre et al.'s runs at M ≤ 1 ({len(fits)} corpora), Hoffmann's law "
        + (f"predicts all {n_over} over-trained runs too low" if all_below
           else "predicts over-trained runs too low on average")
        + f" (mean {_span(over, lambda v: pct(v, sign=True))} by corpus; {by_size})"
        + (": the form is biased beyond this range, not merely uncertain. " if biased
           else "; the misses are within what parameter uncertainty and run noise allow. ")
        # a size's runs share its misfit: the run count describes these runs, it is not a coverage rate
        + f"{coverage}, a count of runs, not of independent units."))

    rep = s.sub("paper_reproduction")
    paper, ours_rep = rep.sub("paper"), rep.sub("reproduced")
    targets = list(paper.data)
    hf = rep.row("table", fit="Hoffmann: log-Huber, free", **{"training set": "ours: M ≤ 1"})
    theirs = rep.row("table", fit="Gadre: curve_fit, α = β")

    def label(t: str) -> str:
        return t.replace(", ", " at ").replace("M=", "M = ")

    def ci_pct(ci: Sequence | None, level: str = "95%") -> str:
        return interval([v / 100 for v in ci] if ci and None not in ci else None, lambda v: pct(v, 0, sign=True),
                        level)

    out.append(Finding(
        f"Gadre et al.'s procedure on their {theirs['runs']} runs reproduces their relative errors ("
        + "; ".join(f"{label(t)} {pct(ours_rep(t), 3)}, paper {pct(paper(t), 3)}" for t in targets)
        + f"). Hoffmann's fit on our {hf['runs']} M ≤ 1 runs misses the same targets by "
        + " and ".join(f"{pct(hf[f'{t} %'] / 100, 1, sign=True)} {ci_pct(hf[f'{t} 95%'], lvl)}"
                       for t, lvl in zip(targets, [TRAINING_RUNS] + ["95%"] * len(targets)))
        + "."))

    rows = s("training_range", "rows")
    first = [r for r in rows if r["training set"] == "M ≤ 1"]
    last_set = "M ≤ 8"
    last = [r for r in rows if r["training set"] == last_set]
    if not first or not last:
        raise MissingSummaryKey("04_extrapolation", ("training_range", "rows", "[training set='M ≤ 1' and 'M ≤ 8']"))
    out.append(Finding(
        f"Over-trained runs in the fit cut the median error on a fixed target of over-trained and large runs from "
        f"{_span([r['median |err| %'] / 100 for r in first], pct)} (M ≤ 1) to "
        f"{_span([r['median |err| %'] / 100 for r in last], pct)} ({last_set}; 95% upper ends "
        f"{_span([r['median |err| 95%'][1] / 100 for r in last], pct)}, training runs resampled), but a = β/(α+β) "
        f"stays unresolved at {last_set}: "
        + ", ".join(f"{r['corpus']} {dec(r['a'], 2)} {interval(r['a 95%'], lambda v: dec(v, 2))}" for r in last)
        + "."))

    sh = s.sub("shape_holdout")
    wide = [r["mean"] for r in sh("by_model")]
    ordinary = [r["mean"] for r in sh("leave_one_model_out")]
    below_all = sum(o <= max(wide) for o in ordinary)
    out.append(Finding(
        f"Held out by shape (Gemstones): the law fitted to {sh('n_models')} ordinary models predicts the "
        f"{len(wide)} wide, shallow ones too low by {_span([-w for w in wide], lambda v: pct(v))} on average, while an "
        f"ordinary model left out is off by {_span(ordinary, lambda v: pct(v, sign=True))} "
        + (f"(none of the {len(ordinary)} as low as the least-off wide one)" if below_all == 0 else
           f"({below_all} of {len(ordinary)} as low as the least-off wide one)")
        + ": a law in N alone does not hold across shapes."))

    few = s.sub("few_runs")
    free12 = few.row("subsets", variant="free", size=12)
    tied12 = few.row("subsets", variant="tied (α = β)", size=12)
    syn = few.sub("synthetic")
    st12 = syn.row("subsets", variant="tied (α = β)", size=12)
    sf12 = syn.row("subsets", variant="free", size=12)
    out.append(Finding(
        f"On 12 of Epoch's {few('reference', 'n_rows')} runs, free fits put N_opt at "
        f"{sig(free12['n_opt_ratio_lo'], 2)}–{sig(free12['n_opt_ratio_hi'], 2)}× the all-runs value (16–84% of "
        f"random subsets; {pct(free12['n_opt_within_2x'], 0)} within 2×). Tying α = β puts "
        f"{pct(tied12['n_opt_within_2x'], 0)} within 2× because a = 0.5 is nearly these runs' "
        f"{dec(few('reference', 'a'), 3)}; on a synthetic law with a = {dec(syn('a'), 2)}, tied fits land at "
        f"{sig(st12['n_opt_ratio_median'], 2)}× the truth, free fits at {sig(sf12['n_opt_ratio_median'], 2)}×."))

    which = _which_law(s)
    if which:
        out.append(Finding(which))
    return _cap(out)


def _which_law(s: _Summary) -> str:
    """Section 6's answer (empty in a summary without that section): which registered form the RedPajama split
    ranks first, whether the paired interval tells it from the next, and what that interval could detect."""
    if "which_law" not in s.data:
        return ""
    w = s.sub("which_law")
    ranking = w("ranking")
    rows = {r["law"]: r for r in w("laws")}
    best, second = ranking[0], ranking[1]
    vs = rows[second]["vs_best"]
    ci = vs["ci"]
    unit = w("paired_unit") if "paired_unit" in w.data else "held-out runs"
    groups = "model sizes" if unit.startswith("values of") else unit
    level = f"95% over {vs['n_units']} {groups}:" if "n_units" in vs else "95%"
    rmsle = ", ".join(f"{k} {dec(rows[k]['split_rmsle'], 3)}" for k in ranking)
    gap = f"RMSLE difference {interval(ci, lambda v: dec(v, 3, sign=True), level)[1:-1]}"
    if ci[0] <= 0:
        verdict = f"the {rows[best]['split_n']} held-out runs cannot tell it from {second} ({gap}"
        verdict += (f"; it would detect a difference of {dec(vs['detectable'], 3)} with 80% power)"
                    if "detectable" in vs else ")")
    else:
        verdict = f"ahead of {second} ({gap})"
    return (f"Of {len(ranking)} registered forms fitted to the same RedPajama M ≤ 1 runs, {best} extrapolates best "
            f"(held-out RMSLE {rmsle}); {verdict}.")
