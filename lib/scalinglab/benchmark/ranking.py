"""Verdicts across datasets, counted over independent datasets, and coverage counted over independent units.

A dataset is one independent unit of the ranking: twins (two readings of one set of runs, ``protocol.TWINS``)
are merged first (their scores averaged, in log for RMSLE), so they count once. Three rankings, each of the
entries scored on it:

- ``rmsle``: held-out RMSLE, compared as log ratios (a dataset's noise level cancels);
- ``nopt`` and ``lmin`` (isoFLOP sets): |log(predicted / reference)| of the held-out budget's N_opt and L_min.

The best entry has the lowest mean score over its datasets (for RMSLE, the geometric mean of its ratio to each
dataset's best). Every other entry is compared with it on the datasets both were scored on: the mean paired
difference with a t interval over those datasets (df = datasets − 1). An entry is ranked only with at least
``MIN_DATASETS`` such datasets; it is "worse" when the interval excludes 0, else "tied for best". Each law is
compared with the better naive baseline the same way: it "beats the baselines" only when the interval lies
below 0.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import stats

from scalinglab.benchmark.entries import key
from scalinglab.serialization import to_jsonable

MIN_DATASETS = 5
METRICS = {"rmsle": "held-out RMSLE (log ratio)", "nopt": "|log N_opt error| at the held-out budget",
           "lmin": "|log L_min error| at the held-out budget"}
KINDS = ("calibrated", "parameter_only", "noise_only")


def _value(row: dict, metric: str) -> float:
    if metric == "rmsle":
        v = row["rmsle"]
        return float(np.log(v)) if v is not None and np.isfinite(v) and v > 0 else np.nan
    v = row[f"{metric}_error"]
    return abs(float(v)) if v is not None and np.isfinite(v) else np.nan


def merged(rows: list[dict], metric: str) -> dict[str, dict[str, float]]:
    """{entry: {independent dataset: value}}, twins averaged."""
    acc: dict[str, dict[str, list[float]]] = {}
    for r in rows:
        v = _value(r, metric)
        if np.isfinite(v):
            acc.setdefault(key(r["law"], r["estimator"]), {}).setdefault(r["group"], []).append(v)
    return {e: {g: float(np.mean(v)) for g, v in gs.items()} for e, gs in acc.items()}


def _paired(a: dict[str, float], b: dict[str, float], level: float) -> dict[str, Any]:
    common = sorted(set(a) & set(b))
    d = np.array([a[g] - b[g] for g in common])
    out = {"datasets": len(common), "diff": float(d.mean()) if len(d) else np.nan, "ci": [np.nan, np.nan]}
    if len(d) >= 2:
        half = float(stats.t.ppf(0.5 + level / 2, len(d) - 1) * d.std(ddof=1) / np.sqrt(len(d)))
        out["ci"] = [out["diff"] - half, out["diff"] + half]
    return out


def rank_metric(values: dict[str, dict[str, float]], level: float, log: bool) -> dict[str, Any]:
    """One ranking (see the module docstring): per entry its datasets, score, difference from the best with
    its interval, and verdict."""
    groups = sorted({g for v in values.values() for g in v})
    floor = {g: min(v[g] for v in values.values() if g in v) for g in groups}
    score = {}
    for e, v in values.items():
        rel = [v[g] - floor[g] for g in v] if log else list(v.values())
        score[e] = float(np.exp(np.mean(rel))) if log else float(np.mean(rel))
    eligible = [e for e in values if len(values[e]) >= MIN_DATASETS]
    best = min(eligible, key=lambda e: score[e]) if eligible else None
    rows = []
    for e, v in values.items():
        row = {"entry": e, "datasets": len(v), "score": score[e], "median": float(np.median(list(v.values())))}
        if best is None or (e != best and len(set(v) & set(values[best])) < MIN_DATASETS):
            row["verdict"] = f"not ranked ({len(v) if best is None else len(set(v) & set(values[best]))} " \
                             f"independent datasets, {MIN_DATASETS} needed)"
        elif e == best:
            row["verdict"] = "best"
        else:
            p = _paired(v, values[best], level)
            row.update(vs_best=p, verdict="worse" if p["ci"][0] > 0 else "tied for best")
        rows.append(row)
    if best is not None and any(r["verdict"] == "tied for best" for r in rows):
        next(r for r in rows if r["entry"] == best)["verdict"] = "tied for best"
    rows.sort(key=lambda r: r["score"])
    return {"best": best, "datasets": len(groups), "entries": rows}


def against_baselines(values: dict[str, dict[str, float]], level: float) -> dict[str, Any]:
    """Each non-baseline entry against the better baseline (lower mean score) on their common datasets."""
    base = [e for e in values if e.startswith("baseline /")]
    if not base:
        return {}
    ref = min(base, key=lambda e: np.mean(list(values[e].values())))
    out = {"baseline": ref}
    for e, v in values.items():
        if e in base:
            continue
        p = _paired(v, values[ref], level)
        if p["datasets"] < MIN_DATASETS:
            p["verdict"] = f"not compared ({p['datasets']} independent datasets, {MIN_DATASETS} needed)"
        else:
            p["verdict"] = ("beats the baselines" if p["ci"][1] < 0 else "worse than a baseline" if p["ci"][0] > 0
                            else "no better than a baseline")
        out[e] = p
    return out


def rankings(rows: list[dict], level: float = 0.95) -> dict[str, Any]:
    out = {}
    for metric in METRICS:
        values = merged(rows, metric)
        if values:
            out[metric] = rank_metric(values, level, log=metric == "rmsle") | {
                "what": METRICS[metric], "vs_baselines": against_baselines(values, level)}
    return to_jsonable(out)


def coverage_overall(rows: list[dict]) -> dict[str, Any]:
    """Per entry and pooled: units inside / independent held-out units, for each interval (twins merged: their
    held-out units are the same units, so their counts are averaged), and beside each loss interval's coverage
    its width: ``half_width_log``, the median over datasets of each dataset's median half-width in log loss.
    N_opt and L_min: calibrated only, one unit per isoFLOP dataset."""
    per: dict[str, dict[str, dict[str, list]]] = {}
    for r in rows:
        iv = r.get("intervals") or {}
        e = key(r["law"], r["estimator"])
        for kind in KINDS:
            c = iv.get(kind)
            if c:
                per.setdefault(e, {}).setdefault(kind, {}).setdefault(r["group"], []).append(
                    (c["units_inside"], c["n_units"], c.get("half_width_log")))
        for what in ("n_opt", "l_min"):
            c = iv.get(what)
            if c and c.get("inside") is not None:
                per.setdefault(e, {}).setdefault(what, {}).setdefault(r["group"], []).append(
                    (float(c["inside"]), 1, None))

    def widths(groups: dict[str, list]) -> list[float]:
        """One width per independent dataset (twins averaged), where its rows have one."""
        out = []
        for v in groups.values():
            w = [x for _, _, x in v if x is not None]
            if w:
                out.append(float(np.mean(w)))
        return out

    def total(groups: dict[str, list], w: list[float]) -> dict[str, Any]:
        inside = sum(float(np.mean([a for a, _, _ in v])) for v in groups.values())
        n = sum(float(np.mean([b for _, b, _ in v])) for v in groups.values())
        return {"units_inside": inside, "n_units": n, "coverage": inside / n if n else np.nan,
                "datasets": len(groups)} | ({"half_width_log": float(np.median(w))} if w else {})

    width = {e: {k: widths(g) for k, g in kinds.items()} for e, kinds in per.items()}
    out: dict[str, Any] = {"entries": {e: {k: total(g, width[e][k]) for k, g in kinds.items()}
                                       for e, kinds in per.items()}}
    for name, pick in (("laws", lambda e: not e.startswith("baseline /")), ("all", lambda e: True)):
        pooled = {}
        for kind in KINDS + ("n_opt", "l_min"):
            chosen = [e for e in out["entries"] if pick(e) and kind in out["entries"][e]]
            if chosen:
                parts = [out["entries"][e][kind] for e in chosen]
                inside, n = sum(p["units_inside"] for p in parts), sum(p["n_units"] for p in parts)
                pooled[kind] = {"units_inside": inside, "n_units": n, "coverage": inside / n if n else np.nan,
                                "entries": len(parts)}
                w = [x for e in chosen for x in width[e][kind]]
                if w:
                    pooled[kind]["half_width_log"] = float(np.median(w))
        out[name] = pooled
    return to_jsonable(out)


def summary_lines(ranking: dict[str, Any], cover: dict[str, Any], level: float) -> list[str]:
    """The printed verdicts: each ranking with its datasets, the baseline comparison, and the coverage."""
    lines = []
    for r in ranking.values():
        lines += ["", f"across independent datasets: {r['what']} ({r['datasets']} datasets, twins merged; "
                      f"ranked with >= {MIN_DATASETS})",
                  f"  {'law / estimator':<28}{'datasets':>9}{'score':>9}   verdict"]
        for e in r["entries"]:
            vs = e.get("vs_best")
            extra = f"  {vs['diff']:+.3f} [{vs['ci'][0]:+.3f}, {vs['ci'][1]:+.3f}]" if vs else ""
            lines.append(f"  {e['entry']:<28}{e['datasets']:>9}{e['score']:>9.3f}   {e['verdict']}{extra}")
        vb = r.get("vs_baselines") or {}
        if vb:
            lines.append(f"  against the better baseline ({vb['baseline']}): " + "; ".join(
                f"{k} {v['verdict']}" for k, v in vb.items() if k != "baseline"))
    pct = round(level * 100)
    lines += ["", f"coverage of the {pct}% intervals over independent held-out units (twins merged):"]
    for e, kinds in cover["entries"].items():
        lines.append(f"  {e:<28}" + "; ".join(
            f"{k} {v['units_inside']:.1f}/{v['n_units']:.0f}" for k, v in kinds.items()))
    for name in ("laws", "all"):
        p = cover.get(name) or {}
        if p:
            lines.append(f"  {'pooled, ' + name:<28}" + "; ".join(
                f"{k} {v['coverage']:.2f} ({v['units_inside']:.1f}/{v['n_units']:.0f}"
                + (f", median half-width {v['half_width_log']:.3f} in log loss" if "half_width_log" in v else "")
                + ")" for k, v in p.items()))
    return lines
