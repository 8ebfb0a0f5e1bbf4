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
    pval,
    sig,
)


def inverse_scaling(summary: Mapping[str, Any]) -> list[Finding]:
    s = _Summary("03_inverse_scaling", summary)
    return _cap([_neqa_gpt3(s), _obsscaling(s), _truthfulqa(s), _pythia(s), _ladder_finding(s), _probe_finding(s)])


def _signed(ci, level: str = "95%") -> str:
    return interval(ci, lambda v: dec(v, 2, sign=True), level)


def _neqa_gpt3(s: _Summary) -> Finding:
    """Section 2-3: GPT-3 on NeQA, the trend tested clustered by question."""
    acc = s.sub("neqa_gpt3_accuracy")
    c, tol = s.sub("neqa_gpt3_clustered"), s.sub("neqa_gpt3_tolerable_scatter")
    matches = s("neqa_gpt3_recount", "matches_compiled_table")
    return Finding(
        "NeQA on GPT-3, recounted from the prize pipeline's outputs"
        + ("" if matches else " (NOT equal to the table compiled from the same files)")
        + ": accuracy " + ", ".join(f"{m} {dec(acc(m), 2)}" for m in acc.data) + " (chance 0.50). Clustered by "
        f"question, the slope is {dec(c('slope'), 2, sign=True)} logit per decade "
        + _signed(c("ci"), f"95% over {c('n_items')} questions")[:-1]
        + f"; {pval(c('p_linear'))}): {c('trend')}. With {c('n_models')} models, this holds while the scatter "
        f"between models stays below sd {dec(tol('max_between_model_sd'), 3)}.")


def _obsscaling(s: _Summary) -> Finding:
    """ObsScaling: how many inverse calls survive FDR control with the between-model scale in the variance."""
    counts, inv = s.sub("obsscaling_counts"), s("obsscaling_inverse_fdr", "pooled")
    scales = s.sub("obsscaling_scale_range")
    by: dict[str, list[str]] = {}
    for h in inv:
        by.setdefault(h["benchmark"], []).append(h["family"])
    where = "; ".join(f"{b}: {', '.join(f)}" for b, f in sorted(by.items(), key=lambda kv: -len(kv[1])))
    fall = s("obsscaling_detectable_fall", "median_by_benchmark").values()
    return Finding(
        f"ObsScaling ({counts('models')} models, {counts('tested_families')} families, {len(counts('benchmarks'))} "
        f"benchmarks, {counts('tests')} tests), with the between-model scatter in the variance (scale pooled per "
        f"benchmark, up to {sig(scales('counts')[1], 3)}) and FDR control: {len(inv)} inverse calls survive"
        + (f" ({where})" if inv else "") + f"; {scales('positive_pooled_fdr')} pairs improve. With 80% power a "
        f"family's test detects only falls of {_span(list(fall), lambda v: sig(v, 2))} accuracy points per decade "
        "of compute.")


def _truthfulqa(s: _Summary) -> Finding:
    tq, tq_test = s.sub("truthfulqa_family_trends"), s.sub("truthfulqa_test")
    by: dict[str, list[str]] = {}
    for fam, rec in tq.data.items():
        by.setdefault(rec["pooled_fdr"], []).append(fam)
    inv = sorted(by.get("inverse", []))
    return Finding(
        f"TruthfulQA (MC2, a bounded score; quasi-binomial, scale {dec(tq_test('scale'), 2)} estimated on "
        f"{sig(tq_test('df'), 2)} df, FDR 0.05): {len(inv)} of {len(tq.data)} families get worse with compute "
        f"({', '.join(inv) or 'none'}), {len(by.get('positive', []))} improve, {len(by.get('flat', []))} show no "
        "detectable trend.")


