"""Notebook 05's findings: the estimator audit."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scalinglab.harness.findings.format import (
    NA,
    Finding,
    _cap,
    _missing,
    _span,
    _Summary,
    dec,
    pct,
)

AUDIT_NAMES = {"parabola": "the parabola", "spline": "the spline", "approach3": "Approach 3",
               "varpro": "variable projection"}


def _names(estimators: list[str]) -> str:
    names = [AUDIT_NAMES.get(e, e) for e in estimators]
    if not names:
        return "none"
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def _coverage(r: dict) -> str:
    """'88% (exact 95% 71–97%)'."""
    lo, hi = r.get("coverage_lo"), r.get("coverage_hi")
    if _missing(lo) or _missing(hi):
        return pct(r["coverage"], 0)
    return f"{pct(r['coverage'], 0)} ({dec(100 * lo, 0)}–{pct(hi, 0)})"


def estimator_audit(summary: Mapping[str, Any]) -> list[Finding]:
    s = _Summary("05_estimator_audit", summary)
    out = []
    st = s.sub("settings")

    def row(design: str, estimator: str) -> dict:
        return s.row("designs", design=design, estimator=estimator)

    def bias(r: dict) -> str:
        return f"{dec(r['bias'], 3, sign=True)} ± {dec(r['bias_mc'], 3)}"

    out.append(Finding(
        f"{st('n_designs')} simulated isoFLOP designs, {st('reps')} experiments each, every estimator on the "
        f"same ones; Gaussian noise in log loss of sd {dec(s('noise', 'sigma_log_loss'), 4)} (the median "
        "seed-noise floor of our sweeps). Every truth is the Chinchilla form. At this count the trust rule flags "
        f"a coverage of {pct(s('audit_power', 'coverage_80'), 0)} and a bias of {dec(s('audit_power', 'bias_80'), 3)} "
        "80% of the time."))

    base = {e: row("baseline", e) for e in AUDIT_NAMES}
    out.append(Finding(
        "Baseline grid (a = 0.5, 9 sizes over 1.5 decades, 5 budgets, centred): RMSE of a, then the coverage "
        "of the estimator's own 95% interval with its exact 95% interval: "
        + "; ".join(f"{AUDIT_NAMES[e]} {dec(r['rmse'], 3)}, {_coverage(r)}" for e, r in base.items()) + "."))

    best = s("best")
    counts: dict[tuple[tuple[str, ...], bool], int] = {}
    for b in best.values():
        key = (tuple(b["estimators"]), bool(b["trusted"]))
        counts[key] = counts.get(key, 0) + 1

    def says(names: tuple[str, ...], trusted: bool) -> str:
        text = (f"{_names(list(names))} alone" if len(names) == 1
                else f"{_names(list(names))} tie")
        return text if trusted else f"{text} (none trusted)"

    ranked = sorted(counts.items(), key=lambda kv: -kv[1])
    rest = sum(v for _, v in ranked[3:])
    out.append(Finding(
        "Most accurate trusted estimator (|bias| − 2 MC errors < 0.01, coverage's exact interval reaching the "
        "nominal 95%; paired ties kept as ties): "
        + "; ".join(f"{says(*k)} in {v}" + (f" of {len(best)} designs" if i == 0 else "")
                    for i, (k, v) in enumerate(ranked[:3]))
        + (f"; other verdicts in {rest}" if rest else "") + "."))

    safe = s("rule", "narrowest_safe_width")

    def width(e: str) -> str:
        return NA if safe[e] is None else f"{safe[e]:g}"

    narrow = "width=0.5, centring=4"
    p = row(narrow, "parabola")
    out.append(Finding(
        "Approach 2 needs wide windows: trusted up to 4× miscentring from "
        f"{width('parabola')} (parabola) and {width('spline')} (spline) decades of N per budget, Approach 3 "
        f"from {width('approach3')}, variable projection from {width('varpro')}. At half a decade and 4× "
        f"the parabola is biased by {bias(p)}; without noise no Approach 2 fit errs by over "
        f"{dec(s('width_bias', 'noise_free_max'), 3)}: the bias is the noise's."))

    ours = [r for r in s("our_grids") if r["estimator"] in ("spline", "varpro")]
    if ours:
        grids = sorted({r["grid"].split(": ")[1] for r in ours})
        sp = [r for r in ours if r["estimator"] == "spline"]
        vp = [r for r in ours if r["estimator"] == "varpro"]
        out.append(Finding(
            f"On our own sweep grids ({', '.join(grids)}; true a = 0.5): the spline's bias spans "
            f"{_span([r['bias'] for r in sp], lambda v: dec(v, 3, sign=True))} (RMSE "
            f"{_span([r['rmse'] for r in sp], lambda v: dec(v, 3))}), variable projection's "
            f"{_span([r['bias'] for r in vp], lambda v: dec(v, 3, sign=True))} (RMSE "
            f"{_span([r['rmse'] for r in vp], lambda v: dec(v, 3))})."))

    g = s.sub("porian_gap")
    # the most of the gap the bias could be, at two Monte Carlo errors
    most = None if _missing(g("spline_bias")) else (abs(g("spline_bias")) + 2 * g("spline_bias_mc")) / g("gap")
    out.append(Finding(
        f"Porian et al.'s Kaplan-step grid, true a = {dec(g('a_tuned'), 3)}: their spline estimator is biased by "
        f"{dec(g('spline_bias'), 3, sign=True)} ± {dec(g('spline_bias_mc'), 3)}, at most {pct(most, 0)} "
        f"(bias plus two Monte Carlo errors) of the {dec(g('gap'), 3)} gap between their "
        f"{dec(g('a_kaplan'), 3)} and {dec(g('a_tuned'), 3)}." + _porian_parabola(s, g("a_kaplan"))))
    return _cap(out)


def _porian_parabola(s: _Summary, a_kaplan: float) -> str:
    """The parabola on Porian et al.'s Kaplan grid under their Kaplan-step exponent as the truth, when the
    summary has that row."""
    for r in s("porian_grids"):
        if r["estimator"] == "parabola" and r["a_true"] == a_kaplan and r["grid"].endswith("kaplan_reproduction"):
            return (f" Under a true {dec(a_kaplan, 3)} a parabola there is off by {dec(r['bias'], 3, sign=True)} "
                    f"(coverage {pct(r['coverage'], 0)}).")
    return ""
