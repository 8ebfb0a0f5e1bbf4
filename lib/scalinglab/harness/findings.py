"""Each notebook's headline findings, computed from its ``summary.json``, never typed by hand.

Long: four notebooks' findings, each one function that reads many summary keys into six sentences; they
share the key lookup, the number formatting and one registry, so they stay in one module.

One function per notebook takes that notebook's summary dict (``wb.summary``, or the JSON that
``Workbook.write_summary()`` wrote) and returns at most six :class:`Finding`\\ s: a number with its interval
where the summary has one, and one plain clause on what it means. Every number is read from the dict and
rounded to what the method resolves (2-3 significant digits), so a rerun updates the text with the
outputs. A key the summary lacks raises :class:`MissingSummaryKey` (a ``KeyError``) naming the notebook
and the key path; nothing is skipped silently. A value present but null (what the smoke profile writes
where it cannot estimate) renders as "n/a".

In a notebook::

    display(Markdown("*Computed at the end of this notebook.*"), display_id="findings")   # top cell
    ...
    wb.write_summary()
    update_display(Markdown(render_markdown(wb.name, wb.summary)), display_id="findings")

``python -m scalinglab.harness.results_page`` renders all four into ``docs/results.md``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

MAX_FINDINGS = 6
NA = "n/a"


@dataclass(frozen=True)
class Finding:
    """One bullet: a number (with its interval, where there is one) and what it means."""

    text: str

    def markdown(self) -> str:
        return f"- {self.text}"


class MissingSummaryKey(KeyError):
    """A key a notebook's findings need is not in its summary.json."""

    def __init__(self, notebook: str, path: Sequence[Any]):
        self.notebook = notebook
        self.path = tuple(path)
        super().__init__(self.message)

    @property
    def message(self) -> str:
        keys = " → ".join(repr(k) for k in self.path)
        return (f"{self.notebook}: summary.json has no {keys} "
                f"(rerun the notebook, or update scalinglab.harness.findings if the key was renamed)")

    def __str__(self) -> str:
        return self.message


class _Summary:
    """Key lookup that names the notebook and the full key path when something is missing."""

    def __init__(self, notebook: str, data: Mapping[str, Any], path: tuple = ()):
        self.notebook, self.data, self.path = notebook, data, path

    def __call__(self, *keys: Any) -> Any:
        node: Any = self.data
        for i, key in enumerate(keys):
            try:
                node = node[key]
            except (KeyError, IndexError, TypeError):
                raise MissingSummaryKey(self.notebook, self.path + keys[: i + 1]) from None
        return node

    def sub(self, *keys: Any) -> _Summary:
        return _Summary(self.notebook, self(*keys), self.path + keys)

    def row(self, key: str, **match: Any) -> dict:
        """The first record of the list at ``key`` whose fields equal ``match``."""
        for rec in self(key):
            if all(rec.get(k) == v for k, v in match.items()):
                return rec
        where = ", ".join(f"{k}={v!r}" for k, v in match.items())
        raise MissingSummaryKey(self.notebook, self.path + (key, f"[{where}]"))


# --- number formatting: what the methods resolve, not what the float holds ---------------------------

def _missing(x: Any) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def dec(x: float | None, places: int = 3, sign: bool = False) -> str:
    """Fixed decimals (exponents, differences): 0.514, +0.15; None -> 'n/a'."""
    if _missing(x):
        return NA
    if round(x, places) == 0:
        return f"{0:.{places}f}"
    s = f"{x:+.{places}f}" if sign else f"{x:.{places}f}"
    return s.replace("-", "−")


def sig(x: float | None, digits: int = 2) -> str:
    """Significant digits; large or tiny values as 7.4e10."""
    if _missing(x):
        return NA
    if x == 0:
        return "0"
    mag = math.floor(math.log10(abs(x)))
    if mag >= 5 or mag < -3:
        mant = f"{x / 10 ** mag:.{digits - 1}f}"
        return f"{mant}e{mag}".replace("-", "−")
    if mag >= digits:
        return f"{round(x, digits - 1 - mag):.0f}".replace("-", "−")
    return f"{x:.{max(digits - 1 - mag, 0)}f}".replace("-", "−")


