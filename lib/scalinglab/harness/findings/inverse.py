"""Notebook 03's findings: inverse scaling."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scalinglab.harness.findings.format import (
    Finding,
    _cap,
    _span,
    _Summary,
    dec,
    interval,
    pct,
    pval,
    sig,
)


def inverse_scaling(summary: Mapping[str, Any]) -> list[Finding]:
    s = _Summary("03_inverse_scaling", summary)
    out = []

    acc = s.sub("neqa_gpt3_accuracy")
    models = list(acc.data)
    recount = s.sub("neqa_gpt3_recount")
    matches = recount("matches_compiled_table")
    t, own, tol = s.sub("neqa_gpt3_trend"), s.sub("neqa_gpt3_own_scale"), s.sub("neqa_gpt3_tolerable_scatter")
    out.append(Finding(
        "NeQA on GPT-3, a recount of the prize pipeline's per-example outputs (no independent published source "
        "offline; " + ("equal to the table compiled from the same files" if matches
                       else "NOT equal to the table compiled from the same files")
        + "): accuracy " + ", ".join(f"{m} {dec(acc(m), 2)}" for m in models)
        + f" (chance 0.50), called {t('trend')} by the binomial GLM ({pval(t('p_trend'))}; slope "
        f"{dec(t('slope'), 2, sign=True)} logit per decade). That is significant against sampling noise only: with "
        f"four models the test against between-model scatter has no power (F(2, {sig(own('df'), 1)}), "
        f"{pval(own('p_trend'))}), and the call holds while that scatter's sd is below "
        f"{dec(tol('max_between_model_sd'), 3)} in accuracy."))

    counts, disp = s.sub("obsscaling_counts"), s.sub("obsscaling_pooled_dispersion")
    benches = counts("benchmarks")
    tot = {k: sum(disp(b, k) for b in benches) for k in ("binomial_fdr", "pooled_fdr", "pooled_no_stablelm_fdr")}
    out.append(Finding(
        f"ObsScaling: {counts('models')} models in {counts('families')} families, {counts('tested_families')} families "
        f"tested on {len(benches)} benchmarks ({counts('tests')} tests). Trends that survive FDR control: "
        f"{tot['binomial_fdr']} with binomial errors, {tot['pooled_fdr']} with the pooled between-model scale, "
        f"{tot['pooled_no_stablelm_fdr']} with the mixed-recipe StableLM family left out of the scale."))

    tq, tq_test = s.sub("truthfulqa_family_trends"), s.sub("truthfulqa_test")
    by = {}
    for fam, rec in tq.data.items():
        by.setdefault(rec["pooled_fdr"], []).append(fam)
    lost = [f for f, r in tq.data.items() if r["binomial"] == "inverse" and r["pooled_fdr"] != "inverse"]
    inv = sorted(by.get("inverse", []))
    out.append(Finding(
        f"TruthfulQA, an MC2 score (not a count), tested by a quasi-binomial GLM with the pooled scale estimated "
        f"({dec(tq_test('scale'), 2)} on {sig(tq_test('df'), 2)} df, F tests) and FDR control: {len(inv)} of "
        f"{len(tq.data)} families get worse with compute ({', '.join(inv) or 'none'}), {len(by.get('positive', []))} "
        f"improve, {len(by.get('flat', []))} show no detectable trend"
        + (f"; {', '.join(lost)}'s inverse call does not survive FDR control." if lost else ".")))

    py, py_fdr = s.sub("pythia_trend_counts"), s.sub("pythia_trend_counts_fdr")
    suites = list(py_fdr.data)
    n_bench = {x: sum(py_fdr(x).values()) for x in suites}
    n_desc = (f"{n_bench[suites[0]]} zero-shot benchmarks per suite" if len(set(n_bench.values())) == 1
              else ", ".join(f"{n_bench[x]} in {x}" for x in suites))
    each = lambda key, table=py_fdr: " and ".join(str(table(x, key)) for x in suites)  # noqa: E731
    inv_fdr = sum(py_fdr(x, "inverse") for x in suites)
    out.append(Finding(
        f"Pythia ({' and '.join(suites)}, {n_desc}): after FDR control {each('inverse')} inverse "
        f"({each('inverse', py)} before), {each('curved')} curved, {each('positive')} positive, the rest flat: "
        + ("on one family trained on one dataset, nothing scales inversely." if inv_fdr == 0
           else "some benchmarks scale inversely even on one family trained on one dataset.")))

    out.append(_ladder_finding(s))
    out.append(_probe_finding(s))
    return _cap(out)


def _probe_finding(s: _Summary) -> Finding:
    """Notebook 03 section 4: the memorised-phrase trap built from the ladder's own training text."""
    rows = s("ladder_probes")
    top = max(r["compute"] for r in rows)
    largest = {r["bin"]: r for r in rows if r["compute"] == top}
    b3 = s("ladder_probe_interaction", "interaction")
    lo, hi = b3["ci"]
    verdict = ("larger models lose more on frequent phrases, the trap's mechanism" if hi < 0 else
               "larger models gain more on frequent phrases" if lo > 0 else
               "the ladder cannot tell whether frequency changes how accuracy scales")
    return Finding(
        f"Memorised-phrase probes from the ladder's own training text ({largest['never']['n']} phrases per bin of "
        f"training count): the largest model answers the asked-for word on {dec(largest['never']['accuracy'], 2)} "
        f"{interval((largest['never']['ci_low'], largest['never']['ci_high']), lambda v: dec(v, 2))} of never-seen "
        f"phrases and {dec(largest['very_common']['accuracy'], 2)} "
        f"{interval((largest['very_common']['ci_low'], largest['very_common']['ci_high']), lambda v: dec(v, 2))} "
        f"of very common ones; the compute-by-frequency interaction is {dec(b3['coef'], 2, sign=True)} "
        f"{interval((lo, hi), lambda v: dec(v, 2, sign=True))}: {verdict}.")


def _ladder_finding(s: _Summary) -> Finding:
    """Notebook 03 section 4: our own trained ladder on the prize's tasks."""
    models = s("ladder", "models")
    calls = {r["group"]: r for r in s("ladder_prize_trends")}
    prize = s("ladder_prize")

    def task(name: str) -> str:
        accs = [r["accuracy"] for r in prize if r["task"] == name]
        r = calls[name]
        call = ("too few models to test" if r["trend"] == "insufficient"
                else f"called {r['trend']} ({pval(r['p_trend'])})")
        return f"{_span(accs, lambda v: dec(v, 2))}, {call}"

    gap = s("ladder_neqa_negated_minus_plain")[-1]
    same = min(s("ladder_neqa_same_letter").values())
    letters = ("every model gives the same letter to every question" if same == 1 else
               f"every model gives one letter to at least {pct(same, 0)} of the questions")
    neqa = task("neqa") + (f", but {letters}, so NeQA is beyond models this small" if same >= 0.9 else "")
    n_std = [m["n_standard"] for m in models]
    c = [m["compute"] for m in models]
    return Finding(
        f"Our own ladder, {len(models)} GPTs trained on Gutenberg ({sig(min(n_std))} to {sig(max(n_std))} parameters, "
        f"{sig(min(c))} to {sig(max(c))} FLOP), scored with the prize's method: NeQA accuracy {neqa}; Memo "
        f"Trap {task('memo-trap')}; negated minus plain NeQA questions on the largest model "
        f"{dec(gap['difference'], 2, sign=True)} "
        f"{interval((gap['ci_low'], gap['ci_high']), lambda v: dec(v, 2, sign=True))}.")
