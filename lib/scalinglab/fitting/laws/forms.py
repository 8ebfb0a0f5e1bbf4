"""The registry's functional forms, one ``Law`` each, with their citations and parameters' meanings.

Loss laws (target: the loss, fitted on log residuals under Hoffmann's Huber
loss, δ = 1e-3, so their objectives compare): ``chinchilla``, ``kaplan``,
``data_constrained``, ``gadre``, ``saturating``, ``broken``. Downstream laws
(target: a metric such as an error rate or an accuracy, least squares):
``downstream`` (the metric from the loss) and ``logit`` (a bounded metric,
linear on the logit).

Starts are grids in each parameter's fitting coordinate (log for scales);
where a sensible start depends on the data (an irreducible loss below the
smallest observed loss, a break inside the range of x), it is computed from
the data.
"""

from __future__ import annotations

import numpy as np

from scalinglab.fitting.chinchilla.approach3 import CHINCHILLA
from scalinglab.fitting.form import Law, Param

# Muennighoff et al.'s U_N: the compute-optimal model for U_D unique tokens, at Chinchilla's ~20 tokens per
# parameter (their Appendix: U_N = min(N_opt(U_D), N)).
TOKENS_PER_PARAM = 20.0


def _below_min(*shares):
    return lambda inputs, y: tuple(s * float(np.min(y)) for s in shares)


def _quantiles_of(role, *qs):
    return lambda inputs, y: tuple(float(np.exp(np.quantile(np.log(inputs[role]), q))) for q in qs)


def _scale_of(role, *exps):
    """Starts for A in y − E ≈ A·x^−α: the loss range times x's geometric mean to each α."""
    def starts(inputs, y):
        g = float(np.exp(np.mean(np.log(inputs[role]))))
        span = max(float(np.ptp(y)), 1e-3 * float(np.mean(np.abs(y))))
        return tuple(span * g ** e for e in exps)
    return starts


# --- Kaplan et al. 2020, eq. 1.5 -------------------------------------------------------------------------


def _kaplan(inputs, p):
    # L = [(N_c/N)^(α_N/α_D) + D_c/D]^α_D, in logs so that N_c/N of 1e10 and more stay finite.
    a = p["alpha_N"] / p["alpha_D"] * (np.log(p["N_c"]) - np.log(inputs["n"]))
    b = np.log(p["D_c"]) - np.log(inputs["d"])
    return np.exp(p["alpha_D"] * np.logaddexp(a, b))


KAPLAN = Law(
    name="kaplan", title="Kaplan et al.'s L(N, D)",
    formula="L = [(N_c/N)^(alpha_N/alpha_D) + D_c/D]^alpha_D",
    citation="Kaplan et al. 2020, Scaling Laws for Neural Language Models, eq. 1.5 (arXiv:2001.08361)",
    inputs=("n", "d"), target="loss",
    params=(Param("N_c", "parameters at which the N term alone gives a loss of 1 (nat)", 1e0, 1e30,
                  (1e9, 1e13, 1e17), log=True),
            Param("D_c", "tokens at which the D term alone gives a loss of 1 (nat)", 1e0, 1e30,
                  (1e9, 1e13, 1e17), log=True),
            Param("alpha_N", "exponent of N when data are unlimited", 1e-3, 3.0, (0.05, 0.1, 0.3)),
            Param("alpha_D", "exponent of D when the model is unlimited", 1e-3, 3.0, (0.05, 0.1, 0.3))),
    predict=_kaplan,
    note="no irreducible term: the loss goes to 0 as N and D grow (Kaplan et al.'s fits were in nats of "
         "WebText2 loss)")


# --- Muennighoff et al. 2023: data-constrained ------------------------------------------------------------


def _effective(unique, repeats, rstar):
    """U + U·R*·(1 − exp(−R/R*)): repeated epochs are worth less, and nothing beyond ~R* repetitions."""
    return unique + unique * rstar * -np.expm1(-repeats / rstar)


def effective_data(inputs, p):
    """(N', D') of Muennighoff et al.'s eq. 5–6 for runs with N parameters, D tokens of which U are unique."""
    n, d, u = inputs["n"], inputs["d"], inputs["u"]
    r_d = np.maximum(d / u - 1.0, 0.0)
    u_n = np.minimum(u / TOKENS_PER_PARAM, n)
    r_n = np.maximum(n / u_n - 1.0, 0.0)
    return _effective(u_n, r_n, p["Rstar_N"]), _effective(np.minimum(u, d), r_d, p["Rstar_D"])


