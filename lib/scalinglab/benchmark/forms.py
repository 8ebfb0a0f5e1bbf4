"""Published forms SLDBench's tasks need and the law registry lacks, each a ``Law`` fitted by the registry's
one engine (``fitting.laws.fit_law``). They stay in their own family (``TASK_LAWS``) because their inputs are
not the registry's N, D, U: experts, vocabulary parameters, fine-tuning examples.

The learning-rate/batch-size task (StepFun's law in lr, batch size, N, D) and the five-domain mixture task
(five proportions to five losses) have no form here: SLDBench scores them, this benchmark does not.
"""

from __future__ import annotations

import numpy as np

from scalinglab.fitting.laws import Law, Param


def _moe(inputs, p):
    ln, le = np.log(inputs["n"]), np.log(inputs["x"])
    return np.exp(p["d"] + p["a"] * ln + p["b"] * le + p["c"] * ln * le)


MOE = Law(
    name="moe_bilinear", title="routed models: log loss bilinear in log N and log E",
    formula="log L = a log N + b log E + c log N log E + d",
    citation="Clark et al. 2022, Unified Scaling Laws for Routed Language Models (arXiv:2202.01169), their "
             "bilinear form in log N and log E (without the saturating transform of E)",
    inputs=("n", "x"), target="loss",
    params=(Param("a", "exponent of the dense parameters N (negative: bigger is better)", -5.0, 5.0, (-0.1, -0.05)),
            Param("b", "exponent of the expert count E at N = 1", -5.0, 5.0, (-0.05, 0.0)),
            Param("c", "how the expert exponent changes with log N", -1.0, 1.0, (0.0, 0.002)),
            Param("d", "log loss at N = E = 1", -50.0, 50.0, (2.0, 4.0))),
    predict=_moe, note="x is the number of experts (1: the dense model)")


def _vocab(inputs, p):
    return (-p["E"] + p["A1"] / inputs["n"] ** p["alpha1"] + p["A2"] / inputs["x"] ** p["alpha2"]
            + p["B"] / inputs["d"] ** p["beta"])


VOCAB = Law(
    name="vocab", title="unigram-normalised loss in non-vocabulary parameters, vocabulary parameters and data",
    formula="L_u = -E + A1/N_nv^alpha1 + A2/N_v^alpha2 + B/H^beta",
    citation="Tao et al. 2024, Scaling Laws with Vocabulary: Larger Models Deserve Larger Vocabularies "
             "(arXiv:2407.13623), their fitted form for L_u",
    inputs=("n", "x", "d"), target="metric", space="linear", objective="squares",
    params=(Param("E", "minus the floor of L_u", 0.0, 20.0, (2.0, 6.0)),
            Param("A1", "scale of the non-vocabulary parameter term", 1e-6, 1e12, (1e1, 1e3), log=True),
            Param("A2", "scale of the vocabulary parameter term", 1e-6, 1e12, (1e1, 1e3), log=True),
            Param("B", "scale of the data term (characters)", 1e-6, 1e12, (1e2, 1e4), log=True),
            Param("alpha1", "exponent of N_nv", 0.0, 3.0, (0.2, 0.5)),
            Param("alpha2", "exponent of N_v = V d", 0.0, 3.0, (0.2,)),
            Param("beta", "exponent of the training characters H", 0.0, 3.0, (0.2, 0.5))),
    predict=_vocab, note="n: non-vocabulary parameters; x: vocabulary parameters V·d; d: training characters")


def _rectified(inputs, p):
    return p["B"] / (p["Dl"] + inputs["x"] ** p["beta"]) + p["E"]


RECTIFIED = Law(
    name="rectified", title="fine-tuning loss with a pre-learned data term",
    formula="L(D) = B/(D_l + D^beta) + E",
    citation="Lin et al. 2024, Selecting Large Language Model to Fine-tune via Rectified Scaling Law "
             "(arXiv:2402.02314)",
    inputs=("x",), target="loss",
    params=(Param("B", "scale of the data term", 1e-6, 1e12, (1e1, 1e3), log=True),
            Param("Dl", "pre-learned data: fine-tuning examples the pretrained model is already worth",
                  1e-6, 1e12, (1e1, 1e3), log=True),
            Param("beta", "exponent of the fine-tuning examples D", 0.0, 3.0, (0.3, 0.7)),
            Param("E", "the floor the loss approaches", 0.0, 20.0, (0.0, 1.0))),
    predict=_rectified, note="x: fine-tuning examples")


TASK_LAWS = {law.name: law for law in (MOE, VOCAB, RECTIFIED)}