def _pythia(s: _Summary) -> Finding:
    """Pythia: the calls after FDR control, and the smallest fall the tests could have detected."""
    py, py_fdr, pw = s.sub("pythia_trend_counts"), s.sub("pythia_trend_counts_fdr"), s.sub("pythia_power")
    suites = list(py_fdr.data)
    each = lambda key, table=py_fdr: " and ".join(str(table(x, key)) for x in suites)  # noqa: E731
    fdr = [m for m in pw("medians") if m["level"] == "FDR"]

    def worst(kind: str) -> str:  # the suite with less power: what neither suite could exclude
        return dec(max(m["points_per_decade"] for m in fdr if m["kind"] == kind), 1)

    return Finding(
        f"Pythia ({' and '.join(suites)}, {pw('benchmarks')} zero-shot benchmarks, {pw('mmlu_subjects')} of them MMLU "
        f"subjects near chance, {'no' if not pw('prize_tasks') else 'some'} prize task): after FDR control "
        f"{each('inverse')} inverse ({each('inverse', py)} before), {each('positive')} positive. These tests detect, "
        f"with {pw('power'):.0%} power, only falls of about {worst('MMLU subjects')} accuracy points per decade of "
        f"parameters (median MMLU subject) or {worst('other benchmarks')} (other benchmarks).")


def _probe_finding(s: _Summary) -> Finding:
    """Notebook 03 section 4: the memorised-phrase probes built from the ladder's own training text."""
    rows = s("ladder_probes")
    top = max(r["compute"] for r in rows)
    largest = {r["bin"]: r for r in rows if r["compute"] == top}
    b3 = s("ladder_probe_interaction", "interaction")
    lo, hi = b3["ci"]
    # The count is the phrase's count in the whole counted text; a model trains on D tokens of it, and D grows with
    # size, so a larger model also met each phrase more often: b3 mixes pull per exposure with exposures.
    seen = [m["tokens"] for m in s("ladder", "models")]
    verdict = ("larger models prefer memorised endings more on frequent phrases, but also saw each more often "
               f"({_span(seen, lambda v: f'{v / 1e6:.1f}M')} training tokens)"
               if hi < 0
               else "larger models prefer memorised continuations less" if lo > 0 else
               "the ladder cannot tell whether frequency changes how accuracy scales")
    never, common = largest["never"], largest["very_common"]
    two = lambda r, level="95%": interval((r["ci_low"], r["ci_high"]), lambda v: dec(v, 2), level)  # noqa: E731
    return Finding(
        f"Own-text probes ({never['n']} phrases per training-count bin): the largest "
        f"model picks the asked-for word on {dec(never['accuracy'], 2)} {two(never, '95% over phrases')} "
        f"of never-seen phrases, {dec(common['accuracy'], 2)} {two(common)} of very common ones. "
        f"Compute × count interaction {dec(b3['coef'], 2, sign=True)} "
        + _signed((lo, hi), "95%, clustered by item,") + f": {verdict}.")


def _ladder_finding(s: _Summary) -> Finding:
    """Notebook 03 section 4: our own trained ladder on the prize's tasks, tested clustered by item."""
    models = s("ladder", "models")
    calls = {r["group"]: r for r in s("ladder_prize_clustered")}
    prize = s("ladder_prize")

    def accs(name: str) -> str:
        return _span([r["accuracy"] for r in prize if r["task"] == name], lambda v: dec(v, 2))

    same = min(s("ladder_neqa_same_letter").values())
    neqa = (f"NeQA {accs('neqa')}, "
            + ("every model giving the same letter to every question, so NeQA is beyond models this small"
               if same == 1 else f"each model giving one letter to at least {same:.0%} of the questions"
               if same >= 0.9 else _call(calls["neqa"])))
    memo = calls["memo-trap"]
    n_std = [m["n_standard"] for m in models]
    return Finding(
        f"Our own ladder, {len(models)} GPTs trained on Gutenberg ({sig(min(n_std))} to {sig(max(n_std))} parameters, "
        f"one seed each), scored as the prize does: {neqa}; Memo Trap {accs('memo-trap')}, {_call(memo)}.")


def _call(r: Mapping[str, Any]) -> str:
    if r["trend"] == "insufficient":
        return "too few models to test"
    if r.get("note", "").startswith("no item"):
        return "flat (no item's answer changes between models)"
    return (f"{r['trend']} clustered by item (slope {dec(r['slope'], 2, sign=True)} logit per decade, "
            + _signed(r["ci"], f"95% over {r['n_items']} items")[1:])