def pct(x: float | None, places: int = 1, sign: bool = False) -> str:
    """A fraction as a percentage: 0.0661 -> '6.6%'."""
    return NA if _missing(x) else dec(100 * x, places, sign) + "%"


def pval(p: float | None) -> str:
    """p to one significant digit; below 0.001 only its order of magnitude (stable across machines)."""
    if _missing(p):
        return f"p {NA}"
    if p < 1e-3:
        return f"p < 1e{math.ceil(math.log10(p))}".replace("-", "−")
    return f"p = {sig(p, 1) if p < 0.01 else f'{p:.2f}'}"


def interval(ci: Sequence[float | None] | None, fmt: Callable[[Any], str] = dec, level: str = "95%") -> str:
    """'(95% 0.48–0.56)'; with a negative bound '(95% −0.09 to +0.65)'; None -> '(no interval)'."""
    if not ci or any(_missing(v) for v in ci):
        return "(no interval)"
    return f"({level} {_pair(fmt(ci[0]), fmt(ci[1]))})"


def _pair(lo: str, hi: str) -> str:
    """'0.48–0.56', '7.3–35%', or 'a to b' when a bound carries a sign."""
    if any(s[:1] in "+−-" for s in (lo, hi)):
        return f"{lo} to {hi}"
    if lo.endswith("%") and hi.endswith("%"):
        lo = lo[:-1]
    return f"{lo}–{hi}"


def diff(ours: float | None, theirs: float | None, places: int = 3) -> str:
    """Signed difference ours − theirs, e.g. '+0.062'."""
    if _missing(ours) or _missing(theirs):
        return NA
    return dec(ours - theirs, places, sign=True)


def _span(values: Sequence[float | None], fmt: Callable[[Any], str]) -> str:
    """'a to b' over the values (or one value if they round the same)."""
    vals = [v for v in values if not _missing(v)]
    if not vals:
        return NA
    lo, hi = fmt(min(vals)), fmt(max(vals))
    return lo if lo == hi else _pair(lo, hi)


def _cap(findings: list[Finding]) -> list[Finding]:
    assert len(findings) <= MAX_FINDINGS, f"{len(findings)} findings; at most {MAX_FINDINGS}"
    return findings


# --- 01: the Chinchilla fit ----------------------------------------------------------------------------

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
        f"Chinchilla was trained at 20, while Hoffmann's printed Approach 3 law would ask for {sig(hoff(tpp), 2)}."))

    trap = s.sub("mean_trap")
    a_mean = trap("mean", "beta") / (trap("mean", "alpha") + trap("mean", "beta"))
    excess = trap("mean", "objective") / trap("sum", "objective") - 1
    out.append(Finding(
        f"The loss-scale trap: L-BFGS-B on the Huber loss averaged over runs (Hoffmann's objective) stops early at "
        f"β = {dec(trap('mean', 'beta'), 2)} and a = {dec(a_mean, 2)}, an objective {pct(excess, 0)} above the "
        "optimum; "
        f"summed, the same search reaches β = {dec(trap('sum', 'beta'), 2)}, a = {dec(ours('a'), 2)}."))

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


# --- 02: Kaplan vs Hoffmann ----------------------------------------------------------------------------

PORIAN_STEPS = (
    ("kaplan_reproduction", "Kaplan's setup"),
    ("plus_head", "+ head"),
    ("plus_short_warmup", "+ short warmup"),
    ("plus_cosine", "+ matched cosine"),
    ("tuned_constant_lr", "+ tuning"),
)
PORIAN_DATASETS = {"rw": "RefinedWeb", "owt2": "OpenWebText2"}
SWEEP_ESTIMATORS = (("spline", "spline optima"), ("parabola", "parabolas"), ("envelope", "Approach 1"),
                    ("seeds", "seed bootstrap"), ("seeds_scatter", "seeds + scatter, GLS"))


