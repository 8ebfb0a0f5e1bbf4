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
        "w", Schedule("wsd", peak=3e-4, total=3000, warmup=200).lrs(), np.array([1000, 3000]))))
    # noise-free data from the law itself: the saved fit predicts an unseen WSD schedule to 1e-3 nats
    assert np.allclose(out["loss"], truth, atol=1e-3) and out["low"][1] <= out["high"][1]


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
