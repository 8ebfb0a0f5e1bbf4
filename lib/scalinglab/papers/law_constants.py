"""Published scaling laws: their constants (with the table they come from) and closed forms.

Kaplan et al. 2020 ("Scaling Laws for Neural Language Models", arXiv:2001.08361)
count N without embeddings and C as 6·N·D in those terms; Hoffmann et al.
2022 ("Training Compute-Optimal Large Language Models", arXiv:2203.15556)
and Besiroglu et al. 2024 (Epoch AI, "Chinchilla Scaling: A replication
attempt", arXiv:2404.10102) count every parameter; their constants are in
``scalinglab.papers.published`` and re-exported here as HOFFMANN and EPOCH. Losses are in nats/token
on different corpora, so compare shapes and optima, not loss values.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from scalinglab.papers import published

PF_DAY = 1e15 * 24 * 3600  # FLOP in a petaflop/s-day, Kaplan's unit of compute


@dataclass(frozen=True)
class KaplanLaw:
    """Kaplan et al. 2020's fits; N non-embedding, D tokens, C_min in PF-days."""

    # L(N) = (N_c/N)^α_N, Eq. 1.1 (Section 1.2)
    alpha_n: float = 0.076
    n_c: float = 8.8e13
    # L(D) = (D_c/D)^α_D, Eq. 1.2
    alpha_d: float = 0.095
    d_c: float = 5.4e13
    # L(N, D) = [(N_c/N)^(α_N/α_D) + D_c/D]^α_D, Eq. 1.5 with the joint fit of Table 2
    # (Section 4.2), whose constants differ from the single-variable ones above.
    joint_alpha_n: float = 0.076
    joint_alpha_d: float = 0.103
    joint_n_c: float = 6.4e13
    joint_d_c: float = 1.8e13
    # N_opt = 1.3e9 · C_min^0.73 (C_min in PF-days), Section 6.1 and Fig. 14 (left);
    # at a fixed batch size instead N = 1.6e9 · C^0.88 (Fig. 14, the exponent Porian et al. quote).
    n_opt_coef: float = 1.3e9
    n_opt_exponent: float = 0.73
    fixed_batch_coef: float = 1.6e9
    fixed_batch_exponent: float = 0.88

    def loss_n(self, n):
        return (self.n_c / np.asarray(n, float)) ** self.alpha_n

    def loss_d(self, d):
        return (self.d_c / np.asarray(d, float)) ** self.alpha_d

    def loss_n_joint(self, n):
        """L(N) as D → ∞ *of Eq. 1.5*: (N_c/N)^α_N with Table 2's constants.

        Eq. 1.1's separate fit (:meth:`loss_n`) has a larger N_c, so it lies above the joint law at every
        N and the joint L(N, D) at large D falls below it; the finite-data curves approach this limit
        from above, which is the curve to draw beside them."""
        return (self.joint_n_c / np.asarray(n, float)) ** self.joint_alpha_n

    def loss(self, n, d):
        """The joint L(N, D) of Eq. 1.5 with Table 2's constants."""
        n, d = np.asarray(n, float), np.asarray(d, float)
        return ((self.joint_n_c / n) ** (self.joint_alpha_n / self.joint_alpha_d)
                + self.joint_d_c / d) ** self.joint_alpha_d

    def n_opt(self, flops, fixed_batch: bool = False):
        """Compute-optimal non-embedding N for training compute ``flops`` (FLOP)."""
        c = np.asarray(flops, float) / PF_DAY
        if fixed_batch:
            return self.fixed_batch_coef * c**self.fixed_batch_exponent
        return self.n_opt_coef * c**self.n_opt_exponent

    def d_opt(self, flops, fixed_batch: bool = False):
        """Tokens at the optimum, D = C/(6N): ∝ C^0.27."""
        return np.asarray(flops, float) / (6 * self.n_opt(flops, fixed_batch))


KAPLAN = KaplanLaw()

# The Chinchilla-form laws, L = E + A/N^α + B/D^β in total parameters, live with their
# citations in scalinglab.papers.published (Hoffmann et al. 2022 Eq. 10 at the digits of its TeX
# source; Besiroglu et al. 2024 Table 1); scalinglab.fitting.chinchilla.approach3.ScalingLaw gives n_opt, d_opt, a.
HOFFMANN = published.law("hoffmann_unrounded")
EPOCH = published.law("epoch_reported")