def kaplan_vs_hoffmann(summary: Mapping[str, Any]) -> list[Finding]:
    s = _Summary("02_kaplan_vs_hoffmann", summary)
    out = []

    n_opt = s.sub("kaplan_vs_hoffmann_n_opt")
    low, top = min(n_opt.data, key=float), max(n_opt.data, key=float)
    k, h = n_opt(top, "kaplan"), n_opt(top, "hoffmann")

    def slope(law: str) -> float:
        return math.log(n_opt(top, law) / n_opt(low, law)) / math.log(float(top) / float(low))

    a_kaplan = slope("kaplan")
    out.append(Finding(
        f"At {sig(float(top), 1)} FLOP Kaplan's law (N_opt ∝ C^{dec(a_kaplan, 2)} from {sig(float(low), 1)} up) "
        "asks for "
        f"a model of {sig(k, 2)} parameters, {sig(k / h, 2)}× the {sig(h, 2)} of Hoffmann's "
        f"(∝ C^{dec(slope('hoffmann'), 2)}): the disagreement this notebook explains."))

    ps, pst = s.sub("pearce_song"), s.sub("pearce_song_total")
    out.append(Finding(
        "Pearce & Song's account: the Chinchilla law counted Kaplan's way (non-embedding N, C = 6·N·D) at "
        "Kaplan's small "
        f"scale gives a = {dec(ps('epoch'), 2)} with Epoch's coefficients and {dec(ps('hoffmann'), 2)} with "
        "Hoffmann's, "
        f"against {dec(pst('epoch'), 2)} and {dec(pst('hoffmann'), 2)} in total parameters: relabelling alone "
        "moves a by "
        f"{diff(ps('epoch'), pst('epoch'), 2)} / {diff(ps('hoffmann'), pst('hoffmann'), 2)}, to about Kaplan's "
        f"{dec(a_kaplan, 2)}."))

    real = s.sub("kaplan_counting_real")
    gem = real.sub("gemstones_approach1")
    hull = [(t, gem.sub(f"{t}/hull")) for t in ("hot", "cool-end", "hot to 350B")]
    gadre = real.sub("gadre_approach3_c4_eval")
    corpora = list(gadre.data)
    free = [gadre.sub(c, "Kaplan") for c in corpora]
    held = [gadre.sub(c, "Kaplan_e_held_at_total") for c in corpora]
    out.append(Finding(
        "Kaplan's counting on real runs (non-embedding N, C = 6·N·D) raises the Gemstones hull exponent by "
        + ", ".join(f"{dec(g('shift'), 2, sign=True)} {interval(g('shift_ci'), lambda v: dec(v, 2, sign=True))} on {t}"
                    for t, g in hull)
        + f"; on Gadre et al.'s runs by {_span([f('shift') for f in free], lambda v: dec(v, 2, sign=True))} with "
          "E free "
        f"(paired 95% intervals within {dec(min(f('shift_ci')[0] for f in free), 2, sign=True)} to "
        f"{dec(max(f('shift_ci')[1] for f in free), 2, sign=True)}) but "
        f"{_span([g('shift') for g in held], lambda v: dec(v, 2, sign=True))} with E held at the total-N fit's: "
        "the size "
        f"rides on a weakly determined E, and "
        + ("every shift is within what the Chinchilla law predicts for the same runs (measured − simulated covers 0)."
           if all(gap["ci"][0] <= 0 <= gap["ci"][1] for r in [g for _, g in hull] + free + held
                  for gap in r("measured_minus_simulated").values())
           else "some shifts differ from what the Chinchilla law predicts for the same runs.")))

    ours, ours_ci, pub = s.sub("porian_exponents"), s.sub("porian_exponent_ci"), s.sub("porian_published")
    gaps = [abs(ours(d, st) - pub(d, st, "a")) for d in PORIAN_DATASETS for st, _ in PORIAN_STEPS]
    out.append(Finding(
        "Porian et al.'s five steps from Kaplan's setup to Hoffmann's, recomputed from their isoFLOP points "
        "(RefinedWeb): "
        + " → ".join(f"{label} {dec(ours('rw', st))} {interval(ours_ci('rw', st))}" for st, label in PORIAN_STEPS)
        + f"; every step on both datasets is within {dec(max(gaps))} of the published exponent "
        f"(Kaplan's setup: ours {diff(ours('rw', 'kaplan_reproduction'), pub('rw', 'kaplan_reproduction', 'a'))} on "
        f"RefinedWeb, {diff(ours('owt2', 'kaplan_reproduction'), pub('owt2', 'kaplan_reproduction', 'a'))} on "
        "OpenWebText2)."))

    w = s.sub("warmup_gadre_grid")
    hinge = w.sub("fit_2000_steps")
    at = w.sub("penalty_2000_at")
    high = max(at.data, key=float)
    out.append(Finding(
        f"Warmup on Gadre et al.'s independent grid ({w('runs')} runs): a fixed 2000-step warmup costs "
        f"{dec(at(high, 'hinge', 'penalty'), 2)} nats {interval(at(high, 'hinge', 'ci'), lambda v: dec(v, 2))} when it "
        f"takes {pct(float(high), 1)} of training; the hinge puts the onset at {pct(hinge('knot'), 1)} "
        f"{interval(hinge('knot_ci'), lambda v: pct(v, 1))}, the first link of "
        f"Porian et al.'s warmup argument."))

    out.append(_sweeps_finding(s))
    return _cap(out)


