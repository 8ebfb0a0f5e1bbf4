"""The findings bullets and docs/results.md, from summary dicts with known answers.

tests/data/findings_summaries.json holds, per notebook, only the summary.json keys the findings read,
taken from a full-profile run (floats to 6 significant digits).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from scalinglab.harness import findings as F
from scalinglab.harness import results_page as R

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = json.loads((Path(__file__).parent / "data" / "findings_summaries.json").read_text())


def bullets(notebook: str, summary: dict | None = None) -> list[str]:
    md = F.render_markdown(notebook, FIXTURE[notebook] if summary is None else summary)
    return [line for line in md.splitlines() if line.startswith("- ")]


def text(notebook: str, summary: dict | None = None) -> str:
    return "\n".join(bullets(notebook, summary))


def test_registry_covers_the_notebooks():
    names = sorted(p.stem for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    assert sorted(F.FINDINGS) == names


@pytest.mark.parametrize("notebook", list(F.FINDINGS))
def test_heading_and_at_most_six_bullets(notebook):
    md = F.render_markdown(notebook, FIXTURE[notebook])
    assert md.splitlines()[0] == "**Findings**"
    found = F.FINDINGS[notebook](FIXTURE[notebook])
    assert 1 <= len(found) <= F.MAX_FINDINGS
    assert all(isinstance(f, F.Finding) and f.markdown() == f"- {f.text}" for f in found)
    assert len(bullets(notebook)) == len(found)
    assert "nan" not in md and "None" not in md


def test_chinchilla_fit_known_answers():
    t = text("01_chinchilla_fit")
    assert "240 runs" in t
    assert "α = 0.347 (95% 0.316–0.372), β = 0.367 (95% 0.334–0.416), bootstrap over runs" in t
    assert "−0.03 SE (α) and +0.07 SE (β) from ours, the same fit" in t   # (0.34731 − 0.3478) / 0.01491
    assert "a = 0.514 (95% 0.482–0.558), bootstrap over runs" in t
    assert "Hoffmann's printed Approach 3 implies 0.452" in t
    # p = 2.8e-62 and 5.7e-48 print as the notebook's floor, not as the normal approximation's tail value.
    assert "reject his printed and unrounded sets (χ² = 298 and 231, 5 df, p < 1e−10)" in t
    assert "1e−47" not in t and "1e−61" not in t
    # Not rejecting Epoch's set is reported with what the test could have detected: 3.58 SE of a = 0.0698.
    assert "not Epoch's (χ² = 0.62, p = 0.99; a shift of 0.07 in a is detected with 80% power)" in t
    assert "17.9 tokens per parameter (95% 7.3–35), bootstrap over runs" in t and "Epoch's fit gives 18.4" in t
    # §8: δ, extractions and 10 dropped span 14.2 (least squares) to 19.9; all 245 rows give 6.80.
    assert "outlier drops give 14–20; keeping all 245 rows gives 6.8." in t
    # The trap moves β (0.367 → 0.311) and a towards Hoffmann's 0.28 and 0.452, α (0.347 → 0.380) away from 0.34.
    assert "β 0.37 → 0.31 and a 0.51 → 0.45 move towards his values, α 0.35 → 0.38 away" in t
    # §10: 586,120 and 157,202 runs at his width, 146,530 and 39,300.6 at the widest his rounding allows: the two
    # procedures compared at the same width, each width named.
    assert ("would need 590,000 runs at our bootstrap's width, 160,000 by his procedure (at 0.002, his rounding's "
            "widest: 150,000 and 39,000); he had ~400.") in t
    assert "a = 0.507 (95% 0.455–0.559), t interval over the budgets' optima" in t and "(ours +0.017)" in t
    assert "below −0.035 or above +0.069 are excluded" in t        # 0.4546 − 0.49 and 0.5590 − 0.49
    assert "a = 0.5970, is reproduced (difference 0.0000)" in t
    assert "a = 0.60 (95% 0.55–0.62), bootstrap over runs, against their 0.50" in t
    # The tables differ in start and density: both reported, neither named the sole cause.
    assert "a later start moves a to 0.81; fewer checkpoints, to 0.60–0.62." in t and "sets this exponent" not in t


def test_chinchilla_fit_bullets_are_short_and_say_when_a_test_does_not_reject():
    # At most ~60 words a bullet (hedges live in the notebook's Caveats).
    assert all(len(b.split()) <= 62 for b in bullets("01_chinchilla_fit"))
    s = copy.deepcopy(FIXTURE["01_chinchilla_fit"])
    s["hoffmann_test"]["epoch_reported"]["p"] = 0.01      # Epoch's set rejected too
    s["hoffmann_test"]["hoffmann_printed"]["p"] = 0.2     # and Hoffmann's not: the verbs follow the p-values
    s["hoffmann_test"]["hoffmann_unrounded"]["p"] = 0.3
    t = text("01_chinchilla_fit", s)
    assert "do not reject his printed and unrounded sets" in t and "p = 0.30" in t
    assert "Epoch's too (χ² = 0.62, p = 0.01" in t


def test_kaplan_vs_hoffmann_known_answers():
    t = text("02_kaplan_vs_hoffmann")
    assert "N_opt ∝ C^0.73 from 1e21 up" in t and "6.5e12 parameters, 43×" in t and "C^0.46" in t
    assert "a = 0.78 with Epoch's coefficients and 0.74" in t and "+0.27 / +0.28" in t
    # Gemstones hull shifts +0.054, +0.057, +0.071, their 95% intervals within +0.03 to +0.10; Gadre et al.'s Kaplan
    # count with E free, whose fit ends at E = 0 on RedPajama and RefinedWeb (status at_bound)
    assert "hull exponent by +0.05 to +0.07 (95% +0.03 to +0.10, runs resampled)" in t
    assert "+0.25 to +0.27 with E free (at its bound 0 on RedPajama, RefinedWeb), +0.05 to +0.08 with E held" in t
    # 30 measured − simulated intervals, all across 0, 0.07 to 0.79 wide: 0.71 × those widths is 0.05 to 0.56
    assert "All 30 gaps from the Chinchilla law's prediction cover 0, but only gaps of 0.05–0.56 or more" in t
    assert "Kaplan's setup 0.837 (95% 0.814–0.860)" in t and "+ tuning 0.497 (95% 0.479–0.515)" in t
    assert "within 0.002 of the published exponent" in t
    assert "0.26 nats (95% 0.24–0.30, shapes resampled) when it takes 14.6% of training" in t
    assert "9.4% (95% 9.0–9.8%) as a hinge, 6.9% (95% 6.2–8.3%) as a smooth onset" in t
    # the ladder, 3 seeds: a0 0.539 [0.388, 0.799] against Porian et al.'s 0.835; a0 − a4 0.224 [−0.043, +0.529]
    # against their 0.835 − 0.497 on RefinedWeb; Δa −0.082, −0.030, +0.030, −0.142, every interval across 0
    assert "Our CPU ladder starts at a = 0.54 (95% 0.39–0.80, shapes resampled), not Porian et al.'s 0.835" in t
    assert "falls +0.22 (95% −0.04 to +0.53) by step 4 against their 0.34, no single step resolved" in t
    # the two presets with whole shapes resampled in each sweep, against Porian et al.'s gap for the same steps
    assert "Our presets differ by +0.15 (95% −0.22 to +0.58, shapes resampled) against their 0.26–0.35; " \
           "detectable: 0.57 or more." in t


def test_kaplan_vs_hoffmann_bullets_are_short():
    # at most about 60 words a bullet: one answer per question, hedges in the notebook's Caveats
    for b in bullets("02_kaplan_vs_hoffmann"):
        assert len(b[2:].split()) <= 62, b


def test_ladder_counts_resolved_steps_and_missing_fits():
    s = copy.deepcopy(FIXTURE["02_kaplan_vs_hoffmann"])
    steps = s["ladder"]["steps"]
    steps[4]["delta"]["ci"] = [-0.3, -0.05]                 # step 4's fall now excludes 0
    assert "by step 4 against their 0.34, 1 of 4 steps resolved." in text("02_kaplan_vs_hoffmann", s)
    for st in steps[1:4]:                                  # steps 1-3 without a fit: the ends remain
        st["a"], st["delta"] = None, None
    steps[4]["delta"] = None
    s["ladder"]["total"].update(a_first_minus_last=None, ci=None)
    t = text("02_kaplan_vs_hoffmann", s)
    assert "starts at a = 0.54 (95% 0.39–0.80, shapes resampled), not Porian et al.'s 0.835. Our presets" in t
    assert "falls" not in t and "resolved" not in t


def test_counting_says_where_e_is_at_its_bound_and_which_gaps_exclude_0():
    s = copy.deepcopy(FIXTURE["02_kaplan_vs_hoffmann"])
    gadre = s["kaplan_counting_real"]["gadre_approach3_c4_eval"]
    for corpus in gadre.values():
        corpus["Kaplan"]["status"] = "ok"
    gadre["C4"]["standard"]["measured_minus_simulated"]["epoch"]["ci"] = [0.01, 0.05]
    t = text("02_kaplan_vs_hoffmann", s)
    assert "with E free, +0.05" in t and "at its bound" not in t
    assert "1 of 30 gaps from the Chinchilla law's prediction exclude 0" in t


def test_inverse_scaling_known_answers():
    t = text("03_inverse_scaling")
    assert "ada 0.54, babbage 0.46, curie 0.49, davinci 0.38" in t and "recounted from the prize pipeline" in t
    assert "NOT equal" not in t
    # the headline NeQA test is clustered by question: slope -0.205, 95% -0.314 to -0.097, p 0.0002
    assert "Clustered by question, the slope is −0.21 logit per decade (95% over 300 questions −0.31 to −0.10; " \
           "p < 1e−3): inverse" in t and "below sd 0.030" in t
    # ObsScaling leads with the dispersion-corrected count of inverse calls, not the binomial 138
    assert "123 models, 23 families, 7 benchmarks, 158 tests" in t and "up to 137" in t
    assert "80 pairs improve. With 80% power a family's test detects only falls of 5.6–18 accuracy points" in t
    assert "5 inverse calls survive (TruthfulQA: Cerebras-GPT, GPT-Neo/J, OPT, Pythia; GSM8K: StableLM)" in t
    assert "138" not in t and "binomial errors" not in t
    assert "(0.93 on 28 df" not in t and "scale 0.93 estimated on 28 df" in t
    assert "4 of 23 families" in t and "(Cerebras-GPT, GPT-Neo/J, OPT, Pythia), 7 improve, 12" in t
    # Pythia: the null result with its power (FDR threshold, the weaker suite)
    assert "57 of them MMLU subjects near chance, no prize task" in t and "0 and 0 inverse (1 and 0 before)" in t
    assert "only falls of about 5.8 accuracy points per decade of parameters (median MMLU subject) or 2.2" in t
    assert "nothing scales inversely" not in t
    # our own ladder: one seed per size, NeQA out of reach, Memo Trap flat clustered by item
    assert "Our own ladder, 6 GPTs trained on Gutenberg" in t and "one seed each" in t
    assert "every model giving the same letter to every question, so NeQA is beyond models this small" in t
    assert "Memo Trap 0.57–0.60, flat clustered by item (slope +0.02 logit per decade, 95% over 936 items " \
           "−0.04 to +0.08)" in t
    assert "0.53 (95% over phrases 0.47–0.59) of never-seen phrases, 0.08 (95% 0.05–0.12) of very common" in t
    assert "interaction −0.42 (95%, clustered by item, −0.61 to −0.23): larger models prefer memorised" in t
    # The count is in the whole text; each model trained on part of it (1.3M to 9M tokens): exposure confounds it.
    assert "frequent phrases, but also saw each more often (1.3M–9.0M training tokens)" in t
    assert "mechanism" not in t


def test_inverse_scaling_bullets_are_short():
    # at most about 60 words a bullet; hedges live in the notebook's Caveats
    for b in bullets("03_inverse_scaling"):
        assert len(b.split()) <= 62, b


def test_inverse_scaling_says_a_failed_recount_and_what_the_ladder_cannot_tell():
    s = copy.deepcopy(FIXTURE["03_inverse_scaling"])
    s["neqa_gpt3_recount"]["matches_compiled_table"] = False
    s["ladder_probe_interaction"]["interaction"]["ci"] = [-0.1, 0.2]
    s["ladder_neqa_same_letter"] = {m: 0.6 for m in s["ladder_neqa_same_letter"]}
    s["obsscaling_inverse_fdr"]["pooled"] = []
    t = text("03_inverse_scaling", s)
    assert "NOT equal to the table compiled from the same files" in t
    assert "the ladder cannot tell whether frequency changes how accuracy scales" in t
    assert "same letter" not in t and "beyond models this small" not in t
    # NeQA's own call is then given, from the clustered test (no item changes its answer: flat, said so)
    assert "NeQA 0.46, flat (no item's answer changes between models)" in t
    assert "FDR control: 0 inverse calls survive;" in t


def test_extrapolation_known_answers():
    t = text("04_extrapolation")
    assert ("all 62 over-trained runs too low (mean −11.5% to −8.0% by corpus; in all 15 model sizes): "
            "the form is biased beyond this range") in t
    # 17 + 21 + 16 of 22 + 23 + 23 inside the new-run intervals: 54 of 68, under 90%, misses of one sign. The runs
    # are counted as runs and said not to be a coverage rate.
    assert "New-run 95% intervals hold 54 of 68 held-out runs, a count of runs, not of independent units." in t
    assert "1.4B at M = 32 0.710%, paper 0.710%" in t
    assert "−19.5% (95% over training runs: −34% to +3%) and −3.9% (95% −20% to +5%)" in t
    assert "from 11.5–17.9% (M ≤ 1) to 1.0–2.0% (M ≤ 8" in t and "C4 0.49 (95% 0.22–0.76)" in t
    assert "too low by 2.0–5.1%" in t and "−1.0% to +0.7%" in t and "none of the 16" in t
    assert "0.42–2.6× the all-runs value" in t and "48% within 2×" in t
    assert "tied fits land at 0.24× the truth, free fits at 1.00×" in t


def test_extrapolation_bullets_are_short():
    # At most ~60 words a bullet: one answer with its interval; hedges live in the notebook's Caveats.
    words = [len(b[2:].split()) for b in bullets("04_extrapolation")]   # without the "- "
    assert max(words) <= 60, words


def test_extrapolation_verdict_follows_the_new_run_coverage():
    """54 of 68 inside 95% intervals is far short (under 90%): biased. With 66 of 68 inside, the verdict is that
    the misses are within what the intervals allow, and a summary without the new-run intervals still
    renders, on the mean law's count."""
    s = copy.deepcopy(FIXTURE["04_extrapolation"])
    for k, n in zip(s["m_le_1"], (22, 22, 22)):
        s["m_le_1"][k]["heldout"]["summary"]["n_inside_new_run_interval"] = n
    t = text("04_extrapolation", s)
    assert "hold 66 of 68" in t and "within what parameter uncertainty and run noise allow" in t
    for k in s["m_le_1"]:
        del s["m_le_1"][k]["heldout"]["summary"]["n_inside_new_run_interval"]
    assert "Only 28 of 68 held-out runs fall inside the fits' 95% intervals" in text("04_extrapolation", s)