def _data_constrained(inputs, p):
    n_eff, d_eff = effective_data(inputs, p)
    return p["E"] + p["A"] / n_eff ** p["alpha"] + p["B"] / d_eff ** p["beta"]


DATA_CONSTRAINED = Law(
    name="data_constrained", title="Muennighoff et al.'s data-constrained law (repeated epochs)",
    formula="L = E + A/N'^alpha + B/D'^beta, D' = U_D + U_D R*_D (1 - exp(-R_D/R*_D)), R_D = D/U_D - 1; "
            "N' likewise with U_N = min(U_D/20, N), R_N = N/U_N - 1",
    citation="Muennighoff et al. 2023, Scaling Data-Constrained Language Models (arXiv:2305.16264)",
    inputs=("n", "d", "u"), target="loss",
    params=(Param("E", "irreducible loss", 0.0, 1e3, _below_min(0.0, 0.7)),
            Param("A", "scale of the (effective) model term", 1e-9, 1e26, (1e2, 1e4), log=True),
            Param("B", "scale of the (effective) data term", 1e-9, 1e26, (1e2, 1e4), log=True),
            Param("alpha", "exponent of the effective parameters N'", 0.0, 3.0, (0.2, 0.5)),
            Param("beta", "exponent of the effective tokens D'", 0.0, 3.0, (0.2, 0.5)),
            Param("Rstar_D", "repetitions of the data after which more epochs stop helping (half-life-like)",
                  1e-2, 1e4, (5.0, 30.0), log=True),
            Param("Rstar_N", "excess parameters (in multiples of U_N) beyond which more stop helping",
                  1e-2, 1e4, (5.0,), log=True)),
    predict=_data_constrained,
    note="needs each run's unique tokens (--u-col); with one epoch everywhere (U = D, N ≤ U/20) it is "
         "Chinchilla's law and R* is not identified")


# --- Gadre et al. 2024: the tied form in compute and token multiplier -------------------------------------


def _gadre(inputs, p):
    n, d = inputs["n"], inputs["d"]
    c, m = 6.0 * n * d, d / n
    return p["E"] + (p["a"] * m ** p["eta"] + p["b"] * m ** -p["eta"]) * c ** -p["eta"]


GADRE = Law(
    name="gadre", title="Gadre et al.'s over-training law",
    formula="L = E + (a M^eta + b M^-eta) C^-eta, C = 6ND, M = D/N",
    citation="Gadre et al. 2024, Language models scale reliably with over-training and on downstream tasks "
             "(arXiv:2403.08540)",
    inputs=("n", "d"), target="loss",
    params=(Param("E", "irreducible loss", 0.0, 1e3, _below_min(0.0, 0.5, 0.9)),
            Param("a", "coefficient of the over-training term (grows with M)", 1e-9, 1e30, (1e2, 1e4), log=True),
            Param("b", "coefficient of the under-training term (falls with M)", 1e-9, 1e30, (1e2, 1e4), log=True),
            Param("eta", "compute exponent (alpha = beta = 2 eta in Chinchilla's terms)", 0.0, 3.0,
                  (0.05, 0.15, 0.3))),
    predict=_gadre,
    note="Chinchilla's law with beta = alpha (a = A 6^eta, b = B 6^eta); fitted here with the same log-Huber "
         "objective as the other loss laws, not their curve_fit (papers.gadre has that)")


# --- one variable: saturating and broken power laws -------------------------------------------------------


def _saturating(inputs, p):
    return p["E"] + p["A"] * inputs["x"] ** -p["alpha"]


SATURATING = Law(
    name="saturating", title="saturating power law in one variable",
    formula="y = E + A x^-alpha",
    citation="Hestness et al. 2017, Deep Learning Scaling is Predictable, Empirically (arXiv:1712.00409); "
             "the one-variable form of Kaplan et al. 2020 with an irreducible term",
    inputs=("x",), target="loss",
    params=(Param("E", "the floor y approaches as x grows", 0.0, 1e6, _below_min(0.0, 0.5, 0.9)),
            Param("A", "scale of the power-law term", 1e-12, 1e30, _scale_of("x", 0.1, 0.3, 1.0), log=True),
            Param("alpha", "exponent of x", 0.0, 5.0, (0.1, 0.3, 1.0))),
    predict=_saturating)


