"""The library's front door and its one result class: `import scalinglab as sl; sl.fit(...)` gives a LawFit for
every law, the same fit `scalinglab fit` prints."""

import json

import numpy as np
import pytest
import scalinglab as sl
from scalinglab.cli import main
from scalinglab.errors import UserError
from scalinglab.fitting.chinchilla.law import ScalingLaw

TRUE = ScalingLaw(E=1.8, A=400.0, B=2000.0, alpha=0.34, beta=0.37)


@pytest.fixture(scope="module")
def runs_csv(tmp_path_factory):
    rng = np.random.default_rng(0)
    N = np.repeat(np.geomspace(2e7, 2e9, 8), 5)
    D = np.tile(np.geomspace(4e8, 4e10, 5), 8)
    L = TRUE.loss(N, D) * np.exp(0.01 * rng.standard_normal(N.size))
    path = tmp_path_factory.mktemp("runs") / "runs.csv"
    path.write_text("N,D,loss\n" + "".join(f"{n:.17g},{d:.17g},{x:.17g}\n" for n, d, x in zip(N, D, L)))
    return str(path)


def test_sl_fit_is_the_fit_the_command_prints(runs_csv, capsys):
    fit = sl.fit(sl.load_runs(runs_csv), bootstrap=50)
    assert main(["fit", runs_csv, "--bootstrap", "50", "--json"]) == 0
    cli = json.loads(capsys.readouterr().out)
    assert cli["params"] == pytest.approx(fit.params, rel=1e-12) and cli["a"] == pytest.approx(fit.a, rel=1e-12)
    assert cli["bootstrap"]["ci"]["a"] == pytest.approx(list(fit.conf_int()["a"]), rel=1e-12)


def test_one_result_class_for_every_law(runs_csv):
    chin, kap = sl.fit(runs_csv, bootstrap=30), sl.fit(runs_csv, law="kaplan", bootstrap=30)
    assert type(chin) is type(kap) is sl.LawFit
    for f in (chin, kap):
        assert set(f.params) == set(f.law.names) and f.status == "converged"
        assert set(f.to_dict()["params"]) == set(f.law.names)
        # bse: every SE in its parameter's own units, so params ± bse reads right for E, A and B too;
        # bse_log: the SE of the log of the scale parameters (a relative error), NaN for the others.
        for name in f.law.names:
            draws = f.bootstrap.column(name)
            assert f.bse[name] == pytest.approx(np.std(draws, ddof=1), rel=1e-9)
        assert set(f.bse_log) == set(f.law.names)
        for name, se in f.bse_log.items():
            if name in f.law.scale_params:
                assert se == pytest.approx(np.std(np.log(f.bootstrap.column(name)), ddof=1), rel=1e-9)
            else:
                assert np.isnan(se)
    # A narrower level gives a narrower interval from the same replicates.
    lo95, hi95 = chin.conf_int()["alpha"]
    lo50, hi50 = chin.conf_int(0.5)["alpha"]
    assert lo95 <= lo50 <= hi50 <= hi95 and hi50 - lo50 < hi95 - lo95
    # Chinchilla's closed form allocates compute; a law without one says so instead of answering.
    (row,) = chin.allocate(1e21)
    assert row["n_opt"] == pytest.approx(chin.scaling_law.n_opt(1e21)) and row["ci"]["n_opt"][0] < row["n_opt"]
    with pytest.raises(UserError, match="no closed-form"):
        kap.allocate(1e21)


def test_columns_by_role_and_selection(runs_csv):
    import pandas as pd

    table = pd.read_csv(runs_csv).rename(columns={"N": "params", "D": "tokens"})
    table["flops"] = 6 * table["params"] * table["tokens"]
    by_d = sl.fit(table, n="params", d="tokens")
    by_c = sl.fit(table, n="params", c="flops")
    assert by_c.params == pytest.approx(by_d.params, rel=1e-6)
    small = sl.fit(table, n="params", d="tokens", where=["params<1e9"])
    assert small.n_rows == int((table["params"] < 1e9).sum())


def test_dir_lists_what_all_promises():
    import scalinglab as sl

    assert dir(sl) == sorted(sl.__all__)
    for name in sl.__all__:
        assert getattr(sl, name) is not None