def test_extrapolation_counts_the_sign_by_model_size():
    s = copy.deepcopy(FIXTURE["04_extrapolation"])
    over = s["m_le_1"]["rpj"]["by_kind"]["over_trained"]
    over.update(all_below=False, sizes_all_below=4)   # one size with a run above its actual loss
    t = text("04_extrapolation", s)
    assert "too low on average (mean −11.5% to −8.0% by corpus; all of them in 14 of 15 model sizes)" in t


def test_extrapolation_names_the_form_that_extrapolates_best():
    t = text("04_extrapolation")
    assert "kaplan extrapolates best (held-out RMSLE kaplan 0.081, chinchilla 0.110, gadre 0.117)" in t
    # The interval resamples the 6 model sizes the 23 held-out runs come from, and says what it could detect:
    # (1.96 + 0.84) · (0.0625 + 0.0155) / (2 · 1.96) = 0.056.
    assert ("cannot tell it from chinchilla (RMSLE difference 95% over 6 model sizes: −0.016 to +0.062; it would "
            "detect a difference of 0.056 with 80% power)") in t
    s = copy.deepcopy(FIXTURE["04_extrapolation"])
    s["which_law"]["laws"][0]["vs_best"]["ci"] = [0.004, 0.059]   # an interval above 0: the data tell them apart
    t = text("04_extrapolation", s)
    assert "ahead of chinchilla (RMSLE difference 95% over 6 model sizes: +0.004 to +0.059)" in t
    assert "80% power" not in t
    del s["which_law"]  # a summary without section 6: five bullets
    assert "registered forms" not in text("04_extrapolation", s)
    assert len(bullets("04_extrapolation", s)) == 5