def _broken(inputs, p):
    x = inputs["x"]
    # (1 + (x/d)^(1/f))^(−c1·f), in logs: the break term is exp(−c1·f·log1p(exp(log(x/d)/f))).
    t = np.logaddexp(0.0, (np.log(x) - np.log(p["d1"])) / p["f1"])
    return p["E"] + p["b"] * x ** -p["c0"] * np.exp(-p["c1"] * p["f1"] * t)


BROKEN = Law(
    name="broken", title="smoothly broken power law in one variable (one break)",
    formula="y = E + b x^-c0 (1 + (x/d1)^(1/f1))^(-c1 f1)",
    citation="Caballero et al. 2023, Broken Neural Scaling Laws, with one break (arXiv:2210.14891)",
    inputs=("x",), target="loss",
    params=(Param("E", "the floor y approaches as x grows", 0.0, 1e6, _below_min(0.0, 0.8)),
            Param("b", "scale of the power law before the break", 1e-12, 1e30, _scale_of("x", 0.1, 0.5),
                  log=True),
            Param("c0", "exponent before the break", 0.0, 5.0, (0.1, 0.5)),
            Param("c1", "change of the exponent at the break (after it: c0 + c1)", -5.0, 5.0, (-0.2, 0.3)),
            Param("d1", "where the break is, in units of x", 1e-30, 1e30, _quantiles_of("x", 0.25, 0.5, 0.75),
                  log=True),
            Param("f1", "sharpness of the break (smaller: sharper)", 1e-2, 1e2, (0.1, 1.0), log=True)),
    predict=_broken,
    note="the break must lie inside the runs' range of x to be identified; a break outside it sits at a bound")


# --- downstream: from the loss to a metric ----------------------------------------------------------------


def _downstream(inputs, p):
    return p["epsilon"] - p["k"] * np.exp(-p["gamma"] * inputs["loss"])


DOWNSTREAM = Law(
    name="downstream", title="loss-to-downstream link (exponential)",
    formula="Err = epsilon - k exp(-gamma L)",
    citation="Gadre et al. 2024, Language models scale reliably with over-training and on downstream tasks "
             "(arXiv:2403.08540)",
    inputs=("loss",), target="metric", space="linear", objective="squares",
    params=(Param("epsilon", "the error as the loss grows (chance error: a random model)", 0.0, 10.0,
                  (0.5, 0.8, 1.0)),
            Param("k", "how far the error falls below epsilon as the loss falls", 1e-6, 1e6, (1.0, 10.0, 100.0),
                  log=True),
            Param("gamma", "how fast the error falls with the loss", 1e-3, 1e2, (0.5, 2.0, 5.0), log=True)),
    predict=_downstream,
    note="the target is the downstream error (1 - accuracy); the input the model's loss (--loss-col)")


def _logit(inputs, p):
    z = p["a"] + p["b"] * inputs["x"]
    return p["floor"] + (1.0 - p["floor"]) / (1.0 + np.exp(-z))


LOGIT = Law(
    name="logit", title="bounded metric, linear on the logit above a floor",
    formula="y = floor + (1 - floor) sigmoid(a + b x)",
    citation="Ruan et al. 2024, Observational Scaling Laws and the Predictability of Language Model "
             "Performance (arXiv:2405.10938): their sigmoid link",
    inputs=("x",), target="metric", space="logit", objective="squares",
    params=(Param("floor", "the metric's floor (chance accuracy; fix it when known, e.g. --fix floor=0.25)",
                  0.0, 0.99, (0.0, 0.25)),
            Param("a", "logit above the floor at x = 0", -100.0, 100.0, (-2.0, 0.0, 2.0)),
            Param("b", "change of that logit per unit of x (negative: the metric falls as x grows)", -100.0,
                  100.0, (-3.0, -0.5, 0.5, 3.0))),
    predict=_logit,
    note="y must lie strictly between 0 and 1 (residuals are on its logit); x as given, so pass a log-compute "
         "or loss column")


LAWS = {law.name: law for law in (CHINCHILLA, KAPLAN, DATA_CONSTRAINED, GADRE, SATURATING, BROKEN, DOWNSTREAM, LOGIT)}
