"""Solvers are plug-ins behind one table (scalinglab.fitting.solvers): every law names one, a name is one
estimator wherever it is called, and no module outside the solvers' own calls a solver's internals."""

import re
from pathlib import Path

import numpy as np
import pytest
from scalinglab.errors import UserError
from scalinglab.fitting import laws, solvers
from scalinglab.fitting.chinchilla.approach3 import CHINCHILLA, fit_arrays
from scalinglab.fitting.chinchilla.law import ScalingLaw
from scalinglab.fitting.frontier.varpro import fit_varpro
from scalinglab.fitting.options import FitOptions

LIB = Path(__file__).resolve().parents[1] / "lib" / "scalinglab"
# The solvers' own modules: the table, its entries and the Newton solver they share.
SOLVER_MODULES = {"fitting/solvers.py", "fitting/chinchilla/approach3.py", "fitting/chinchilla/newton.py",
                  "fitting/chinchilla/lbfgs_reference.py", "fitting/frontier/varpro.py", "fitting/laws/base.py",
                  "curves/fit.py"}
INTERNALS = re.compile(r"\b(batched_solve|fit_arrays|fit_varpro|generic_solver|_local_solve|huber_solver|"
                       r"early_stopped_solver|lbfgs_per_start)\(")


def _runs(seed=0, n=40):
    rng = np.random.default_rng(seed)
    N = np.exp(rng.uniform(np.log(1e7), np.log(1e9), n))
    D = np.exp(rng.uniform(np.log(1e9), np.log(1e11), n))
    L = ScalingLaw(1.7, 400.0, 410.0, 0.34, 0.28).loss(N, D) * np.exp(rng.normal(0, 0.01, n))
    return N, D, L


def test_every_law_names_a_solver_that_fits_it():
    for name in laws.names():
        law = laws.get(name)
        solver = solvers.get(law.solver)
        solver.check(law)   # raises if the solver does not fit this law
        assert solver.minimises and solver.result in ("LawFit", "VarproFit")


def test_no_module_outside_the_solvers_calls_their_internals():
    calls = []
    for path in LIB.rglob("*.py"):
        rel = path.relative_to(LIB).as_posix()
        if rel in SOLVER_MODULES:
            continue
        for i, line in enumerate(path.read_text().splitlines(), 1):
            if INTERNALS.search(line) and not line.lstrip().startswith(("def ", "#")):
                calls.append(f"{rel}:{i}: {line.strip()}")
    assert calls == []


def test_the_notebooks_fit_through_the_front_door_not_a_solver_s_internals():
    """A notebook's fit goes through ``sl.fit`` (or a study that does): none calls a solver's function."""
    import json

    calls = []
    for path in sorted((LIB.parents[1] / "notebooks").glob("*.ipynb")):
        for k, cell in enumerate(json.loads(path.read_text())["cells"]):
            for line in "".join(cell["source"]).splitlines() if cell["cell_type"] == "code" else ():
                if INTERNALS.search(line) or re.search(r"fitting(\.varpro| import varpro)", line):
                    calls.append(f"{path.name} cell {k}: {line.strip()}")
    assert calls == []


def test_variable_projection_is_a_solver_of_the_front_door():
    """``sl.fit(solver="varpro")`` reads the runs as every fit does and returns the solver's own result,
    bit-identical to calling it; options it would ignore are refused."""
    import scalinglab as sl

    N, D, L = _runs(5)
    fit = sl.fit({"N": N, "D": D, "loss": L}, solver="varpro")
    direct = fit_varpro(N, D, L)
    assert type(fit).__name__ == "VarproFit" and fit.params == direct.params and fit.a_ci == direct.a_ci
    assert np.array_equal(fit.data.y, L) and fit.status == "converged"
    for kw, message in ((dict(bootstrap=10), "a bootstrap"), (dict(fixed={"E": 1.7}), "fixed parameters"),
                        (dict(tied={"beta": "alpha"}), "tied parameters"), (dict(delta=0.01), "Huber delta")):
        with pytest.raises(UserError, match=f"solver varpro fits every parameter .*for {message}"):
            sl.fit({"N": N, "D": D, "loss": L}, solver="varpro", **kw)
    with pytest.raises(UserError, match="fits training curves"):
        sl.fit({"N": N, "D": D, "loss": L}, solver="curve-huber")
    with pytest.raises(UserError, match=r"parameters set on the law \(E\)"):   # a law's own settings, not dropped
        sl.fit({"N": N, "D": D, "loss": L}, law=CHINCHILLA.set("E", value=1.0, vary=False), solver="varpro")
    half = sl.fit({"N": N, "D": D, "loss": L}, solver="varpro", level=0.5)
    assert half.level == 0.5 and half.a_ci[1] - half.a_ci[0] < fit.a_ci[1] - fit.a_ci[0]