def test_numbers_follow_the_summary():
    s = copy.deepcopy(FIXTURE["01_chinchilla_fit"])
    s["fits"]["ours"]["a"] = 0.6
    s["bootstrap"]["ci"]["a"] = [0.55, 0.65]
    assert "a = 0.600 (95% 0.550–0.650)" in text("01_chinchilla_fit", s)


MISSING = [
    ("01_chinchilla_fit", ["fits", "ours", "a"]),
    ("01_chinchilla_fit", ["bootstrap", "tokens_per_param_ci"]),
    ("02_kaplan_vs_hoffmann", ["porian_published", "rw", "plus_head"]),
    ("02_kaplan_vs_hoffmann", ["sweeps_difference"]),
    ("02_kaplan_vs_hoffmann", ["ladder", "total"]),
    ("02_kaplan_vs_hoffmann", ["sweeps_difference", "kaplan_minus_hoffmann", "block"]),
    ("02_kaplan_vs_hoffmann", ["warmup_gadre_grid", "fit_2000_steps_quadratic"]),
    ("02_kaplan_vs_hoffmann", ["kaplan_counting_real", "gemstones_approach1", "hot/grid", "measured_minus_simulated",
                               "epoch", "detectable"]),
    ("03_inverse_scaling", ["obsscaling_counts", "tests"]),
    ("04_extrapolation", ["few_runs", "synthetic", "a"]),
]