def _sweeps_finding(s: _Summary) -> Finding:
    diffs = s.sub("sweeps_difference", "kaplan_minus_hoffmann")
    sweeps = s.sub("sweeps")
    spline = diffs.sub("spline")
    if _missing(spline("difference")):
        profile = sweeps("kaplan", "profile")
        return Finding(
            f"Our own sweeps ({profile} profile): no exponent, because these sweeps are too small to place an optimum "
            f"inside their sizes ({spline('reason') if 'reason' in spline.data else 'no estimate'}); "
            f"in this profile they are a plumbing check.")
    available = [(lab, diffs(key, "difference")) for key, lab in SWEEP_ESTIMATORS
                 if key in diffs.data and not _missing(diffs(key, "difference"))]
    targets_k = sweeps("kaplan", "porian_steps", "kaplan_reproduction")
    steps_h = sweeps("hoffmann", "porian_steps")
    porian_gap = [targets_k[d][0] - step[d][0] for step in steps_h.values() for d in targets_k]
    d_ours = spline("difference")
    return Finding(
        f"Our CPU sweeps: a_kaplan − a_hoffmann = {dec(spline('difference'), 2, sign=True)} "
        f"{interval(spline('ci'), lambda v: dec(v, 2, sign=True))} with spline optima "
        f"(a = {dec(sweeps('kaplan', 'exponent', 'a'), 2)} against {dec(sweeps('hoffmann', 'exponent', 'a'), 2)}), and "
        f"{_span([v for _, v in available], lambda v: dec(v, 2, sign=True))} over {len(available)} analyses: the "
        "direction "
        f"of Porian et al.'s gap for the same steps ({_span(porian_gap, lambda v: dec(v, 2))}) and "
        f"{_span([g - d_ours for g in porian_gap], lambda v: dec(v, 2))} smaller (spline), on models of at most ~1M "
        f"parameters, where the intervals are borderline.")


# --- 03: inverse scaling -------------------------------------------------------------------------------

