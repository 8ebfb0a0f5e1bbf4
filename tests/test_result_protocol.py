"""The result protocol every fit result answers: params, bse in each parameter's own units, bse_log, conf_int,
predict, a status from the one vocabulary, summary(), a JSON to_dict() and a short repr."""

import json

import numpy as np
import pytest
import scalinglab as sl
from scalinglab.fitting.law import ScalingLaw
from scalinglab.fitting.results import STATUSES

TRUE = ScalingLaw(E=1.8, A=400.0, B=2000.0, alpha=0.34, beta=0.37)


@pytest.fixture(scope="module")
def runs_csv(tmp_path_factory):
    rng = np.random.default_rng(0)
    N = np.repeat(np.geomspace(2e7, 2e9, 8), 5)
    D = np.tile(np.geomspace(4e8, 4e10, 5), 8)
    L = TRUE.loss(N, D) * np.exp(0.005 * rng.standard_normal(N.size))
    path = tmp_path_factory.mktemp("runs") / "runs.csv"
    path.write_text("N,D,loss\n" + "".join(f"{n:.17g},{d:.17g},{x:.17g}\n" for n, d, x in zip(N, D, L)))
    return str(path)


@pytest.fixture(scope="module")
def law_fit(runs_csv):
    return sl.fit(runs_csv, bootstrap=60, seed=0)


def test_law_fit_answers_the_protocol(law_fit):
    fit = law_fit
    for attr in ("params", "bse", "bse_log", "conf_int", "predict", "status", "summary", "to_dict"):
        assert hasattr(fit, attr), attr
    assert fit.status in STATUSES
    assert set(fit.params) <= set(fit.bse) and set(fit.bse_log) == set(fit.params)
    assert all(np.isfinite(fit.bse[k]) for k in fit.params)
    assert len(repr(fit)) < 300
    json.dumps(fit.to_dict())
    assert isinstance(fit.summary(), str)
    assert np.all(np.isfinite(fit.predict({"n": np.array([1e8]), "d": np.array([1e9])})))


def test_law_fit_bse_is_in_the_parameters_own_units(law_fit):
    # params ± 1.96·bse is close to the percentile interval for a well-identified fit: this fails when bse is
    # the SE of ln A under the name A.
    ci = law_fit.conf_int(0.95)
    for k in ("E", "A", "B", "alpha", "beta"):
        lo, hi = ci[k]
        half = 1.96 * law_fit.bse[k]
        assert half == pytest.approx((hi - lo) / 2, rel=0.5), k
    for k in ("A", "B"):
        assert law_fit.bse[k] == pytest.approx(law_fit.params[k] * law_fit.bse_log[k], rel=0.5)
