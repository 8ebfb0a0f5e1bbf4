"""Notebook 08's findings: the extrapolation benchmark counted by independent units, the calibrated coverage,
SLDBench against its baselines on their own columns, the audit under misspecified truths with its power."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scalinglab.harness.findings.format import Finding, _cap, _missing, _Summary, dec, pct

NAMES = {"chinchilla / approach3": "Chinchilla by Approach 3", "chinchilla / varpro": "Chinchilla by variable "
         "projection", "kaplan / law engine": "Kaplan's form", "gadre / law engine": "Gadre et al.'s form",
         "data_constrained / law engine": "the data-constrained form", "approach2 / parabola": "Approach 2 (parabola)",
         "approach2 / spline": "Approach 2 (spline)", "baseline / power law in C": "the power law in C",
         "baseline / last optimum": "the last optimum carried forward"}
AUDIT_NAMES = {"parabola": "the parabola", "spline": "the spline", "approach3": "Approach 3",
               "varpro": "variable projection"}


def _names(items: list[str]) -> str:
    items = [NAMES.get(i, i) for i in items]
    if not items:
        return "none"
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def _ranking(r: Mapping[str, Any]) -> str:
    """'X best; Y tied; Z worse' over the ranking's datasets."""
    by: dict[str, list[str]] = {}
    for e in r["entries"]:
        v = e["verdict"]
        by.setdefault("not ranked" if v.startswith("not ranked") else v, []).append(e["entry"])
    parts = []
    if by.get("best"):
        parts.append(f"{_names(by['best'])} best")
    if by.get("tied for best"):   # the best among them (ranking relabels it when others tie), then the rest
        tied = [e for e in by["tied for best"] if e != r.get("best")]
        parts.append(f"{_names([r['best']])} best, {_names(tied)} not told apart from it"
                     if r.get("best") in by["tied for best"] else f"{_names(tied)} not told apart from the best")
    if by.get("worse"):
        parts.append(f"{_names(by['worse'])} worse")
    if by.get("not ranked"):
        parts.append(f"{_names(by['not ranked'])} not ranked (too few datasets)")
    return "; ".join(parts)


def _baselines(r: Mapping[str, Any]) -> str:
    """Which laws beat the better naive baseline (paired interval over datasets below 0)."""
    vb = {k: v for k, v in (r.get("vs_baselines") or {}).items() if k != "baseline"}
    name = NAMES.get(r["vs_baselines"]["baseline"], r["vs_baselines"]["baseline"])
    compared = [k for k, v in vb.items() if not v["verdict"].startswith("not compared")]
    if not compared:
        return f"none has the datasets a comparison with {name} needs"
    beats = [k for k in compared if vb[k]["verdict"] == "beats the baselines"]
    worse = [k for k in compared if vb[k]["verdict"] == "worse than a baseline"]
    # Each comparison with the baseline is its own paired interval: an entry can beat the baseline while the
    # baseline is not told apart from the best entry.
    return (f"{len(beats)} of {len(compared)} beat {name} pairwise ({_names(beats)})"
            + (f", {len(worse)} are worse than it" if worse else ""))


def benchmark(summary: Mapping[str, Any]) -> list[Finding]:
    s = _Summary("08_extrapolation_benchmark", summary)
    protocol, st = s("protocol"), s.sub("settings")
    groups = {p["group"]: p["n_units"] for p in protocol}
    alone = [p["dataset"] for p in protocol if p["n_units"] >= st("min_units")]
    out = [Finding(
        f"{len(protocol)} datasets are {len(groups)} independent ones (twin readings merged) holding out "
        f"{sum(groups.values())} independent units (budgets, model sizes), not runs; only {len(alone)} "
        f"({', '.join(alone) or 'none'}) holds out the {st('min_units')} units a ranking needs, so verdicts are "
        "made across datasets.")]

    ranking = s("ranking")
    if "rmsle" in ranking:
        r = ranking["rmsle"]
        out.append(Finding(
            f"Held-out RMSLE across {r['datasets']} independent datasets (paired t interval over datasets): "
            f"{_ranking(r)}; {_baselines(r)}."))
    if "nopt" in ranking and "lmin" in ranking:
        n, lm = ranking["nopt"], ranking["lmin"]
        out.append(Finding(
            f"The held-out budget's N_opt on {n['datasets']} independent isoFLOP sets (against a cubic through its "
            f"runs, which no entry fits): {_baselines(n)}; best {_names([n['best']] if n['best'] else [])}. Its "
            f"lowest loss: {_baselines(lm)}."))

    cov = s("coverage_overall", "laws")
    cal, par = cov.get("calibrated"), cov.get("parameter_only")
    if cal:
        noise = cov.get("noise_only")

        def share(c: Mapping[str, Any], bracketed: bool = False) -> str:
            # a coverage alone rewards a wide interval: each comes with its median half-width, a relative error
            text, w = pct(c["coverage"], 0), c.get("half_width_log")
            if w is None:
                return text
            return f"{text}, ±{pct(w, 1)}" if bracketed else f"{text} (±{pct(w, 1)})"

        out.append(Finding(
            f"Over the independent held-out units, the laws' calibrated {pct(st('level'), 0)} intervals (fitted one "
            f"training unit below each, forward by scale) hold {dec(cal['units_inside'], 1)} of "
            f"{dec(cal['n_units'], 0)} ({share(cal, bracketed=True)})"
            + (f"; the bootstrap's parameter-only intervals {share(par)}" if par else "")
            + (f", the noise-only ones {share(noise)}" if noise else "")
            + ("; ± is the median half-width, a share of the loss." if "half_width_log" in cal else ".")))

    sld = s("sldbench")
    against = {k: v for k, v in sld.items() if not _missing(v.get("baseline_r2"))}
    reach = [k for k, v in against.items() if v["reaches_baseline"]]
    pub, fix = sld.get("data_constrained (as published)"), sld.get("data_constrained (corrected)")
    dc = (f"; data-constrained {dec(pub['r2'], 2)} on the published columns against the baseline's "
          f"{dec(pub['baseline_r2'], 3)} ({dec(fix['r2'], 2)} corrected, no baseline)" if pub and fix else "")
    moe = sld.get("moe")
    norm = (f"; mixture of experts {dec(moe['r2'], 2)}, or {dec(moe['r2_v0'], 2)} under the older normaliser"
            if moe else "")
    out.append(Finding(
        f"SLDBench, our law chosen on a validation split of the training rows and scored on the baselines' own "
        f"columns and normaliser: it reaches the published human-law R² on {len(reach)} of {len(against)} tasks "
        f"({', '.join(reach) or 'none'}){dc}{norm}."))

    verdicts, power = s("audit_verdicts"), s("audit_power")
    none = [t for t, v in verdicts.items() if not v["trusted"]]
    audit = [r for r in s("audit_truths") if r["truth"] != "chinchilla" and not _missing(r["bias"])]
    if audit:
        worst = max(audit, key=lambda r: abs(r["bias"]))
        trust = f"no estimator is trusted under {', '.join(none)}" if none else "every truth has a trusted estimator"
        out.append(Finding(
            f"Estimator audit under {len(verdicts) - 1} truths other than the Chinchilla law "
            f"({power['reps']} experiments each; the trust rule flags a coverage of {pct(power['coverage_80'], 0)} "
            f"and a bias of {dec(power['bias_80'], 3)} 80% of the time): {trust}; largest bias "
            f"{dec(worst['bias'], 3, sign=True)} ± {dec(worst['bias_mc'], 3)} ({AUDIT_NAMES[worst['estimator']]}, "
            f"{worst['truth']})."))
    return _cap(out)