def test_sl_fit_curve_is_the_fit_fit_curve_prints(tmp_path, capsys):
    """``sl.fit_curve`` and `scalinglab fit-curve` are one path (``curves.report.fit_source``): a CSV, the same
    rows as a DataFrame or a dict of columns, and the command give the same parameters, near the truth."""
    import pandas as pd
    from scalinglab.curves.data import parse_schedule
    from scalinglab.curves.fit import CurveFit
    from scalinglab.curves.laws import Curve

    truth = dict(L0=3.0, A=0.5, alpha=0.5, B=400.0, C=2.0, beta=0.4, gamma=0.6)
    law = CurveFit("multipower", truth, 0.0, 0, ())
    rows = []
    for name in ("cosine", "constant", "wsd"):
        lrs = parse_schedule(f"{name}:peak=3e-3,steps=2000,warmup=100")
        at = np.arange(150, 2001, 50)
        loss = dict(zip(at.tolist(), law.predict(Curve(name, lrs, at)).tolist()))
        rows += [dict(run=name, step=s + 1, lr=float(lr), loss=loss.get(s + 1)) for s, lr in enumerate(lrs)]
    path = tmp_path / "curves.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    via_path = sl.fit_curve(str(path)).fit.params
    via_frame = sl.fit_curve(pd.read_csv(path)).fit.params
    via_dict = sl.fit_curve({k: pd.read_csv(path)[k].tolist() for k in ("run", "step", "lr", "loss")}).fit.params
    assert main(["fit-curve", str(path), "--json"]) == 0
    cli = json.loads(capsys.readouterr().out)["fit"]["params"]
    for got in (via_frame, via_dict, cli):
        assert got.keys() == via_path.keys() and all(np.isclose(got[k], via_path[k], rtol=1e-9) for k in got)
    assert via_path["L0"] == pytest.approx(3.0, abs=0.02)
    assert len(sl.fit_curve(str(path), where=["run!=wsd"]).fit.curves) == 2
    assert sl.fit_curve(sl.load_runs(str(path))).fit.params == via_path   # Runs, as sl.load_runs gives them
    assert sl.fit_curve(path, where="run!=wsd").fit.curves == ("cosine", "constant")   # a Path; one condition
    for kw, message in ((dict(), "give runs"), (dict(runs=str(path), dataset="mpl-400m-cosine-24000"), "one of them"),
                        (dict(runs=str(path), bootstrap=1), "one resample"),
                        (dict(runs=str(path), where=["nope>1"]), "no column 'nope'"),
                        (dict(runs=["mpl-400m-cosine-24000"]), "registered curves are dataset="),
                        (dict(runs=3.0), "runs must be Runs"), (dict(runs=str(path), law=["x"]), "a curve law is one"),
                        (dict(runs=str(path), schedules={"a": "cosine:peak=1e-3,steps=9"}), "schedules: give a str"),
                        (dict(dataset=[3]), "dataset: give a string"), (dict(runs=str(path), calibrate="yes"),
                                                                         "True or False")):
        with pytest.raises(UserError, match=message):
            sl.fit_curve(**kw)


def test_subsampling_is_an_option_of_the_fit_with_hoffmanns_draws(runs_csv):
    # sl.fit(subsample=0.8) is Hoffmann et al.'s refits on 80% of the runs without replacement: the same
    # replicates as the batched bootstrap given those weights, each refit on 32 distinct runs of 40, and the
    # result says it is subsampling, not a bootstrap.
    from scalinglab.fitting.chinchilla import approach3 as F
    from scalinglab.fitting.rows import resample_indices, subsample_counts

    fit = sl.fit(runs_csv, bootstrap=40, seed=0)
    sub = sl.fit(runs_csv, bootstrap=40, seed=1, subsample=0.8)
    N, D, L = fit.data.inputs["n"], fit.data.inputs["d"], fit.data.y
    same = F.bootstrap(fit, N, D, L, counts=subsample_counts(len(L), 40, 0.8, seed=1))
    assert np.array_equal(sub.bootstrap.samples, same.samples) and sub.params == fit.params
    assert sub.bootstrap.fraction == 0.8 and sub.bootstrap.to_dict()["fraction"] == 0.8
    assert "subsampling" in sub.bootstrap.summary() and "80% subsamples" in sub.summary()
    assert "fraction" not in fit.bootstrap.to_dict()
    picks = list(resample_indices(40, 5, 0, fraction=0.8))
    assert all(len(p) == len(set(p)) == 32 for p in picks)
    groups = np.repeat(np.arange(8), 5)
    for p in resample_indices(40, 5, 0, groups=groups, fraction=0.5):   # whole groups, 4 of the 8
        assert len(p) == 20 and len(set(groups[p])) == 4
    kaplan = sl.fit(runs_csv, law="kaplan", bootstrap=10, subsample=0.5)   # the generic solver's bootstrap too
    assert kaplan.bootstrap.fraction == 0.5 and "subsampling" in kaplan.bootstrap.summary()


@pytest.mark.parametrize("kwargs, message", [
    (dict(bootstrap=20, subsample=1.0), "in \\(0, 1\\)"),
    (dict(subsample=0.8), "needs a number of refits"),
    (dict(subsample=0.8, options=sl.FitOptions()), "subsample= given beside options="),
])
def test_a_subsample_it_cannot_honour_is_refused(runs_csv, kwargs, message):
    with pytest.raises(UserError, match=message):
        sl.fit(runs_csv, **kwargs)