@pytest.mark.parametrize("notebook, path", MISSING)
def test_missing_key_names_notebook_and_key(notebook, path):
    s = copy.deepcopy(FIXTURE[notebook])
    node = s
    for k in path[:-1]:
        node = node[k]
    del node[path[-1]]
    with pytest.raises(KeyError) as err:
        F.render_markdown(notebook, s)
    assert isinstance(err.value, F.MissingSummaryKey)
    msg = str(err.value)
    assert notebook in msg and repr(path[-1]) in msg
    assert err.value.path[: len(path)] == tuple(path)


def test_missing_row_names_the_row():
    s = copy.deepcopy(FIXTURE["04_extrapolation"])
    s["few_runs"]["subsets"] = [r for r in s["few_runs"]["subsets"] if r.get("size") != 12]
    with pytest.raises(KeyError, match=r"04_extrapolation.*'subsets'.*size=12"):
        F.extrapolation(s)


def test_unknown_notebook():
    with pytest.raises(KeyError, match="05_nothing"):
        F.render_markdown("05_nothing", {})


def test_smoke_sweeps_say_plumbing_not_na():
    s = copy.deepcopy(FIXTURE["02_kaplan_vs_hoffmann"])
    s["profile"] = "smoke"
    s["sweeps"]["kaplan"]["profile"] = "smoke"
    s["sweeps_difference"]["kaplan_minus_hoffmann"]["block"] = {"difference": None, "reason": "too_few_budgets"}
    md = F.render_markdown("02_kaplan_vs_hoffmann", s)
    assert "*Smoke profile" in md
    sweep = [b for b in bullets("02_kaplan_vs_hoffmann", s) if "sweeps" in b][-1]
    assert "plumbing check" in sweep and "too_few_budgets" in sweep and "n/a" not in sweep


