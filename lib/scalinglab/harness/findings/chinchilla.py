"""Notebook 01's findings: the Chinchilla fit."""

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
    diff,
    interval,
    pct,
    pval,
    sig,
)


def chinchilla_fit(summary: Mapping[str, Any]) -> list[Finding]:
    s = _Summary("01_chinchilla_fit", summary)
    ours, epoch, hoff = s.sub("fits", "ours"), s.sub("fits", "epoch_reported"), s.sub("fits", "hoffmann_printed")
    hoff_unr = s.sub("fits", "hoffmann_unrounded")
    boot = s.sub("bootstrap")
    ci, se = boot.sub("ci"), boot.sub("se")
    level = f"{boot('level'):.0%}"

    def in_se(p: str) -> str:
        d = ours(p) - epoch(p)
        return NA if not se(p) else dec(d / se(p), 2, sign=True)

    out = [Finding(
        f"Epoch's fit reproduced on its {ours('n_rows')} runs: E = {dec(ours('E'), 2)} "
        f"{interval(ci('E'), lambda v: dec(v, 2), level)}, "
        f"α = {dec(ours('alpha'))} {interval(ci('alpha'), level=level)}, β = {dec(ours('beta'))} "
        f"{interval(ci('beta'), level=level)}; "
        f"Epoch's Table 1 prints E {dec(epoch('E'), 2)}, α {dec(epoch('alpha'))}, β {dec(epoch('beta'))}, "
        f"so ours differ by {in_se('alpha')} SE (α) and {in_se('beta')} SE (β)"
        + (": the same fit." if all(abs(ours(p) - epoch(p)) < 0.5 * se(p) for p in ("E", "alpha", "beta"))
           else ": not the same fit."))]

    test = s.sub("hoffmann_test")
    p_hoffmann = max(test("hoffmann_printed", "p"), test("hoffmann_unrounded", "p"))
    out.append(Finding(
        f"Compute-optimal exponent a = {dec(ours('a'))} {interval(ci('a'), level=level)}, N_opt ∝ C^a; "
        f"Hoffmann's printed Approach 3 implies {dec(hoff('a'))} (ours {diff(ours('a'), hoff('a'))}), the unrounded "
        f"values {dec(hoff_unr('a'))}. Tested against these runs, Hoffmann's printed and unrounded sets score "
        f"χ² = {sig(test('hoffmann_printed', 'chi2'), 2)} and {sig(test('hoffmann_unrounded', 'chi2'), 2)} (5 df, "
        f"{pval(p_hoffmann)}), Epoch's "
        f"{sig(test('epoch_reported', 'chi2'), 2)} ({pval(test('epoch_reported', 'p'))})"
        + (": Hoffmann's Approach 3 is rejected." if p_hoffmann < 0.05 else ": not rejected at 5%.")))

    tpp = "tokens_per_param_at_5.88e23"
    out.append(Finding(
        f"At Chinchilla's compute, 5.88e23 FLOP, our fit puts the optimum at {sig(ours(tpp), 3)} tokens per parameter "
        f"{interval(boot('tokens_per_param_ci'), lambda v: sig(v, 2), level)}; Epoch's fit gives {sig(epoch(tpp), 3)} "
        f"(ours {pct(ours(tpp) / epoch(tpp) - 1, 0, sign=True)}); "
        f"Chinchilla was trained at 20, while Hoffmann's printed Approach 3 law would ask for {sig(hoff(tpp), 2)}. "
        + _sensitivity_clause(s)))

    trap = s.sub("mean_trap")
    a_mean = trap("mean", "beta") / (trap("mean", "alpha") + trap("mean", "beta"))
    excess = trap("mean", "objective") / trap("sum", "objective") - 1
    narrow = s.sub("narrow_intervals")
    out.append(Finding(
        f"The loss-scale trap: L-BFGS-B on the Huber loss averaged over runs (Hoffmann's objective) stops early at "
        f"β = {dec(trap('mean', 'beta'), 2)} and a = {dec(a_mean, 2)}, an objective {pct(excess, 0)} above the "
        "optimum; "
        f"summed, the same search reaches β = {dec(trap('sum', 'beta'), 2)}, a = {dec(ours('a'), 2)}. "
        f"Hoffmann's Approach-3 interval for a (10th–90th, 0.001 wide) would need "
        f"{_count(narrow('a', 'runs_needed_bootstrap'))} runs at our bootstrap's width, "
        f"{_count(narrow('a', 'runs_needed_subsample_at_widest'))} even with his 80%-subsample procedure and the "
        f"widest his rounding allows, against his ~{narrow('hoffmann_n_runs')}."))

    a2 = s.sub("approach2")
    h2 = a2.sub("hoffmann")
    out.append(Finding(
        f"Approach 2 (isoFLOP parabolas, {a2('n_budgets')} budgets): a = {dec(a2('a'))} {interval(a2('ci'))}; "
        f"Hoffmann's Approach 2 gives {dec(h2('a'), 2)} (10th–90th {dec(h2('ci')[0])}–{dec(h2('ci')[1])}), ours "
        f"{diff(a2('a'), h2('a'))}"
        + (": Approach 2 agrees with our Approach 3, and Hoffmann's printed Approach 3 is the odd one out."
           if a2("ci")[0] <= h2("a") <= a2("ci")[1] and not a2("ci")[0] <= hoff("a") <= a2("ci")[1]
           else ".")))

    a1 = s.sub("approach1")
    pub = a1.sub("published", "gemstones")
    cool, hot = a1.sub("authors_cooldown"), a1.sub("authors_hot")
    out.append(Finding(
        "Approach 1 (training-curve envelope) on Gemstones: the authors' cooldown fit, a = "
        f"{dec(pub('cooldown', 'a'), 4)}, "
        f"is {'reproduced' if abs(cool('a') - pub('cooldown', 'a')) < 5e-4 else 'not reproduced'} "
        f"({dec(cool('a'), 4)}, "
        f"difference {diff(cool('a'), pub('cooldown', 'a'), 4)}); on the mirrored "
        f"hot curves, which start at 10B tokens, a = {dec(hot('a'), 2)} "
        f"{interval(hot('ci'), lambda v: dec(v, 2))} against "
        f"their {dec(pub('hot', 'a'), 2)} from curves starting at 2B (ours {diff(hot('a'), pub('hot', 'a'), 2)}): "
        f"where the curves start sets this exponent."))
    return _cap(out)


def _count(x: float | None) -> str:
    """A count to two significant digits with thousands separators: 586120 -> '590,000'."""
    return NA if _missing(x) else f"{float(sig(x, 2).replace('−', '-')):,.0f}"


def _sensitivity_clause(s: _Summary) -> str:
    """Notebook 01 §9: the range of tokens per parameter over the refits that change the method or the data."""
    rows = s("sensitivity")
    varied = [r["tokens_per_param"] for r in rows if r["check"] in ("Huber δ", "extraction")
              or (r["check"] == "highest losses dropped" and r["setting"] != "0")]
    keep_all = s.row("sensitivity", check="highest losses dropped", setting="0")
    return (f"Refits under Huber δ from 1e−4 to 0.1 or least squares, the other two extractions of the figure, or "
            f"10 outliers dropped give {_span(varied, lambda v: sig(v, 2))}; keeping all "
            f"{keep_all['n_rows']} rows gives {sig(keep_all['tokens_per_param'], 2)}.")