def test_the_generic_and_newton_solvers_find_one_optimum_on_epoch_s_rows():
    """What docs/cli.md says of `fit --solver least-squares`: on Epoch's 240 runs the two optima agree to 1e-5."""
    import scalinglab as sl

    runs = sl.load_runs(dataset="epoch-chinchilla")
    for drop in (0, 5):
        a, b = sl.fit(runs, drop_highest=drop), sl.fit(runs, drop_highest=drop, solver="least-squares")
        assert a.status == b.status == "converged" and b.solver == "least-squares"
        assert all(abs(b.params[k] / a.params[k] - 1) < 1e-5 for k in a.params), (a.params, b.params)


def test_a_name_is_one_estimator_wherever_it_is_called():
    N, D, L = _runs()
    by_name = solvers.solve("varpro", CHINCHILLA, {"n": N, "d": D}, L, tol=1e-7)
    direct = fit_varpro(N, D, L, tol=1e-7)
    assert by_name.params == direct.params and by_name.a_ci == direct.a_ci
    newton = solvers.solve("chinchilla-newton", CHINCHILLA, {"n": N, "d": D}, L, options=FitOptions())
    assert newton.params == fit_arrays(N, D, L, FitOptions()).params
    assert newton.params == laws.fit_law(CHINCHILLA, {"n": N, "d": D}, L).params


def test_the_refit_is_the_bootstrap_solve():
    # Resample weights refitted by the solver's refit from the fit are the bootstrap's replicates: the same
    # Newton solve, so the same parameters for the same counts.
    from scalinglab.fitting.chinchilla.approach3 import bootstrap

    N, D, L = _runs(1)
    fit = fit_arrays(N, D, L)
    rng = np.random.default_rng(3)
    W = rng.multinomial(len(L), np.full(len(L), 1 / len(L)), size=5).astype(float)
    th, ok = solvers.get("chinchilla-newton").refit(np.repeat(fit.theta[None, :], 5, axis=0), {"n": N, "d": D},
                                                   L, W, fit.options)
    boot = bootstrap(fit, N, D, L, counts=W)
    assert ok.all() and np.allclose(th[:, 3], boot.column("alpha")) and np.allclose(th[:, 4], boot.column("beta"))


def test_refusals_name_the_solver_and_the_law():
    with pytest.raises(UserError, match="no solver 'nope'; solvers: least-squares, chinchilla-newton, lbfgs-hoffmann, varpro, curve-huber, "
                       "curve-early-stopped"):
        solvers.get("nope")
    N, D, L = _runs()
    with pytest.raises(UserError, match="solver varpro fits chinchilla, not law kaplan"):
        solvers.solve("varpro", laws.get("kaplan"), {"n": N, "d": D}, L)
    with pytest.raises(UserError, match="solver least-squares has no batched refit"):
        solvers.get("least-squares").refit(None, {}, None, None, None)


def _curves():
    from scalinglab.curves.laws import LAWS, Curve, prepare

    steps = 400
    lrs = {"constant": np.full(steps, 3e-4), "cosine": 3e-4 * (0.55 + 0.45 * np.cos(np.pi * np.arange(steps) / steps))}
    truth = np.array([2.0, 1.2, 0.4, 300.0, 2.0, 0.5, 0.5])
    rng = np.random.default_rng(5)
    curves = []
    for name, lr in lrs.items():
        at = np.arange(20, steps + 1, 20)
        c = Curve(name, lr, at)
        loss = LAWS["multipower"].predict(truth, prepare(c)) * np.exp(rng.normal(0, 0.002, len(at)))
        curves.append(Curve(name, lr, at, loss))
    return curves