def test_formatters():
    assert F.dec(0.51389) == "0.514" and F.dec(0.0623, 2, sign=True) == "+0.06"
    assert F.dec(-0.00001, 4, sign=True) == "0.0000"                      # no "−0.0000"
    assert F.dec(None) == "n/a" and F.dec(float("nan")) == "n/a"
    assert F.sig(6.46083e12) == "6.5e12" and F.sig(297.89) == "300" and F.sig(17.91, 3) == "17.9"
    assert F.sig(7.3259) == "7.3" and F.sig(35.437) == "35"
    assert F.pct(0.06614) == "6.6%" and F.pct(-0.115, sign=True) == "−11.5%"
    assert F.pval(0.4330) == "p = 0.43" and F.pval(0.00175) == "p = 0.002" and F.pval(2.8e-62) == "p < 1e−61"
    assert F.interval([0.48184, 0.55806]) == "(95% 0.482–0.558)"
    assert F.interval([-0.0892, 0.6473], lambda v: F.dec(v, 2, sign=True)) == "(95% −0.09 to +0.65)"
    assert F.interval([None, None]) == "(no interval)" and F.interval(None) == "(no interval)"
    assert F.diff(0.5139, 0.4516) == "+0.062" and F.diff(None, 1.0) == "n/a"


def write_results(tmp_path: Path, skip: tuple[str, ...] = ()) -> Path:
    results = tmp_path / "results"
    for name, summary in FIXTURE.items():
        if name not in skip:
            (results / name).mkdir(parents=True)
            (results / name / "summary.json").write_text(json.dumps(summary))
    return results


def test_results_page_lists_every_notebook(tmp_path):
    out = tmp_path / "docs" / "results.md"
    assert R.main([str(write_results(tmp_path)), str(out)]) == 0
    page = out.read_text()
    for name in F.FINDINGS:
        assert f"](../notebooks/{name}.ipynb)" in page
        assert F.render_markdown(name, FIXTURE[name]).strip() in page
    assert page.count("\n## ") == len(F.FINDINGS)
    assert page.count("Profile: `full`") == len(F.FINDINGS)
    assert "generated by `make reproduce` from `results/*/summary.json`" in page.lower()
    assert "do not edit by hand" in page
    assert "missing" not in page


def test_results_page_says_when_a_summary_is_missing(tmp_path):
    page = R.build_page(write_results(tmp_path, skip=("03_inverse_scaling",)))
    assert page.count("\n## ") == len(F.FINDINGS)
    assert "`results/03_inverse_scaling/summary.json` is missing" in page
    assert F.render_markdown("04_extrapolation", FIXTURE["04_extrapolation"]).strip() in page


def test_makefile_reproduce_writes_the_page():
    makefile = (ROOT / "Makefile").read_text()
    target = makefile.split("\nreproduce:", 1)[1].split("\n\n", 1)[0]
    assert "-m scalinglab.harness.results_page $(RESULTS) docs/results.md" in target


def test_estimator_audit_known_answers():
    t = text("05_estimator_audit")
    assert "22 simulated isoFLOP designs, 64 experiments each, every estimator on the same ones" in t
    assert "sd 0.0031" in t
    assert "the parabola 0.004, 95% (87–99%)" in t and "variable projection 0.004, 95% (87–99%)" in t
    # the trust rule's power at 64 replicates, computed (binomial for coverage, the replicates' spread for bias)
    assert "At this count the trust rule flags a coverage of 84% and a bias of 0.013 80% of the time" in t
    assert "variable projection alone in 7 of 22 designs; Approach 3 and variable projection tie in 6" in t
    assert "from 1.5 (parabola) and 1.5 (spline) decades of N per budget, Approach 3 from 0.5" in t
    assert "the parabola is biased by +0.047 ± 0.007" in t and "errs by over 0.006" in t
    assert "at most 3% (bias plus two Monte Carlo errors) of the 0.338 gap" in t
    assert "off by +0.075 (coverage 0%)" in t
    # nothing a reader outside the project could not follow
    assert "Issue" not in t and "now warns" not in t