def inverse_scaling(summary: Mapping[str, Any]) -> list[Finding]:
    s = _Summary("03_inverse_scaling", summary)
    out = []

    acc = s.sub("neqa_gpt3_accuracy")
    models = list(acc.data)
    recount = s.sub("neqa_gpt3_recount")
    matches = recount("matches_compiled_table")
    out.append(Finding(
        "NeQA on GPT-3, a recount of the prize pipeline's per-example outputs (no independent published source "
        "offline): accuracy " + ", ".join(f"{m} {dec(acc(m), 2)}" for m in models)
        + " (chance 0.50); " + ("equal to the table compiled from the same files" if matches
                                else "NOT equal to the table compiled from the same files")
        + ", and the largest model answers negated questions worse than chance."))

    t, own, tol = s.sub("neqa_gpt3_trend"), s.sub("neqa_gpt3_own_scale"), s.sub("neqa_gpt3_tolerable_scatter")
    out.append(Finding(
        f"NeQA's trend on GPT-3 is called {t('trend')} by the binomial GLM ({pval(t('p_trend'))}; slope "
        f"{dec(t('slope'), 2, sign=True)} in logit per decade of parameters), significant against sampling noise only: "
        f"with four models the test against between-model scatter has no power (F(2, {sig(own('df'), 1)}), "
        f"{pval(own('p_trend'))}), and the call holds as long as that scatter's sd is below "
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

    tasks, fam = s("tasks_available"), s.sub("family_evaluation")
    n_models = len({r["model"] for r in fam("results")})
    ok = sorted(k for k, v in tasks.items() if v == "ok")
    scored = (f"the family evaluation scored {n_models} models with the prize's scoring." if n_models
              else "no model was scored in this run (no trained checkpoints or hub models given); the prize scoring "
                   "is checked in the tests.")
    out.append(Finding(f"{len(ok)} of {len(tasks)} prize tasks available offline ({', '.join(ok) or 'none'}); "
                       + scored))
    return _cap(out)


# --- 04: extrapolation ---------------------------------------------------------------------------------

CORPORA = {"c4_original": "C4", "rpj": "RedPajama", "rw_original": "RefinedWeb"}


def extrapolation(summary: Mapping[str, Any]) -> list[Finding]:
    s = _Summary("04_extrapolation", summary)
    out = []

    m1 = s.sub("m_le_1")
    fits = [(CORPORA.get(k, k), m1.sub(k)) for k in m1.data]
    med = [f("heldout", "summary", "median_abs_rel_error") for _, f in fits]
    over = [f("by_kind", "over_trained", "mean_rel_error") for _, f in fits]
    all_below = all(f("by_kind", "over_trained", "all_below") for _, f in fits)
    inside = sum(f("heldout", "summary", "n_inside_interval") for _, f in fits)
    n_held = sum(f("heldout", "summary", "n") for _, f in fits)
    out.append(Finding(
        f"Fitted on the runs at ≤ 20 tokens per parameter (M ≤ 1) of Gadre et al.'s {len(fits)} corpora, the law "
        "misses "
        f"the held-out runs by a median {_span(med, lambda v: pct(v))}; "
        + ("every over-trained run is predicted too low" if all_below
           else "over-trained runs are predicted too low on average")
        + f" (mean {_span(over, lambda v: pct(v, sign=True))}), and only {inside} of {n_held} held-out runs fall "
          "inside "
        f"the fits' 95% intervals: the form extrapolated from this range is wrong, not merely uncertain."
        + _which_law(s)))

    rep = s.sub("paper_reproduction")
    paper, ours_rep = rep.sub("paper"), rep.sub("reproduced")
    targets = list(paper.data)
    hf = rep.row("table", fit="Hoffmann: log-Huber, free", **{"training set": "ours: M ≤ 1"})
    theirs = rep.row("table", fit="Gadre: curve_fit, α = β")

    def label(t: str) -> str:
        return t.replace(", ", " at ").replace("M=", "M = ")

    def ci_pct(ci: Sequence | None) -> str:
        return interval([v / 100 for v in ci] if ci and None not in ci else None, lambda v: pct(v, 0, sign=True))

    out.append(Finding(
        f"Gadre et al.'s procedure on their {theirs['runs']} runs reproduces their relative errors: "
        + ", ".join(f"{label(t)} {pct(ours_rep(t), 3)} (paper {pct(paper(t), 3)}, difference "
                    f"{diff(100 * ours_rep(t), 100 * paper(t), 3)} points)" for t in targets)
        + f"; Hoffmann's fit on our {hf['runs']} M ≤ 1 runs misses the same targets by "
        + ", ".join(f"{pct(hf[f'{t} %'] / 100, 1, sign=True)} {ci_pct(hf[f'{t} 95%'])}" for t in targets)
        + ": their training runs all sit at or beyond 20 tokens per parameter."))

    rows = s("training_range", "rows")
    first = [r for r in rows if r["training set"] == "M ≤ 1"]
    last_set = "M ≤ 8"
    last = [r for r in rows if r["training set"] == last_set]
    if not first or not last:
        raise MissingSummaryKey("04_extrapolation", ("training_range", "rows", "[training set='M ≤ 1' and 'M ≤ 8']"))
    out.append(Finding(
        f"Adding over-trained runs to the fit: the median error on a fixed target of over-trained and large runs falls "
        f"from {_span([r['median |err| %'] / 100 for r in first], pct)} (M ≤ 1) to "
        f"{_span([r['median |err| %'] / 100 for r in last], pct)} ({last_set}, 95% upper ends "
        f"{_span([r['median |err| 95%'][1] / 100 for r in last], pct)}), but a = β/(α+β) stays unresolved at "
        f"{last_set}: "
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
    free40 = few.row("subsets", variant="free", size=40)
    tied12 = few.row("subsets", variant="tied (α = β)", size=12)
    out.append(Finding(
        f"Few runs (random subsets of Epoch's {few('reference', 'n_rows')}): free fits on 12 runs put N_opt at "
        f"{sig(free12['n_opt_ratio_lo'], 2)}–{sig(free12['n_opt_ratio_hi'], 2)}× the all-runs value (16–84% of "
        "subsets), "
        f"{pct(free12['n_opt_within_2x'], 0)} within 2× (RMSE of ln N_opt {dec(free12['ln_n_opt_rmse'], 2)}; "
        f"{pct(free40['n_opt_within_2x'], 0)} and {dec(free40['ln_n_opt_rmse'], 2)} at 40 runs); tying α = β gives "
        f"{pct(tied12['n_opt_within_2x'], 0)} within 2× (RMSE {dec(tied12['ln_n_opt_rmse'], 2)}), because a = 0.5 is "
        f"nearly these runs' {dec(few('reference', 'a'), 3)}."))

    syn = few.sub("synthetic")
    st12 = syn.row("subsets", variant="tied (α = β)", size=12)
    sf12 = syn.row("subsets", variant="free", size=12)
    out.append(Finding(
        f"Where the tie is wrong (a synthetic law with a = {dec(syn('a'), 2)}), tied fits put N_opt at "
        f"{sig(st12['n_opt_ratio_median'], 2)}× the truth at 12 runs ({pct(st12['n_opt_within_2x'], 0)} within 2×; "
        f"{sig(syn('on_all_runs', 'tied (α = β)', 'n_opt_ratio'), 2)}× on all runs), while free fits are unbiased "
        f"(median {sig(sf12['n_opt_ratio_median'], 2)}×, {pct(sf12['n_opt_within_2x'], 0)} within 2×): "
        f"a constraint is a confident wrong answer when its assumption fails."))
    return _cap(out)


def _which_law(s: _Summary) -> str:
    """Section 6's answer as a sentence for the first bullet (empty in a summary from before that section): which
    registered form the RedPajama split ranks first, and whether the paired interval tells it from the next."""
    if "which_law" not in s.data:
        return ""
    w = s.sub("which_law")
    ranking = w("ranking")
    rows = {r["law"]: r for r in w("laws")}
    best, second = ranking[0], ranking[1]
    ci = rows[second]["vs_best"]["ci"]
    rmsle = ", ".join(f"{k} {dec(rows[k]['split_rmsle'], 3)}" for k in ranking)
    paired = f"paired bootstrap of the RMSLE difference {interval(ci, lambda v: dec(v, 3, sign=True))}"
    verdict = (f"but the {rows[best]['split_n']} held-out runs cannot tell it from {second} ({paired})"
               if ci[0] <= 0 else f"ahead of {second} ({paired})")
    return (f" Of {len(ranking)} registered forms fitted to the same RedPajama runs, {best} extrapolates best "
            f"(held-out RMSLE {rmsle}), {verdict}.")


FINDINGS: dict[str, Callable[[Mapping[str, Any]], list[Finding]]] = {
    "01_chinchilla_fit": chinchilla_fit,
    "02_kaplan_vs_hoffmann": kaplan_vs_hoffmann,
    "03_inverse_scaling": inverse_scaling,
    "04_extrapolation": extrapolation,
}


def findings(notebook: str, summary: Mapping[str, Any]) -> list[Finding]:
    """The findings of ``notebook`` (a key of :data:`FINDINGS`) from its summary dict."""
    try:
        fn = FINDINGS[notebook]
    except KeyError:
        raise KeyError(f"no findings for notebook {notebook!r}; known: {', '.join(FINDINGS)}") from None
    return fn(summary)


def render_markdown(notebook: str, summary: Mapping[str, Any]) -> str:
    """A '**Findings**' line and one Markdown bullet per finding (a note first in the smoke profile)."""
    lines = ["**Findings**", ""]
    if summary.get("profile") == "smoke":
        lines += ["*Smoke profile: fewer resamples and subset draws and tiny sweeps, so intervals and subset "
                  "statistics are rougher than the full run's (`make reproduce`).*", ""]
    lines += [f.markdown() for f in findings(notebook, summary)]
    return "\n".join(lines) + "\n"