def test_the_curve_solvers_are_in_the_table_and_their_results_name_them():
    from scalinglab.curves import fit as CF
    from scalinglab.curves.laws import LAWS, prepare

    assert set(solvers.get("curve-huber").laws) == set(LAWS)
    curves = _curves()
    fit = CF.fit_curves(curves, "multipower")
    preps = [prepare(c) for c in curves]
    logy = np.log(np.concatenate([c.loss for c in curves]))
    by_name = solvers.solve("curve-huber", LAWS["multipower"], {"curves": curves, "prepared": preps}, logy)
    assert by_name.params == fit.params and fit.solver == "curve-huber" and fit.to_dict()["solver"] == "curve-huber"
    early = CF.fit_early_stopped(curves)
    assert early.solver == "curve-early-stopped" and early.to_dict()["procedure"] == "early-stopped AdamW"
    with pytest.raises(UserError, match="solver curve-early-stopped fits multipower, not law tissue"):
        solvers.solve("curve-early-stopped", LAWS["tissue"], {"curves": curves, "prepared": preps}, logy)
    # the bootstrap's replicate: one solve from the fit capped at 100 evaluations, nothing else
    one = solvers.solve("curve-huber", LAWS["multipower"], {"curves": curves, "prepared": preps}, logy,
                        theta0=fit.theta, only=100)
    local = CF._local_solve(LAWS["multipower"], preps, logy, fit.theta, fit.delta, max_nfev=100)
    assert np.array_equal(one.theta, local[0]) and one.objective == local[1]


def test_solvers_are_told_apart_by_what_they_are_and_results_name_them():
    # Which solver fits any law from the law's own parameters is a property of the solver, not its spelling: no
    # module compares a solver's name to tell the generic one from a law's own.
    assert [s.name for s in solvers.SOLVERS.values() if s.generic] == ["least-squares"]
    by_string = re.compile(r"""solver\s*[!=]=\s*["']""")
    assert [p.relative_to(LIB).as_posix() for p in LIB.rglob("*.py") if by_string.search(p.read_text())] == []
    N, D, L = _runs()
    newton = laws.fit_law(CHINCHILLA, {"n": N, "d": D}, L)
    generic = laws.fit_law(CHINCHILLA, {"n": N, "d": D}, L, FitOptions(solver="least-squares"))
    assert newton.to_dict()["solver"] == "chinchilla-newton" and newton.to_dict()["start"] == "grid"
    assert generic.to_dict()["solver"] == "least-squares" and "start" not in generic.to_dict()
    for k in newton.params:   # two solvers of one objective reach one optimum
        assert generic.params[k] == pytest.approx(newton.params[k], rel=1e-3), k
    assert laws.fit_law(laws.get("kaplan"), {"n": N, "d": D}, L).to_dict()["solver"] == "least-squares"


def test_the_newton_solver_s_settings_are_its_own_and_only_it_takes_them():
    """``FitOptions`` is law-agnostic: Chinchilla's Newton settings live in ``NewtonSettings``, its defaults are
    the fit without them, a changed setting changes that solver's fit, and another solver refuses them."""
    from scalinglab.fitting.chinchilla.settings import NewtonSettings
    from scalinglab.fitting.laws.base import fit_law

    N, D, L = _runs()
    x = {"n": N, "d": D}
    plain = fit_law(CHINCHILLA, x, L, FitOptions())
    assert FitOptions(settings=NewtonSettings()) == FitOptions()   # the defaults, given or not, are one set
    assert plain.n_starts == 4500
    one = fit_law(CHINCHILLA, x, L, FitOptions(settings=NewtonSettings(start="varpro")))
    assert one.n_starts == 1 and one.to_dict()["start"] == "varpro"
    assert one.params == pytest.approx(plain.params, rel=1e-5)
    narrow = fit_law(CHINCHILLA, x, L, FitOptions(settings=NewtonSettings(upper=(5.0, 60.0, 60.0, 0.3, 5.0))))
    assert narrow.status == "at_bound" and narrow.at_bound == ("alpha",)
    with pytest.raises(UserError, match="not solver least-squares's; it has no settings"):
        fit_law(CHINCHILLA, x, L, FitOptions(solver="least-squares", settings=NewtonSettings(n_refine=10)))
    with pytest.raises(UserError, match="start must be one of grid, varpro"):
        NewtonSettings(start="lbfgs")
    with pytest.raises(UserError, match="settings must be a solver's settings"):
        FitOptions(settings={"start": "varpro"})