def test_estimator_audit_counts_verdicts_and_never_prefers():
    # The verdicts are counted as the summary gives them, a tie as a tie, and a design with no trusted
    # estimator as such, never as a recommendation.
    summary = copy.deepcopy(FIXTURE["05_estimator_audit"])
    names = list(summary["best"])
    half = len(names) // 2
    summary["best"] = {n: (dict(estimators=["approach3", "varpro"], trusted=True) if i < half
                           else dict(estimators=["spline", "parabola"], trusted=False)) for i, n in enumerate(names)}
    t = text("05_estimator_audit", summary)
    assert (f"Approach 3 and variable projection tie in {half} of {len(names)} designs; the spline and the "
            f"parabola tie (none trusted) in {len(names) - half}.") in t


def test_estimator_audit_gap_share_reads_the_summary():
    # (|bias| + 2 MC errors) / gap: (0.1 + 2·0.01) / 0.338 = 36%
    summary = copy.deepcopy(FIXTURE["05_estimator_audit"])
    summary["porian_gap"].update(spline_bias=-0.1, spline_bias_mc=0.01)
    assert "biased by −0.100 ± 0.010" in text("05_estimator_audit", summary)
    assert "at most 36% (bias plus two Monte Carlo errors) of the 0.338 gap" in text("05_estimator_audit", summary)


def test_benchmark_known_answers():
    t = text("08_extrapolation_benchmark")
    # units, not runs: 19 datasets, twins merged to 17, one budget per isoFLOP hold-out
    assert "19 datasets are 17 independent ones (twin readings merged)" in t
    assert "holding out 27 independent units" in t and "only 1 (sldbench-data-constrained) holds out the 5 units" in t
    assert "Held-out RMSLE across 17 independent datasets" in t and "data-constrained form not ranked" in t
    assert ("2 of 4 beat the power law in C pairwise (Chinchilla by Approach 3 and Chinchilla by "
            "variable projection)") in t
    # a law that cannot beat the naive baselines says so: none beats the power law on N_opt or L_min
    assert "N_opt on 11 independent isoFLOP sets" in t and "0 of 6 beat the power law in C pairwise (none), 6 are worse" in t
    assert "calibrated 95% intervals (fitted one training unit below each, forward by scale) hold 101.0 of 103" in t
    # each coverage with its median half-width: the calibrated ones cover more by being wider
    assert "(98%, ±5.2%); the bootstrap's parameter-only intervals 53% (±1.9%), the noise-only ones 82% (±4.0%)" in t
    assert "reaches the published human-law R² on 1 of 4 tasks (sft)" in t
    assert "data-constrained 0.56 on the published columns against the baseline's 0.911" in t
    assert "mixture of experts 0.60, or 0.97 under the older normaliser" in t
    assert "128 experiments each; the trust rule flags a coverage of 88% and a bias of 0.013 80% of the time" in t


def test_benchmark_says_not_ranked_and_names_untrusted_truths():
    summary = copy.deepcopy(FIXTURE["08_extrapolation_benchmark"])
    # every entry short of datasets: the sentence must say not ranked, never best
    for e in summary["ranking"]["rmsle"]["entries"]:
        e["verdict"] = "not ranked (3 independent datasets, 5 needed)"
    summary["audit_verdicts"]["kaplan"]["trusted"] = False
    t = text("08_extrapolation_benchmark", summary)
    rmsle = [b for b in bullets("08_extrapolation_benchmark", summary) if b.startswith("- Held-out RMSLE")][0]
    assert "not ranked (too few datasets)" in rmsle and "not told apart from the best" not in rmsle
    assert "no estimator is trusted under kaplan" in t


