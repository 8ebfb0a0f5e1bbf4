"""Notebook 02's counting study: Kaplan's parameter count against the total, measured on real runs and simulated
on the Chinchilla law over the same runs, as one result.

For Approach 1, each Gemstones curve set under each envelope (the Gemstones authors' hull, Hoffmann's grid);
for Approach 3, Gadre et al.'s runs on each training corpus, evaluated on C4, under the standard and Kaplan's
count, with Kaplan's E held at the total-N fit's and profiled. Every shift has a paired-bootstrap interval
(``pearce_song``); measured − simulated is paired resample by resample. ``to_dict()`` is what notebook 02's
summary.json holds under ``kaplan_counting_real``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from scalinglab.papers import pearce_song
from scalinglab.serialization import to_jsonable

# Kaplan's count beside the standard one (columns of ``pearce_song.with_kaplan_params``).
COUNTINGS = {"standard": "params_no_embed", "Kaplan": "params_kaplan"}
# The fixed E values the Kaplan-count fit is profiled over.
E_PROFILE = (0.0, 0.5, 1.0, 1.5)


@dataclass(frozen=True)
class CountingStudy:
    """Shifts of the exponent from the total N to Kaplan's N, keyed by (curve set, envelope) for Approach 1 and
    (corpus, counting) for Approach 3; ``*_sim``: the same on the law's losses (key + law name); ``*_gap``:
    measured − simulated; ``a3_head``: Kaplan's count minus the standard one; ``a3_held``: Kaplan's E held at the
    total fit's; ``a3_e_part``: free minus held E; ``a3_profile``: the Kaplan-count fit over fixed E."""

    n_boot: int
    laws: tuple[str, ...]
    a1_shift: dict = field(default_factory=dict)
    a1_sim: dict = field(default_factory=dict)
    a1_gap: dict = field(default_factory=dict)
    a1_6nd: dict = field(default_factory=dict)
    a3_shift: dict = field(default_factory=dict)
    a3_sim: dict = field(default_factory=dict)
    a3_gap: dict = field(default_factory=dict)
    a3_head: dict = field(default_factory=dict)
    a3_held: dict = field(default_factory=dict)
    a3_held_sim: dict = field(default_factory=dict)
    a3_held_gap: dict = field(default_factory=dict)
    a3_e_part: dict = field(default_factory=dict)
    a3_profile: dict = field(default_factory=dict)
    ps_shift: dict = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        shift, gap, laws = pearce_song.shift_summary, pearce_song.gap_summary, self.laws
        a1 = {f"{t}/{m}": {**shift(s), "a_total_n_6nd": self.a1_6nd[t, m],
                           "simulated": {k: shift(self.a1_sim[t, m, k]) for k in laws},
                           "measured_minus_simulated": {k: gap(self.a1_gap[t, m, k]) for k in laws}}
              for (t, m), s in self.a1_shift.items()}
        corpora = list(dict.fromkeys(name for name, _ in self.a3_shift))
        a3 = {name: {**{c: {**shift(self.a3_shift[name, c]),
                            "simulated": {k: shift(self.a3_sim[name, c, k]) for k in laws},
                            "measured_minus_simulated": {k: gap(self.a3_gap[name, c, k]) for k in laws}}
                        for c in COUNTINGS},
                     "head_part": gap(self.a3_head[name]),
                     "Kaplan_e_held_at_total": {**shift(self.a3_held[name]),
                                                "simulated": {k: shift(self.a3_held_sim[name, k]) for k in laws},
                                                "measured_minus_simulated": {k: gap(self.a3_held_gap[name, k])
                                                                             for k in laws},
                                                "free_minus_held": gap(self.a3_e_part[name])},
                     "kaplan_e_profile": self.a3_profile[name].to_dict("records")}
              for name in corpora}
        return to_jsonable({"n_boot": self.n_boot, "level": 0.95, "pearce_song_shift_kaplan_scale": self.ps_shift,
                            "gemstones_approach1": a1, "gadre_approach3_c4_eval": a3})


def counting_study(gem_curves: dict, envelopes: dict, gadre_rows, corpora: dict[str, str], sim_laws: dict,
                   n_boot: int, ps_shift: dict | None = None) -> CountingStudy:
    """The study on ``gem_curves`` (name -> Gemstones curves) under each of ``envelopes`` (name ->
    ``EnvelopeOptions``), and on ``gadre_rows`` (``with_kaplan_params``'s table) for each of ``corpora``
    (dataset value -> name); simulated on each of ``sim_laws`` (name -> ``ScalingLaw``)."""
    from scalinglab.fitting.frontier import envelope

    st = CountingStudy(n_boot, tuple(sim_laws), ps_shift=dict(ps_shift or {}))
    for t, curves in gem_curves.items():
        for m, opts in envelopes.items():
            st.a1_shift[t, m] = pearce_song.envelope_shift(curves, opts)
            # Halfway: total N but C = 6·N·D, to see how much of the shift is the FLOP count rather than N.
            st.a1_6nd[t, m] = envelope.fit_envelope(curves, replace(opts, n_boot=0), flops_col=None).exponent
            for k, law in sim_laws.items():
                st.a1_sim[t, m, k] = pearce_song.envelope_shift(pearce_song.on_law(law, curves), opts)
                st.a1_gap[t, m, k] = pearce_song.shift_difference(st.a1_shift[t, m], st.a1_sim[t, m, k])
    for ds, name in corpora.items():
        _approach3(st, gadre_rows[gadre_rows["dataset"] == ds], name, sim_laws, n_boot)
    return st


def _approach3(st: CountingStudy, rows, name: str, sim_laws: dict, n_boot: int) -> None:
    """One corpus's Approach-3 shifts, simulated shifts and their differences, into ``st``."""
    shift = dict(n_boot=n_boot, seed=0)
    on_law = {k: pearce_song.on_law(law, rows, n_col="params") for k, law in sim_laws.items()}
    for c, col in COUNTINGS.items():
        st.a3_shift[name, c] = pearce_song.law_shift(rows, "params", col, **shift)
        for k, t in on_law.items():
            st.a3_sim[name, c, k] = pearce_song.law_shift(t, "params", col, **shift)
            st.a3_gap[name, c, k] = pearce_song.shift_difference(st.a3_shift[name, c], st.a3_sim[name, c, k])
    # Both shifts start from the same total-N fit, so their difference is the step from the standard count to Kaplan's.
    st.a3_head[name] = pearce_song.shift_difference(st.a3_shift[name, "Kaplan"], st.a3_shift[name, "standard"])
    # Kaplan's count with its E held at the total-N fit's E (the two countings share their asymptote, since
    # N_ne/N -> 1), measured and simulated alike, on the same resamples.
    st.a3_held[name] = pearce_song.law_shift(rows, "params", "params_kaplan", **shift, kaplan_e="total")
    for k, t in on_law.items():
        st.a3_held_sim[name, k] = pearce_song.law_shift(t, "params", "params_kaplan", **shift, kaplan_e="total")
        st.a3_held_gap[name, k] = pearce_song.shift_difference(st.a3_held[name], st.a3_held_sim[name, k])
    # Free E minus held E, paired: how much of the free-E shift rides on where E lands.
    st.a3_e_part[name] = pearce_song.shift_difference(st.a3_shift[name, "Kaplan"], st.a3_held[name])
    st.a3_profile[name] = pearce_song.e_profile(rows, "params_kaplan", values=E_PROFILE)