def test_fit_picks_the_solver_on_the_command_line(tmp_path, capsys):
    """`fit --solver least-squares` is `sl.fit(solver="least-squares")`, named in its output; a solver that
    cannot fit the law, and Newton-only flags beside the generic solver, are refused in one line."""
    import json

    import scalinglab as sl
    from scalinglab.cli import main

    N, D, L = _runs(3)
    path = tmp_path / "runs.csv"
    path.write_text("N,D,loss\n" + "".join(f"{float(n)!r},{float(d)!r},{float(v)!r}\n" for n, d, v in zip(N, D, L)))
    assert main(["fit", str(path), "--solver", "least-squares", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    front = sl.fit(str(path), solver="least-squares")
    assert out["solver"] == "least-squares" and out["params"] == pytest.approx(front.params, rel=1e-12)
    newton = sl.fit(str(path))
    assert front.params == pytest.approx(newton.params, rel=1e-3)   # two estimators of one optimum
    assert main(["fit", str(path), "--solver", "least-squares"]) == 0
    assert "solver least-squares" in capsys.readouterr().out
    for argv, message in ((["--law", "kaplan", "--solver", "chinchilla-newton"], "fits chinchilla, not law kaplan"),
                          (["--solver", "least-squares", "--start", "varpro"], "--start with --solver least-squares"),
                          (["--solver", "least-squares", "--save", str(tmp_path / "f.slfit")], "--save with")):
        assert main(["fit", str(path), *argv]) == 2
        err = capsys.readouterr().err.strip()
        assert message in err and "\n" not in err and "Traceback" not in err


def test_hoffmann_s_procedure_as_written_is_a_solver_and_its_early_stop_is_its_status(tmp_path, capsys):
    """"lbfgs-hoffmann" is scipy's L-BFGS-B from Hoffmann's grid, the best start kept: through ``sl.fit`` it is
    exactly ``lbfgs_per_start``'s best; on the averaged loss it stops short and says so; it takes its own settings
    only and refuses what it would ignore, on the command line too."""
    import scalinglab as sl
    from scalinglab.cli import main
    from scalinglab.fitting.chinchilla.lbfgs_reference import LbfgsSettings, lbfgs_per_start
    from scalinglab.fitting.chinchilla.settings import NewtonSettings, hoffmann_grid
    from scalinglab.fitting.laws.base import fit_law

    N, D, L = _runs(4)
    x = {"n": N, "d": D}
    newton = fit_law(CHINCHILLA, x, L)
    fits = {}
    for reduction in ("sum", "mean"):
        opts = FitOptions(solver="lbfgs-hoffmann", settings=LbfgsSettings(reduction=reduction, stride=50))
        fit = fits[reduction] = fit_law(CHINCHILLA, x, L, opts)
        th, f = lbfgs_per_start(N, D, L, hoffmann_grid()[::50], reduction=reduction)
        best = int(np.argmin(f))
        assert fit.solver is None or fit.solver == "lbfgs-hoffmann"
        assert fit.to_dict()["solver"] == "lbfgs-hoffmann" and fit.n_starts == 90
        assert fit.objective == float(f[best]) and fit.scaling_law.params == ScalingLaw(*np.r_[
            np.exp(th[best][:3]), th[best][3:]]).params
    # On the sum it reaches the Newton optimum's objective; on the mean (40 times smaller) it stops above it.
    assert fits["sum"].objective == pytest.approx(newton.objective, rel=1e-4)
    assert fits["mean"].objective > newton.objective * (1 + 1e-3)
    assert fits["mean"].status == "failed" and "stopped at gradient" in fits["mean"].reason
    assert fits["mean"].reason in fits["mean"].summary()
    with pytest.raises(UserError, match="for fixed parameters, use the chinchilla-newton or least-squares"):
        fit_law(CHINCHILLA, x, L, FitOptions(solver="lbfgs-hoffmann", fixed={"E": 1.7}))
    assert fits["mean"].to_dict()["reason"] == fits["mean"].reason and "reason" not in newton.to_dict()
    # Called by name with the options alone, it reads them: nothing held, resampled or bounded is dropped.
    for opts, what in ((FitOptions(solver="lbfgs-hoffmann", fixed={"E": 1.7}), "fixed parameters"),
                       (FitOptions(solver="lbfgs-hoffmann").with_resampling(20), "a bootstrap"),
                       (FitOptions(solver="lbfgs-hoffmann", objective="squares"), "least squares")):
        with pytest.raises(UserError, match=f"for {what}, use"):
            solvers.solve("lbfgs-hoffmann", CHINCHILLA, x, L, options=opts)
    with pytest.raises(UserError, match="for parameters set on the law"):
        fit_law(CHINCHILLA.set("E", upper=1.5), x, L, FitOptions(solver="lbfgs-hoffmann"))
    with pytest.raises(UserError, match="for a bootstrap"):
        fit_law(CHINCHILLA, x, L, FitOptions(solver="lbfgs-hoffmann").with_resampling(20))
    with pytest.raises(UserError, match="not solver lbfgs-hoffmann's; it takes LbfgsSettings"):
        fit_law(CHINCHILLA, x, L, FitOptions(solver="lbfgs-hoffmann", settings=NewtonSettings(n_refine=10)))
    with pytest.raises(UserError, match="not solver chinchilla-newton's"):
        fit_law(CHINCHILLA, x, L, FitOptions(settings=LbfgsSettings(reduction="mean")))
    for bad, message in (({"reduction": "median"}, "reduction must be one of sum, mean"),
                         ({"stride": 0}, "stride 0"), ({"stride": True}, "stride True")):
        with pytest.raises(UserError, match=message):
            LbfgsSettings(**bad)
    assert sl.LbfgsSettings is LbfgsSettings
    path = tmp_path / "runs.csv"
    path.write_text("N,D,loss\n" + "".join(f"{float(n)!r},{float(d)!r},{float(v)!r}\n" for n, d, v in zip(N, D, L)))
    for argv, message in ((["--start", "varpro"], "--start with --solver lbfgs-hoffmann"),
                          (["--save", str(tmp_path / "f.slfit")], "--save with --solver lbfgs-hoffmann")):
        assert main(["fit", str(path), "--solver", "lbfgs-hoffmann", *argv]) == 2
        err = capsys.readouterr().err.strip()
        assert message in err and "\n" not in err and "Traceback" not in err


def test_tie_exponents_on_the_command_line_beside_held_or_tied_exponents(tmp_path, capsys):
    """--tie-exponents with one exponent held holds both; with both held at one value it fits them; at two values,
    or beside --tie naming an exponent, it is one line or the same tie."""
    import json

    from scalinglab.cli import main

    N, D, L = _runs(5)
    path = tmp_path / "runs.csv"
    path.write_text("N,D,loss\n" + "".join(f"{float(n)!r},{float(d)!r},{float(v)!r}\n" for n, d, v in zip(N, D, L)))
    outs = {}
    for key, argv in (("one", ["--fix", "alpha=0.3"]), ("both", ["--fix", "alpha=0.3", "--fix", "beta=0.3"]),
                      ("tie", ["--tie", "alpha=beta"]), ("plain", [])):
        assert main(["fit", str(path), "--tie-exponents", *argv, "--json"]) == 0, key
        outs[key] = json.loads(capsys.readouterr().out)
    assert outs["one"]["params"] == pytest.approx(outs["both"]["params"], rel=1e-12)
    assert outs["one"]["fixed"] == {"alpha": 0.3, "beta": 0.3} and outs["one"]["n_free"] == 3
    assert outs["tie"]["params"] == pytest.approx(outs["plain"]["params"], rel=1e-9) and outs["plain"]["n_free"] == 4
    assert main(["fit", str(path), "--tie-exponents", "--fix", "alpha=0.3", "--fix", "beta=0.4"]) == 2
    err = capsys.readouterr().err.strip()
    assert "tied exponents need alpha = beta, but they are fixed at 0.3 and 0.4" in err and "\n" not in err


def test_tie_exponents_beside_a_tie_of_an_exponent_on_the_command_line(tmp_path, capsys):
    """--tie-exponents beside --tie beta=alpha is that tie (with a held alpha too); beside another tie of an
    exponent it is one line naming both, before the runs are read."""
    import json

    from scalinglab.cli import main

    N, D, L = _runs(6)
    path = tmp_path / "runs.csv"
    path.write_text("N,D,loss\n" + "".join(f"{float(n)!r},{float(d)!r},{float(v)!r}\n" for n, d, v in zip(N, D, L)))
    outs = []
    for argv in (["--fix", "alpha=0.3", "--tie", "beta=alpha"], ["--fix", "alpha=0.3"], ["--fix", "beta=0.3"]):
        assert main(["fit", str(path), "--tie-exponents", *argv, "--json"]) == 0, argv
        outs.append(json.loads(capsys.readouterr().out))
    assert outs[0]["params"] == pytest.approx(outs[1]["params"], rel=1e-12)
    assert outs[1]["params"] == pytest.approx(outs[2]["params"], rel=1e-12) and outs[2]["n_free"] == 3
    assert outs[2]["fixed"] == {"alpha": 0.3, "beta": 0.3}
    assert main(["fit", str(tmp_path / "absent.csv"), "--tie-exponents", "--tie", "beta=1.1*alpha",
                 "--solver", "least-squares"]) == 2
    err = capsys.readouterr().err.strip()
    assert "--tie-exponents holds beta = alpha, but --tie gives beta = 1.1*alpha" in err and "\n" not in err