def test_downstream_known_answers():
    t = text("07_downstream")
    # Bhagia et al.'s 16 chained predictions, reproduced: their code's numbers to the hundredth of a point
    assert "all 16 of their chained 7B and 13B predictions to within 0.01 points" in t
    assert "it is 6.9 (their abstract: 6.9)" in t
    cov = FIXTURE["07_downstream"]["chained_coverage"]
    assert f"parameter-only (ladder runs resampled) hold {cov['inside']} of 16 actuals" in t
    # the calibrated intervals: 9 of 16 points, 4.5 of 8 tasks (a task's two sizes counted as one unit)
    assert "calibrated on ladder runs left out 9 (4.5 of 8 tasks" in t
    # ARC-Easy alone misses the parameter-only intervals, by 2.1 and 2.9 points beyond intervals 12 and 13 wide:
    # one task of eight, which 95% intervals give by chance 1 - 0.95^8 = 34% of the time
    assert "ARC-Easy misses the parameter-only ones by 2.1–2.9 points beyond intervals 12–13 wide" in t
    assert "1 task of 8, which chance gives 34% of the time, no evidence against its form" in t
    assert "form is wrong" not in t
    assert "16 of 16 predicted task losses lie below every ladder checkpoint's" in t
    assert "reproduce to their printed rounding in 9 of 9 rows, the translated laws' R² in 6 of 6" in t
    # the baseline's difference explained: their printed law, scored here, gives their R²; our optimum is lower
    # their six printed baseline laws scored by us, and how far above the optimum of their objective four lie
    assert "the baseline (five parameters, 6–8 models) in 2" in t
    assert "score their R² here in 6 of 6; 4 lie 6%–689% above the optimum of their own objective" in t
    # 1e21: the E-fixed intervals hold 2 of 9; with E0 and E1 refitted on each resample, 9 of 9
    assert "hold 2 of 9; refitting E₀ and E₁ on each resample, 9 of 9" in t


def test_downstream_verdict_follows_the_misses():
    s = copy.deepcopy(FIXTURE["07_downstream"])
    for r in s["reproduction"]["table"]:       # every actual inside: no verdict on the form
        r["inside"] = True
    s["chained_coverage"]["inside"] = 16
    assert "None misses the parameter-only intervals." in text("07_downstream", s)
    s = copy.deepcopy(FIXTURE["07_downstream"])
    for r in s["reproduction"]["table"]:       # four tasks miss, from below: more than chance gives
        r["inside"] = r["task"] not in ("arc_challenge", "arc_easy", "csqa", "openbookqa")
        if not r["inside"]:
            r["upper"] = r["actual"] - 1.0
    t = text("07_downstream", s)
    # P(4 or more of 8 outside) at 5% each is 0.04%: the intervals, not chance
    assert "4 tasks of 8, which chance gives 0% of the time, more than chance gives" in t


def test_downstream_own_ladder_known_answers():
    t = text("07_downstream")
    o = FIXTURE["07_downstream"]["own_ladder"]
    # the two targets' chained accuracies and actuals as the fixture holds them, to a tenth of a point
    for r in o["targets"]:
        assert f"{100 * r['acc_pred']:.1f}% (actual {100 * r['acc_actual']:.1f})" in t
    assert "On our own ladder (16 GPTs, 66k–204k parameters; a 1,000-item cloze)" in t
    assert "the chain predicts 32x1 and 48x2" in t
    # the straight line through the four 20-tokens-per-parameter runs: 70.9 and 72.9, closer than the chain's
    # 70.5 and 72.2 to the actual 70.8 and 72.7, on two targets that cannot rank the two
    assert "A line on log N predicts 70.9 and 72.9, closer; two targets cannot rank them." in t


def test_downstream_own_ladder_counts_the_intervals_that_hold():
    s = copy.deepcopy(FIXTURE["07_downstream"])
    r = s["own_ladder"]["targets"][1]
    r["acc_cal_inside"], r["acc_cal_upper"] = False, r["acc_actual"] - 0.01   # the larger target above it
    t = text("07_downstream", s)
    inside = sum(bool(x["acc_cal_inside"]) for x in s["own_ladder"]["targets"])
    assert f"; {inside} of 2 inside the calibrated 95% intervals" in t
    assert f"–{100 * r['acc_cal_upper']:.1f})." in t
    for x in s["own_ladder"]["line_baseline"]["targets"]:   # the line made worse than the chain
        x["miss"] = 0.05
    assert "farther; two targets cannot rank them" in text("07_downstream", s)


def test_downstream_bullets_are_short():
    words = [len(b[2:].split()) for b in bullets("07_downstream")]
    assert max(words) <= 60, words


