"""Published Chinchilla numbers, typed from the papers. Targets to compare with, never inputs to a fit.

Sources:
- Hoffmann et al. 2022, "Training Compute-Optimal Large Language Models",
  arXiv:2203.15556: §3.3 (Approach 3, details in Appendix D.2) prints
  E = 1.69, A = 406.4, B = 410.7, α = 0.34, β = 0.28; Table 2 gives the
  exponent a of N_opt ∝ C^a per approach.
- The unrounded values are in the paper's TeX source, as quoted by Besiroglu
  et al. 2024 (v2, §2), who show that the printed rounding biases predictions.
- Besiroglu, Erdil, Barnett, You 2024, "Chinchilla Scaling: A replication
  attempt", arXiv:2404.10102, Table 1: their fit to the 240 rows of
  `epoch-chinchilla`.
"""

from __future__ import annotations

from scalinglab.fitting.chinchilla.law import ScalingLaw

PARAMETER_SETS: dict[str, tuple[ScalingLaw, str]] = {
    "hoffmann_printed": (ScalingLaw(E=1.69, A=406.4, B=410.7, alpha=0.34, beta=0.28),
                         "Hoffmann et al. 2022, §3.3 (Approach 3)"),
    "hoffmann_unrounded": (ScalingLaw(E=1.6934, A=406.40, B=410.72, alpha=0.33917, beta=0.28491),
                           "Hoffmann et al. 2022 TeX source, via Besiroglu et al. 2024 §2"),
    "epoch_reported": (ScalingLaw(E=1.8172, A=482.01, B=2085.43, alpha=0.3478, beta=0.3658),
                       "Besiroglu et al. 2024, Table 1"),
}

# The optimum Epoch's released notebook reaches on `epoch-chinchilla` (their cell 18, as re-run in
# shared/data/chinchilla/PROVENANCE.md "Reference fits"). Their Table 1 prints α 0.3478, β 0.3658
# instead; the notebook's own output and scipy's L-BFGS-B from Hoffmann's grid both land here.
EPOCH_NOTEBOOK_OPTIMUM = dict(E=1.8172, alpha=0.3473, beta=0.3672)

# Hoffmann et al. 2022, Table 2: a in N_opt ∝ C^a and b in D_opt ∝ C^b, each with the 10th and 90th
# percentiles of a bootstrap that refits on 80% of the data, 100 times (the table's caption). Approach 3's
# intervals are printed to three decimals, so each is at most 0.002 wide (notebook 01 §10).
HOFFMANN_A = {
    "approach1": (0.50, (0.488, 0.502)),
    "approach2": (0.49, (0.462, 0.534)),
    "approach3": (0.46, (0.454, 0.455)),
}
HOFFMANN_B = {
    "approach1": (0.50, (0.501, 0.512)),
    "approach2": (0.51, (0.483, 0.529)),
    "approach3": (0.54, (0.542, 0.543)),
}

# Chinchilla itself: 70B parameters on 1.4T tokens (Hoffmann et al. §4), so C = 6ND = 5.88e23 FLOP.
CHINCHILLA_FLOPS = 5.88e23
CHINCHILLA_N = 70e9
CHINCHILLA_D = 1.4e12
# "over 400 language models ranging from 70 million to over 16 billion parameters" (Hoffmann et al. 2022,
# abstract): the runs behind their fits, against the 240 of epoch-chinchilla.
HOFFMANN_N_RUNS = 400


def law(name: str) -> ScalingLaw:
    return PARAMETER_SETS[name][0]
