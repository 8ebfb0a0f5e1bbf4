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
    diff_resolved,
    interval,
    pct,
    pval,
    sig,
)
from scalinglab.papers.epoch import P_FLOOR


def chinchilla_fit(summary: Mapping[str, Any]) -> list[Finding]:
    s = _Summary("01_chinchilla_fit", summary)
    ours, epoch, hoff = s.sub("fits", "ours"), s.sub("fits", "epoch_reported"), s.sub("fits", "hoffmann_printed")
    boot = s.sub("bootstrap")
    ci, se = boot.sub("ci"), boot.sub("se")
    level = f"{boot('level'):.0%}"
    runs = "bootstrap over runs"

    def in_se(p: str) -> str:
        d = ours(p) - epoch(p)
        return NA if not se(p) else dec(d / se(p), 2, sign=True)

    out = [Finding(
        f"Epoch's fit reproduced on its {ours('n_rows')} runs: E = {dec(ours('E'), 2)} "
        f"{interval(ci('E'), lambda v: dec(v, 2), level)}, "
        f"α = {dec(ours('alpha'))} {interval(ci('alpha'), level=level)}, β = {dec(ours('beta'))} "
        f"{interval(ci('beta'), level=level)}, {runs}. "
        f"Epoch's Table 1 prints E {dec(epoch('E'), 2)}, α {dec(epoch('alpha'))}, β {dec(epoch('beta'))}: "
        f"{in_se('alpha')} SE (α) and {in_se('beta')} SE (β) from ours"
        + (", the same fit." if all(abs(ours(p) - epoch(p)) < 0.5 * se(p) for p in ("E", "alpha", "beta"))
           else ", not the same fit."))]

    test = s.sub("hoffmann_test")
    p_hoffmann = max(test("hoffmann_printed", "p"), test("hoffmann_unrounded", "p"))
    p_epoch = test("epoch_reported", "p")
    detectable = s("detectable_shift", "a")
    out.append(Finding(
        f"Compute-optimal exponent a = {dec(ours('a'))} {interval(ci('a'), level=level)}, {runs}; "
        f"Hoffmann's printed Approach 3 implies {dec(hoff('a'))}. Wald tests on these runs "
        + ("reject" if p_hoffmann < 0.05 else "do not reject")
        + f" his printed and unrounded sets (χ² = {_chi2(test('hoffmann_printed', 'chi2'))} and "
        f"{_chi2(test('hoffmann_unrounded', 'chi2'))}, 5 df, {_p(p_hoffmann)}) and "
        + ("not Epoch's" if p_epoch >= 0.05 else "Epoch's too")
        + f" (χ² = {_chi2(test('epoch_reported', 'chi2'))}, {_p(p_epoch)}"
        + f"; a shift of {dec(detectable, 2)} in a is detected with 80% power)."))

    tpp = "tokens_per_param_at_5.88e23"
    out.append(Finding(
        f"At Chinchilla's compute, 5.88e23 FLOP, our fit asks for {sig(ours(tpp), 3)} tokens per parameter "
        f"{interval(boot('tokens_per_param_ci'), lambda v: sig(v, 2), level)}, {runs}; Epoch's fit gives "
        f"{sig(epoch(tpp), 3)}, Chinchilla was trained at 20, and Hoffmann's printed law asks for "
        f"{sig(hoff(tpp), 2)}. " + _sensitivity_clause(s)))

    trap = s.sub("mean_trap")
    a_mean = trap("mean", "beta") / (trap("mean", "alpha") + trap("mean", "beta"))
    excess = trap("mean", "objective") / trap("sum", "objective") - 1
    narrow = s.sub("narrow_intervals")
    out.append(Finding(
        f"Averaging the Huber loss over runs (Hoffmann's objective) stops L-BFGS-B early, {pct(excess, 0)} above "
        f"the optimum: β {dec(ours('beta'), 2)} → {dec(trap('mean', 'beta'), 2)} and a {dec(ours('a'), 2)} → "
        f"{dec(a_mean, 2)} move towards his values, α {dec(ours('alpha'), 2)} → {dec(trap('mean', 'alpha'), 2)} "
        f"away. His 0.001-wide interval for a would need "
        f"{_count(narrow('a', 'runs_needed_bootstrap'))} runs at our bootstrap's width, "
        f"{_count(narrow('a', 'runs_needed_subsample'))} by his procedure (at 0.002, his rounding's widest: "
        f"{_count(narrow('a', 'runs_needed_bootstrap_at_widest'))} and "
        f"{_count(narrow('a', 'runs_needed_subsample_at_widest'))}); he had ~{narrow('hoffmann_n_runs')}."))

    a2 = s.sub("approach2")
    h2 = a2.sub("hoffmann")
    lo, hi = a2("ci")
    agrees = lo <= h2("a") <= hi
    out.append(Finding(
        f"Approach 2 (isoFLOP parabolas, {a2('n_budgets')} budgets): a = {dec(a2('a'))} {interval(a2('ci'))}, "
        f"t interval over the budgets' optima; Hoffmann's Approach 2 gives {dec(h2('a'), 2)} (ours "
        f"{diff(a2('a'), h2('a'))})"
        + (f", and differences from it below {diff(lo, h2('a'))} or above {diff(hi, h2('a'))} are excluded"
           if agrees else ", outside our interval")
        + (f". Hoffmann's printed Approach 3 ({dec(hoff('a'))}) lies outside." if not lo <= hoff("a") <= hi
           else ".")))

    a1 = s.sub("approach1")
    pub = a1.sub("published", "gemstones")
    cool, hot = a1.sub("authors_cooldown"), a1.sub("authors_hot")
    out.append(Finding(
        "Approach 1 (training-curve envelope) on Gemstones: the authors' cooldown fit, a = "
        f"{dec(pub('cooldown', 'a'), 4)}, "
        f"is {'reproduced' if abs(cool('a') - pub('cooldown', 'a')) < 5e-4 else 'not reproduced'} "
        f"(difference {diff_resolved(cool('a'), pub('cooldown', 'a'), 4)}). On the mirrored hot curves, which start "
        f"at 10B "
        f"tokens with a fifth of the checkpoints, a = {dec(hot('a'), 2)} {interval(hot('ci'), lambda v: dec(v, 2))}, "
        f"{runs}, against their {dec(pub('hot', 'a'), 2)} from 2B. On the mirrored table a later start moves a to "
        f"{dec(max(a1('first_checkpoint_a').values()), 2)}; fewer checkpoints, to "
        f"{_span(list(a1('thinned_a').values()), lambda v: dec(v, 2))}."))
    return _cap(out)