def test_loss_curves_known_answers():
    t = text("06_loss_curves")
    rep = FIXTURE["06_loss_curves"]["mpl_reproduction"]
    # the reproduction's numbers and their differences from the published table, per size
    assert f"R² {rep['25M']['r2']:.4f} / {rep['100M']['r2']:.4f} / {rep['400M']['r2']:.4f}" in t
    assert "fitted as they ran it (an early-stopped AdamW)" in t and "25M / 100M / 400M" in t
    # the objective ratios per size, both fits under the same convention of the sum
    assert " / ".join(f"{rep[k]['objective_ratio']:.2f}" for k in ("25M", "100M", "400M")) + " times" in t
    cal = FIXTURE["06_loss_curves"]["curve_calibration"]["by_fit"]["multipower"]
    counts = "/".join(str(cal[k]["inside"]) for k in ("25M", "100M", "400M"))
    assert f"hold {counts} of 6 unseen final losses at 25M/100M/400M (multi-power optimum)" in t
    assert "(unit: schedule; 3 training schedules left out in turn, log loss)" in t
    assert "on each size's own spread (t on 2 df; worst at 100M" in t
    pooled = "/".join(str(cal[k]["pooled_inside"]) for k in ("25M", "100M", "400M"))
    assert (f", {pooled} with the spread pooled over sizes (t on 6 df, half-width "
            f"{cal['25M']['pooled_half_width']:.4f})") in t
    own = FIXTURE["06_loss_curves"]["curve_calibration"]["own_runs"]["multipower"]
    assert f"pooled over 3 widths {own['pooled_inside']} of {own['pooled_total']} at " in t
    # a summary from before the pooled interval existed still renders, without it
    old = copy.deepcopy(FIXTURE["06_loss_curves"])
    for by_size in old["curve_calibration"]["by_fit"].values():
        for v in by_size.values():
            for k in [k for k in v if k.startswith("pooled")]:
                del v[k]
    for k in [k for k in old["curve_calibration"]["own_runs"]["multipower"] if k.startswith("pooled")]:
        del old["curve_calibration"]["own_runs"]["multipower"][k]
    t_old = text("06_loss_curves", old)
    assert "pooled" not in t_old and f"hold {counts} of 6 unseen final losses" in t_old
    assert "Issue" not in t
    assert "parameter-only bands 8 of 10." in t


def test_loss_curves_small_differences_keep_their_first_digit():
    summary = copy.deepcopy(FIXTURE["06_loss_curves"])
    rep = summary["mpl_reproduction"]["400M"]
    rep["r2"] = rep["r2_published"] - 0.00004
    t = text("06_loss_curves", summary)
    assert "/ −0.00004 (R²)" in t and "0.0000 (R²)" not in t


def test_loss_curves_one_run_exponent_is_a_bound_unless_identified():
    summary = copy.deepcopy(FIXTURE["06_loss_curves"])
    one = summary["one_run"]
    assert one["identified"] is False   # the fixture's run: E on its floor in the fit and its replicates
    t = text("06_loss_curves", summary)
    assert (f"not identified: E sits at its floor 0 in the Approach-3 fit and in {one['replicates_e_at_floor']} "
            f"of {one['replicates_fitted']} replicates") in t and "a range, not an interval" in t
    one.update(identified=True, a=0.4321, a_interval=[0.31, 0.52])
    t = text("06_loss_curves", summary)
    assert "give an Approach-3 exponent a = 0.43 (95% 0.31–0.52)" in t and "not identified" not in t


def test_loss_curves_reads_the_separate_runs_exponent_when_there_is_one():
    summary = copy.deepcopy(FIXTURE["06_loss_curves"])
    summary["one_run"]["separate_a"] = 0.4321
    t = text("06_loss_curves", summary)
    assert "give a = 0.43 without an interval." in t and "cannot identify" not in t
    summary["law_comparison"]["tissue"]["prede"] = 0.0123456
    assert "Tissue et al.'s annealing law" in text("06_loss_curves", summary)
    assert "0.01235" in text("06_loss_curves", summary)


def test_hyperparameters_known_answers():
    t = text("09_hyperparameters_and_data")
    sl = FIXTURE["09_hyperparameters_and_data"]["step_law"]
    d = sl["lr_exp_d"]
    # ours with its interval beside the published value, and the difference in D's exponent with its sign
    assert f"D^{d['ours']:.3f} (95% {d['lo']:.3f}–{d['hi']:.3f})" in t and "D^0.307" in t
    assert f"D's lr exponent is −{abs(d['ours'] - d['published']):.2f} off" in t
    gap = sl["optimum_gap"]
    assert f"median {gap['median_pct']:.3f}% (max {gap['max_pct']:.2f}%)" in t and "published 0.094%" in t
    assert "A user's refit posted on the authors' repository" in t and "issue" not in t.lower()
    e = FIXTURE["09_hyperparameters_and_data"]["own_grid"]["exponent"]
    assert f"η_opt ∝ N^{e['slope']:.2f}".replace("-", "−") in t and f"on {e['df']} df" in t


def test_hyperparameters_reads_the_sign_and_a_missing_test_grid():
    s = copy.deepcopy(FIXTURE["09_hyperparameters_and_data"])
    s["own_grid"]["exponent"]["sign_as_published"] = False
    s["step_law"]["optimum_gap"]["test_grid_published_law_pct"] = None
    t = text("09_hyperparameters_and_data", s)
    assert "the opposite sign to Step Law's" in t and "SLDBench's test grid" not in t
    del s["regmix"]["pile_cc_transfer"]
    with pytest.raises(F.MissingSummaryKey, match="pile_cc_transfer"):
        F.findings("09_hyperparameters_and_data", s)
