"""Notebook 02's findings: Kaplan vs Hoffmann."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from scalinglab.harness.findings.format import (
    Finding,
    _cap,
    _missing,
    _span,
    _Summary,
    dec,
    diff,
    interval,
    pct,
    sig,
)

PORIAN_STEPS = (
    ("kaplan_reproduction", "Kaplan's setup"),
    ("plus_head", "+ head"),
    ("plus_short_warmup", "+ short warmup"),
    ("plus_cosine", "+ matched cosine"),
    ("tuned_constant_lr", "+ tuning"),
)
PORIAN_DATASETS = {"rw": "RefinedWeb", "owt2": "OpenWebText2"}


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

    out.append(_counting_finding(s))

    ours, ours_ci, pub = s.sub("porian_exponents"), s.sub("porian_exponent_ci"), s.sub("porian_published")
    gaps = [abs(ours(d, st) - pub(d, st, "a")) for d in PORIAN_DATASETS for st, _ in PORIAN_STEPS]
    ends = (PORIAN_STEPS[0][0], PORIAN_STEPS[-1][0])
    out.append(Finding(
        "Porian et al.'s five steps from Kaplan's setup to Hoffmann's, recomputed from their isoFLOP points "
        "(RefinedWeb; WLS intervals over budgets): "
        + " → ".join(f"{label} {dec(ours('rw', st))}"
                     + (f" {interval(ours_ci('rw', st))}" if st in ends else "") for st, label in PORIAN_STEPS)
        + f"; every step on both datasets is within {dec(max(gaps))} of the published exponent."))

    w = s.sub("warmup_gadre_grid")
    hinge, quad = w.sub("fit_2000_steps"), w.sub("fit_2000_steps_quadratic")
    at = w.sub("penalty_2000_at")
    high = max(at.data, key=float)
    onset = lambda f: f"{pct(f('knot'), 1)} {interval(f('knot_ci'), lambda v: pct(v, 1))}"  # noqa: E731
    out.append(Finding(
        f"On Gadre et al.'s grid ({w('runs')} runs), a fixed 2000-step warmup costs "
        f"{dec(at(high, 'hinge', 'penalty'), 2)} nats "
        f"{_unit(interval(at(high, 'hinge', 'ci'), lambda v: dec(v, 2)), 'shapes resampled')} when it takes "
        f"{pct(float(high), 1)} of training. Where the cost starts depends on the assumed form: {onset(hinge)} as "
        f"a hinge, {onset(quad)} as a smooth onset; at batch 64 the warmup's share is also the model's size."))

    out.append(_sweeps_finding(s))
    return _cap(out)


def _unit(text: str, unit: str) -> str:
    """'(95% a–b)' -> '(95% a–b, unit)': every interval names what was resampled."""
    return text[:-1] + f", {unit})" if text.endswith(")") and text != "(no interval)" else text


def _counting_finding(s: _Summary) -> Finding:
    """Kaplan's counting on real runs: the shifts, E where it sits at its bound, and what the comparisons
    with the Chinchilla law's prediction could have detected."""
    real = s.sub("kaplan_counting_real")
    gem = real.sub("gemstones_approach1")
    hull = [gem.sub(k) for k in gem.data if k.endswith("/hull")]
    gadre = real.sub("gadre_approach3_c4_eval")
    corpora = list(gadre.data)
    free = [gadre.sub(c, "Kaplan") for c in corpora]
    held = [gadre.sub(c, "Kaplan_e_held_at_total") for c in corpora]
    sgn = lambda v: dec(v, 2, sign=True)  # noqa: E731
    at_floor = [c for c, f in zip(corpora, free) if f("status") == "at_bound"]
    rows = [gem.sub(k) for k in gem.data] + free + held + [gadre.sub(c, "standard") for c in corpora]
    gaps = [r.sub("measured_minus_simulated", law) for r in rows for law in r("measured_minus_simulated")]
    missed = sum(not g("ci")[0] <= 0 <= g("ci")[1] for g in gaps)
    detect = [g("detectable") for g in gaps]
    hull_ci = [min(g("shift_ci")[0] for g in hull), max(g("shift_ci")[1] for g in hull)]
    floor = f" (at its bound 0 on {', '.join(at_floor)})" if at_floor else ""
    verdict = (f"{missed} of {len(gaps)} gaps from the Chinchilla law's prediction exclude 0" if missed
               else f"All {len(gaps)} gaps from the Chinchilla law's prediction cover 0")
    return Finding(
        "Kaplan's counting raises the Gemstones hull exponent by "
        f"{_span([g('shift') for g in hull], sgn)} {_unit(interval(hull_ci, sgn), 'runs resampled')} and "
        f"Gadre et al.'s by {_span([f('shift') for f in free], sgn)} with E free{floor}, "
        f"{_span([g('shift') for g in held], sgn)} with E held. {verdict}, but only gaps of "
        f"{dec(min(detect), 2)}–{dec(max(detect), 2)} or more were detectable.")


def _ladder_text(s: _Summary) -> str:
    """Our CPU ladder: where it starts (against Porian et al.'s start), the total fall against theirs, and how
    many single steps it resolves."""
    lad = s.sub("ladder")
    steps = lad("steps")
    fitted = [st for st in steps if st["a"] is not None and not _missing(st["a"]["a"])]
    if not fitted:
        return "Porian et al.'s ladder on our CPU runs: no step has a fit in these databases. "
    first = fitted[0]
    shifts = [st for st in steps if st["delta"] is not None and not _missing(st["delta"]["d"])]
    excl = [st for st in shifts
            if None not in st["delta"]["ci"] and not st["delta"]["ci"][0] <= 0 <= st["delta"]["ci"][1]]
    tot = lad("total")
    sgn = lambda v: dec(v, 2, sign=True)  # noqa: E731
    text = (f"Our CPU ladder starts at a = {dec(first['a']['a'], 2)} "
            f"{_unit(interval(first['a']['ci'], lambda v: dec(v, 2)), 'shapes resampled')}, not Porian et al.'s "
            f"{dec(first['porian']['rw']['a'])}")
    if tot["a_first_minus_last"] is not None:
        text += (f", and falls {sgn(tot['a_first_minus_last'])} {interval(tot['ci'], sgn)} by step {tot['last']} "
                 f"against their {dec(tot['porian']['rw'], 2)}")
    if shifts:
        text += (f", {len(excl)} of {len(shifts)} steps resolved" if excl else ", no single step resolved")
    return text + ". "


def _sweeps_finding(s: _Summary) -> Finding:
    ladder = _ladder_text(s)
    diffs = s.sub("sweeps_difference", "kaplan_minus_hoffmann")
    block = diffs.sub("block")
    if _missing(block("difference")):
        profile = s.sub("sweeps")("kaplan", "profile")
        return Finding(
            ladder + f"The two-preset sweeps ({profile} profile) give no exponent ({block('reason')}): in this "
            "profile they are a plumbing check.")
    sweeps = s.sub("sweeps")
    targets_k = sweeps("kaplan", "porian_steps", "kaplan_reproduction")
    porian_gap = [targets_k[d][0] - step[d][0] for step in sweeps("hoffmann", "porian_steps").values()
                  for d in targets_k]
    sgn = lambda v: dec(v, 2, sign=True)  # noqa: E731
    return Finding(
        ladder + f"Our presets differ by {sgn(block('difference'))} "
        f"{_unit(interval(block('ci'), sgn), 'shapes resampled')} against their "
        f"{_span(porian_gap, lambda v: dec(v, 2))}; detectable: {dec(block('detectable'), 2)} or more.")
