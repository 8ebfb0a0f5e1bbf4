"""`scalinglab fit-curve` and `predict-curve`: a fit saved and predicted, and each bad input refused in one line."""

import json

import numpy as np
import pytest
from conftest import refused
from scalinglab.curves import laws
from scalinglab.schedules import Schedule

THETA = [3.0, 0.5, 0.5, 400.0, 2.0, 0.6, 0.6]


def write_runs(path, every=40, steps=2000, names=("cosine", "constant")):
    rows = ["run,step,lr,loss"]
    for name in names:
        lrs = Schedule(name, peak=3e-4, total=steps, warmup=200).lrs()
        at = np.arange(every, steps + 1, every)   # rows on the warmup's end: the rates interpolate exactly
        loss = laws.LAWS["multipower"].predict(THETA, laws.prepare(laws.Curve(name, lrs, at)))
        rows += [f"{name},{s},{float(lrs[s - 1])!r},{float(v)!r}" for s, v in zip(at, loss)]
    path.write_text("\n".join(rows) + "\n")
    return path


@pytest.fixture
def saved(tmp_path, capsys):
    from scalinglab.cli import main

    runs = write_runs(tmp_path / "runs.csv")
    assert main(["fit-curve", str(runs), "--bootstrap", "5", "--save", str(tmp_path / "fit.json"), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["fit"]["law"] == "multipower" and out["bootstrap"]["replicates"] == 5
    return tmp_path / "fit.json"


def test_fit_then_predict_a_named_schedule(saved, capsys):
    from scalinglab.cli import main

    assert main(["predict-curve", "wsd:peak=3e-4,cooldown=0.2,steps=3000,warmup=200", "--fit", str(saved),
                 "--at", "1000,3000", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    truth = laws.LAWS["multipower"].predict(THETA, laws.prepare(laws.Curve(
        "w", Schedule("wsd", peak=3e-4, total=3000, warmup=200, decay="geometric").lrs(), np.array([1000, 3000]))))
    # noise-free data from the law itself: the saved fit predicts an unseen WSD schedule (Luo et al.'s, a
    # geometric cooldown) to 1e-3 nats; the fit was bootstrapped, not calibrated: the parameter-only band only
    assert np.allclose(out["loss"], truth, atol=1e-3) and out["interval"] == "parameter-only"
    assert out["parameter_only_low"][1] <= out["parameter_only_high"][1] and out["low"] is None


def test_steps_not_increasing_is_refused(tmp_path, capsys):
    p = tmp_path / "r.csv"
    p.write_text("run,step,lr,loss\na,10,1e-3,4.0\na,20,1e-3,3.9\na,15,1e-3,3.8\n")
    refused(capsys, ["fit-curve", p], "steps not increasing", "line 4")


def test_negative_lr_is_refused(tmp_path, capsys):
    p = tmp_path / "r.csv"
    p.write_text("run,step,lr,loss\na,10,1e-3,4.0\na,20,-1e-3,3.9\na,30,1e-3,3.8\n")
    refused(capsys, ["fit-curve", p], "negative lr", "line 3")
    refused(capsys, ["predict-curve", "wsd:peak=-3e-4,steps=100", "--fit", p], "negative lr")


def test_fewer_points_than_parameters_is_refused(tmp_path, capsys):
    p = write_runs(tmp_path / "r.csv", every=400, steps=2000, names=("cosine",))
    refused(capsys, ["fit-curve", p], "run cosine", "fewer than the multipower law's 7 parameters")


def test_schedule_shorter_than_the_curve_is_refused(saved, tmp_path, capsys):
    refused(capsys, ["predict-curve", "cosine:peak=3e-4,steps=2000", "--fit", saved, "--at", "2500"],
            "shorter (2000 steps) than the curve", "step 2500")
    sched = tmp_path / "s.csv"
    sched.write_text("run,step,lr\na,1,1e-4\na,1000,3e-4\n")
    refused(capsys, ["predict-curve", sched, "--fit", saved, "--at", "1500"], "shorter (1000 steps)")


def test_a_file_that_is_not_a_saved_fit_is_refused(tmp_path, capsys):
    p = write_runs(tmp_path / "r.csv")
    refused(capsys, ["predict-curve", "constant:peak=1e-3,steps=100", "--fit", p], "not a curve fit saved")


def test_cli_law_names_mirror_the_library():
    from scalinglab.cli import curves as cli_curves

    assert set(cli_curves.LAWS) == set(laws.LAWS)


def _params(capsys, argv):
    from scalinglab.cli import main

    assert main(list(map(str, argv)) + ["--json"]) == 0
    return json.loads(capsys.readouterr().out)["fit"]["params"]


def test_the_cli_fits_notebook_06s_curves_identically(mirror, tmp_path, capsys):
    """Luo et al.'s 400M split three ways through the CLI: their registered curves, a CSV of sparse losses with a
    per-step schedule file, and one table giving every step's rate and losses where logged. Each must give the
    parameters notebook 06's library path gives (papers.luo), to the solver's tolerance."""
    from scalinglab.curves.data import luo_curves
    from scalinglab.papers import luo

    train, _ = luo.split("400M")
    ref = luo.fit_one("multipower", train).params
    names = [f"mpl-400m-{c.name.replace('_', '-')}" for c in train]
    via_dataset = _params(capsys, ["fit-curve"] + [a for n in names for a in ("--dataset", n)])
    losses, sched, dense = ["run,step,loss"], ["run,step,lr"], ["run,step,lr,loss"]
    curves = luo_curves("400M")
    for c in (curves[n] for n in luo.LUO_TRAIN):
        logged = dict(zip(c.at.tolist(), c.loss.tolist()))
        losses += [f"{c.name},{s},{v!r}" for s, v in logged.items()]
        sched += [f"{c.name},{s + 1},{lr!r}" for s, lr in enumerate(c.lrs.tolist())]
        dense += [f"{c.name},{s + 1},{lr!r},{logged.get(s + 1, '')!r}".replace(",''", ",")
                  for s, lr in enumerate(c.lrs.tolist())]
    for path, text in (("losses.csv", losses), ("schedule.csv", sched), ("dense.csv", dense)):
        (tmp_path / path).write_text("\n".join(text) + "\n")
    via_schedule = _params(capsys, ["fit-curve", tmp_path / "losses.csv", "--schedule", tmp_path / "schedule.csv"])
    via_dense = _params(capsys, ["fit-curve", tmp_path / "dense.csv"])
    for got in (via_dataset, via_schedule, via_dense):
        # the same points, rates and solver: equal to the solver's tolerances (xtol 1e-9), not merely close
        assert got.keys() == ref.keys() and all(np.isclose(got[k], ref[k], rtol=1e-6) for k in ref), (got, ref)
    # the interpolated lr column (logged every 128 steps) smears wsdcon_9's drop at step 8000: another fit
    interp = ["run,step,lr,loss"] + [f"{c.name},{s},{float(c.lrs[s - 1])!r},{v!r}" for c in train
                                     for s, v in zip(c.at.tolist(), c.loss.tolist())]
    (tmp_path / "interp.csv").write_text("\n".join(interp) + "\n")
    assert abs(_params(capsys, ["fit-curve", tmp_path / "interp.csv"])["C"] - ref["C"]) > 0.1
    assert abs(ref["C"] - 0.527) < 0.001   # notebook 06's 400M optimum


def test_a_schedule_that_disagrees_with_the_tables_rates_is_refused(tmp_path, capsys):
    runs = write_runs(tmp_path / "runs.csv", names=("cosine",))
    refused(capsys, ["fit-curve", runs, "--schedule", "constant:peak=3e-4,steps=2000,warmup=200"],
            "run cosine", "differs from the rate of step", "--schedule")
    refused(capsys, ["fit-curve", runs, "--schedule", "cosine=cosine:peak=3e-4,steps=1000,warmup=200"],
            "past the end of its schedule", "(1000 steps)")
    p = tmp_path / "nolr.csv"
    p.write_text("run,step,loss\na,10,4.0\na,20,3.9\n")
    refused(capsys, ["fit-curve", p, "--schedule", "b=constant:peak=1e-3,steps=100"],
            "run a: no lr column and no schedule", "run(s) b")
    refused(capsys, ["fit-curve", p, "--schedule", "a=constant:peak=1e-3,steps=100",
                     "--schedule", "a=cosine:peak=1e-3,steps=100"], "a second schedule")
    refused(capsys, ["fit-curve", p], "lacks column(s) lr")


def test_rows_with_an_empty_loss_carry_the_schedule_only(tmp_path, capsys):
    p = tmp_path / "r.csv"
    p.write_text("run,step,lr,loss\na,10,1e-3,4.0\na,11,1e-3,\na,20,1e-3,abc\n")
    refused(capsys, ["fit-curve", p], "line 4", "column loss is not a finite number: 'abc'")
    p.write_text("run,step,lr,loss\na,10,1e-3,\na,20,1e-3,\n")
    refused(capsys, ["fit-curve", p], "run a: no row has a loss")


def test_wsd_is_luo_et_als_geometric_cooldown_and_wsdld_the_linear_one():
    from scalinglab.curves.data import luo_lrs, parse_schedule

    for name in ("wsd", "wsdld"):
        ours = parse_schedule(f"{name}:peak=3e-4,steps=24000,warmup=2160,cooldown={4000 / 24000!r},floor=0.1")
        theirs = luo_lrs(f"{name}_20000_24000")
        # their warmup starts from 0 (linspace), ours from peak/warmup (nanoGPT's): equal after it
        assert np.allclose(ours[2160:], theirs[2160:], rtol=1e-12, atol=0)
    geo, lin = parse_schedule("wsd:peak=1,steps=100,cooldown=0.5"), parse_schedule("wsdld:peak=1,steps=100,cooldown=0.5")
    assert geo[75] == pytest.approx(0.1 ** 0.5) and lin[75] == pytest.approx(0.55)
    with pytest.raises(Exception, match="floor above 0"):
        parse_schedule("wsd:peak=1,steps=100,floor=0")


def test_a_calibrated_fit_is_saved_and_predict_curve_shows_its_interval(tmp_path, capsys):
    from scalinglab.cli import main

    runs = write_runs(tmp_path / "runs.csv", names=("cosine", "constant", "step"))
    assert main(["fit-curve", str(runs), "--calibrate", "--save", str(tmp_path / "cal.json")]) == 0
    assert "3 schedules left out in turn" in capsys.readouterr().out
    assert main(["predict-curve", "wsd:peak=3e-4,steps=3000,warmup=200", "--fit", str(tmp_path / "cal.json"),
                 "--at", "3000", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["interval"] == "calibrated" and out["calibration"]["calibration"]["unit"] == "schedule"
    assert 0 < out["low"][0] <= out["loss"][0] <= out["high"][0] and out["parameter_only_low"] is None
    refused(capsys, ["fit-curve", write_runs(tmp_path / "two.csv"), "--calibrate"], "needs at least 3")


def test_a_fit_saved_before_calibration_still_loads_and_says_what_it_lacks(saved, capsys):
    from scalinglab.cli import main

    d = json.loads(saved.read_text())
    d["format"] = "scalinglab-curve-fit/1"
    del d["calibration"]
    saved.write_text(json.dumps(d))
    assert main(["predict-curve", "cosine:peak=3e-4,steps=2000", "--fit", str(saved), "--at", "2000"]) == 0
    out = capsys.readouterr().out
    assert "no calibrated interval (the fit was saved without --calibrate)" in out and "parameter-only band" in out