def _p(p: float) -> str:
    """The capped p-value the notebook prints (papers.epoch.P_FLOOR), in the findings' typography."""
    return "p < 1e−10" if p < P_FLOOR else pval(p)


def _count(x: float | None) -> str:
    """A count to two significant digits with thousands separators: 586120 -> '590,000'."""
    return NA if _missing(x) else f"{float(sig(x, 2).replace('−', '-')):,.0f}"


def _sensitivity_clause(s: _Summary) -> str:
    """Notebook 01 §8: the range of tokens per parameter over the refits that change the method or the data."""
    rows = s("sensitivity")
    varied = [r["tokens_per_param"] for r in rows if r["check"] in ("Huber δ", "extraction")
              or (r["check"] == "highest losses dropped" and r["setting"] != "0")]
    keep_all = s.row("sensitivity", check="highest losses dropped", setting="0")
    return (f"Refits with other Huber δ, extractions or outlier drops give {_span(varied, lambda v: sig(v, 2))}; "
            f"keeping all {keep_all['n_rows']} rows gives {sig(keep_all['tokens_per_param'], 2)}.")


def _chi2(x) -> str:
    """A χ² statistic as the consistency table prints it: whole numbers from 10 up (298, not 300), else two
    significant digits."""
    if _missing(x):
        return NA
    return f"{x:.0f}" if abs(x) >= 10 else sig(x, 2)
