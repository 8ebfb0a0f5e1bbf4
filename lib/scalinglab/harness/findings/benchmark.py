"""Notebook 08's findings: the extrapolation benchmark, SLDBench against its baselines, the audit under
misspecified truths."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from scalinglab.harness.findings.format import Finding, _cap, _missing, _Summary, dec, pct

NAMES = {"chinchilla / approach3": "Chinchilla by Approach 3", "chinchilla / varpro": "Chinchilla by variable "
         "projection", "kaplan / law engine": "Kaplan's form", "gadre / law engine": "Gadre et al.'s form",
         "data_constrained / law engine": "the data-constrained form", "approach2 / parabola": "Approach 2 (parabola)",
         "approach2 / spline": "Approach 2 (spline)"}
AUDIT_NAMES = {"parabola": "the parabola", "spline": "the spline", "approach3": "Approach 3",
               "varpro": "variable projection"}


def _key(r: Mapping[str, Any]) -> str:
    return f"{r['law']} / {r['estimator']}"


def _names(items: list[str]) -> str:
    if not items:
        return "none"
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def _median(values) -> float | None:
    v = [x for x in values if not _missing(x)]
    return float(np.median(v)) if v else None


def benchmark(summary: Mapping[str, Any]) -> list[Finding]:
    s = _Summary("08_extrapolation_benchmark", summary)
    rows, wins, datasets = s("scoreboard"), s("wins"), s("datasets")
    out = []
    ranked = sorted(wins, key=lambda w: (-(w["alone_best"] + w["tied_best"]), -w["alone_best"]))
    lead = "; ".join(f"{NAMES.get(w['entry'], w['entry'])} alone best on {w['alone_best']}, tied for best on "
                     f"{w['tied_best']}, median RMSLE {dec(w['median_ratio_to_best'], 2)}× the best's"
                     for w in ranked[:2])
    n_iso = sum(1 for d in datasets if d["holdout"] == "largest-budget")
    out.append(Finding(
        f"Held out at their largest scale, {len(datasets)} datasets ({n_iso} isoFLOP experiments): {lead} "
        "(paired bootstrap over each dataset's independent unit; ties counted as ties)."))

    kap = [r for r in rows if _key(r) == "kaplan / law engine" and not _missing(r["rmsle"])]
    worse = sum(1 for r in kap if r["verdict"] == "worse")
    alone = [r["dataset"] for r in kap if r["verdict"] == "best"]
    kw = next((w for w in wins if w["entry"] == "kaplan / law engine"), None)
    if kw:
        out.append(Finding(
            f"Kaplan et al.'s form, which has no irreducible loss, is worse than the best (its paired 95% interval "
            f"excludes 0) on {worse} of {len(kap)} datasets, median held-out RMSLE "
            f"{dec(kw['median_ratio_to_best'], 1)}× the best entry's"
            + (f", yet alone best on {len(alone)} ({_names(alone)})." if alone else ".")))

    cover = []
    for entry in ("chinchilla / approach3", "chinchilla / varpro", "gadre / law engine"):
        rs = [r for r in rows if _key(r) == entry and not _missing(r["coverage"])]
        if rs:
            k, n = sum(r["n_inside"] for r in rs), sum(r["n_heldout"] for r in rs)
            cover.append(f"{NAMES[entry]} {k} of {n} ({pct(k / n, 0)})")
    a3 = [r for r in rows if _key(r) == "chinchilla / approach3" and not _missing(r.get("coverage_boot"))]
    boot = ""
    if a3:
        k, n = round(sum(r["coverage_boot"] * r["n_heldout"] for r in a3)), sum(r["n_heldout"] for r in a3)
        boot = f"; Approach 3's interval with its row bootstrap added, {k} of {n} ({pct(k / n, 0)})"
    out.append(Finding(
        f"The {pct(s('settings', 'level'), 0)} new-run interval (residual noise only) held, over all datasets: "
        + "; ".join(cover) + boot + "."))

    iso = [r for r in rows if not _missing(r["nopt_error"])]
    by = {}
    for r in iso:
        by.setdefault(_key(r), []).append(abs(r["nopt_error"]))
    if by:
        best = min(by, key=lambda k: np.median(by[k]))
        parts = [f"{NAMES.get(k, k)} {pct(np.exp(np.median(by[k])) - 1, 0)}" for k in
                 dict.fromkeys([best, "approach2 / parabola", "chinchilla / approach3"]) if k in by]
        out.append(Finding(
            f"On the {len({r['dataset'] for r in iso})} isoFLOP experiments, the held-out budget's N_opt (against a "
            f"parabola through that budget's own runs) is missed by a median of: " + "; ".join(parts) + "."))

    sld = s("sldbench")
    scored = {k: v for k, v in sld.items() if "as published" not in k}
    reach = [k for k, v in scored.items() if v["r2"] >= v["baseline_r2"]]
    pub, fix = sld.get("data_constrained (as published)"), sld.get("data_constrained (corrected)")
    swap = (f"; data-constrained R² {dec(pub['r2'], 2)} with its token columns as published, {dec(fix['r2'], 2)} "
            f"corrected (baseline {dec(fix['baseline_r2'], 3)})" if pub and fix else "")
    out.append(Finding(
        f"On SLDBench's own splits, our best law reaches the published human-law R² on {len(reach)} of "
        f"{len(scored)} tasks in scope ({_names(reach)}){swap}."))

    verdicts = s("audit_verdicts")
    none = [t for t, v in verdicts.items() if not v["trusted"]]
    audit = [r for r in s("audit_truths") if r["truth"] != "chinchilla" and not _missing(r["bias"])]
    if audit:
        worst = max(audit, key=lambda r: abs(r["bias"]))
        low = min(r["coverage"] for r in audit)
        lows = [r for r in audit if r["coverage"] == low]
        trust = (f"no estimator is trusted under {_names(none)}" if none else
                 "every truth has a trusted estimator")
        out.append(Finding(
            f"Estimator audit under {len(verdicts) - 1} truths other than the Chinchilla law "
            f"({s('settings', 'reps')} experiments each): {trust}; largest bias "
            f"{dec(worst['bias'], 3, sign=True)} ± {dec(worst['bias_mc'], 3)} ({AUDIT_NAMES[worst['estimator']]}, "
            f"{worst['truth']}); lowest coverage of a 95% interval {pct(low, 0)} (exact 95% "
            f"{pct(lows[0]['coverage_lo'], 0)}–{pct(lows[0]['coverage_hi'], 0)}; "
            + "; ".join(f"{AUDIT_NAMES[r['estimator']]}, {r['truth']}" for r in lows[:2])
            + (f"; {len(lows) - 2} more" if len(lows) > 2 else "") + ")."))
    return _cap(out)

