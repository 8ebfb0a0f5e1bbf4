"""`scalinglab envelope` (Approach 1 from the shell): synthetic curves, Gemstones, bad input."""

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from scalinglab.cli import main
from scalinglab.fitting.frontier import envelope

# Hoffmann's printed law, and a second one (Epoch's α, β) whose exponent lies 0.036 higher.
E0, A, B = 1.69, 406.4, 410.7
HOFFMANN, EPOCH = (0.34, 0.28), (0.3478, 0.3658)


def law_curves(alpha, beta, n_sizes=16, **extra):
    """Runs of 16 sizes (1e7-1e10) on L = E + A/N^α + B/D^β exactly, 60 checkpoints from 1e7 to 3e12 tokens."""
    parts = []
    for i, n in enumerate(np.logspace(7, 10, n_sizes)):
        d = np.logspace(7, 12.5, 60)
        parts.append(pd.DataFrame({"run": f"r{i:02d}", "N": n, "tokens": d,
                                   "loss": E0 + A / n**alpha + B / d**beta, **extra}))
    return pd.concat(parts, ignore_index=True)


def write(tmp_path, df, name="curves.csv"):
    path = tmp_path / name
    df.to_csv(path, index=False)
    return path


def run_json(capsys, *argv):
    assert main(["envelope", *map(str, argv), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def library(df, **kw):
    """fit_envelope as the CLI should call it on a CSV with the default columns (C = 6·N·tokens)."""
    opts = {k: kw.pop(k) for k in ("method", "drop_edges", "n_boot", "level", "seed") if k in kw}
    return envelope.fit_envelope(df, envelope.EnvelopeOptions(**opts), n_col="N", flops_col=None, **kw)


@pytest.mark.parametrize("method", envelope.METHODS)
def test_recovers_the_law_and_agrees_with_the_library(tmp_path, capsys, method):
    curves = law_curves(*HOFFMANN)
    out = run_json(capsys, write(tmp_path, curves), "--method", method, "--bootstrap", "50")
    (g,) = out["groups"]
    lib = library(curves, method=method, n_boot=50)
    # The CLI is fit_envelope on the same table with the same options and seed: the same
    # arithmetic, so equal to rounding, intervals included.
    assert g["exponent"]["a"] == pytest.approx(lib.exponent, abs=1e-12) and g["exponent"]["ci"] == pytest.approx(list(lib.ci), abs=1e-12)
    assert (g["n_points"], g["n_edge"], g["n_sizes"], g["n_runs"]) == (lib.n_points, lib.n_edge, lib.n_sizes, 16)
    # The envelope picks among 16 trained sizes, a staircase around N_opt ∝ C^(β/(α+β)); its
    # least-squares slope is off by < 0.003 here (test_envelope.py explains it). 0.01 still
    # fails on Kaplan's 0.73, on 0.5 (off by 0.048) and on the other law's 0.487.
    assert g["status"] == "converged" and abs(g["exponent"]["a"] - HOFFMANN[1] / sum(HOFFMANN)) < 0.01
    assert g["exponent"]["ci"][0] <= g["exponent"]["a"] <= g["exponent"]["ci"][1]
    # C = 6·N·D along every curve, so b = 1 - a exactly, and the output says so.
    assert g["d_exponent"]["b"] == pytest.approx(1 - g["exponent"]["a"], abs=1e-9) and out["compute_from"] == "6·N·tokens"
    # The segments partition the envelope, from low C to high, and name its optimal sizes.
    segs = g["segments"]
    assert sum(s["n_points"] for s in segs) == g["n_envelope_points"]
    assert sum(s["n_used"] for s in segs) == g["n_points"]
    assert all(s["c_from"] <= s["c_to"] < t["c_from"] for s, t in zip(segs, segs[1:]))
    assert len({s["n"] for s in segs if s["n_used"]}) == g["n_sizes"]

    assert main(["envelope", str(tmp_path / "curves.csv"), "--method", method, "--bootstrap", "50"]) == 0
    text = capsys.readouterr().out
    assert f"a = {g['exponent']['a']:.3f}, 95% interval [{g['exponent']['ci'][0]:.3f}, {g['exponent']['ci'][1]:.3f}]" in text
    assert "C = 6·N·tokens" in text and "= 1 - a" in text and "status converged" in text
    fitted = f"{g['n_points']} of {g['n_envelope_points']} envelope points fitted, {g['n_edge']} at an edge dropped"
    assert fitted in text
    for s in segs:
        assert any(s["run"] in line and f"{s['c_from']:.3g}" in line for line in text.splitlines())


def test_json_keys(tmp_path, capsys):
    out = run_json(capsys, write(tmp_path, law_curves(*HOFFMANN)), "--bootstrap", "0")
    assert set(out) == {"source", "columns", "compute_from", "tokens_from", "method", "keep_edges", "bootstrap",
                        "seed", "level", "where", "group_by", "groups"}
    assert out["columns"] == {"run": "run", "n": "N", "tokens": "tokens", "flops": None, "loss": "loss"}
    (g,) = out["groups"]
    assert set(g) == {"group", "n_runs", "n_sizes_trained", "n_checkpoints", "n_envelope_points", "n_points",
                      "n_edge", "n_sizes", "n_boot_failed", "status", "exponent", "d_exponent", "segments"}
    assert g["exponent"]["ci"] == [None, None]  # no bootstrap, no interval: null, not a made-up number


def test_compute_column_and_level(tmp_path, capsys):
    curves = law_curves(*EPOCH)
    # A FLOP count that is not 6ND (10% more per token for the smallest model, as real accounting
    # adds attention), with the true tokens kept: b is then fitted, not 1 - a.
    curves["C"] = 6 * curves["N"] * curves["tokens"] * (1 + 0.1 * (1e7 / curves["N"]) ** 0.3)
    path = write(tmp_path, curves)
    out = run_json(capsys, path, "--c-col", "C", "--bootstrap", "40", "--level", "0.8")
    (g,) = out["groups"]
    lib = envelope.fit_envelope(curves, envelope.EnvelopeOptions(n_boot=40, level=0.8), n_col="N", flops_col="C")
    assert g["exponent"]["a"] == pytest.approx(lib.exponent, abs=1e-12) and g["d_exponent"]["b"] == pytest.approx(lib.d_exponent, abs=1e-12)
    assert g["exponent"]["ci"] == pytest.approx(list(lib.ci), abs=1e-12) and out["compute_from"] == "column C"
    assert abs(g["exponent"]["a"] + g["d_exponent"]["b"] - 1) > 1e-4  # the tokens column, not C/(6N), gave D_opt
    # An 80% interval is the 10th-90th percentiles of the same resamples: inside the 95% one.
    wide = run_json(capsys, path, "--c-col", "C", "--bootstrap", "40")["groups"][0]["exponent"]["ci"]
    assert wide[0] <= g["exponent"]["ci"][0] < g["exponent"]["ci"][1] <= wide[1]
    # Without a tokens column the compute alone serves: D = C/(6N), and b = 1 - a again.
    no_tokens = run_json(capsys, write(tmp_path, curves.drop(columns="tokens"), "c_only.csv"), "--c-col", "C",
                         "--bootstrap", "0")
    assert no_tokens["tokens_from"] == "C/(6N)"
    assert no_tokens["groups"][0]["exponent"]["a"] == pytest.approx(g["exponent"]["a"], abs=1e-12)
    assert no_tokens["groups"][0]["d_exponent"]["b"] == pytest.approx(1 - g["exponent"]["a"], abs=1e-9)


def test_group_by_fits_each_family(tmp_path, capsys):
    # The same run names in both families: only the grouping keeps their curves apart.
    curves = pd.concat([law_curves(*HOFFMANN, family="hoffmann"), law_curves(*EPOCH, family="epoch")])
    out = run_json(capsys, write(tmp_path, curves), "--group-by", "family", "--bootstrap", "0")
    by = {g["group"]["family"]: g for g in out["groups"]}
    assert set(by) == {"hoffmann", "epoch"} and all(g["n_runs"] == 16 for g in by.values())
    for fam, (alpha, beta) in (("hoffmann", HOFFMANN), ("epoch", EPOCH)):
        # 0.01 as above: the two laws' exponents are 0.036 apart, so a swap or a pooled fit fails.
        assert abs(by[fam]["exponent"]["a"] - beta / (alpha + beta)) < 0.01
        assert by[fam]["exponent"]["a"] == pytest.approx(library(curves[curves.family == fam], n_boot=0).exponent, abs=1e-12)
    text = (main(["envelope", str(tmp_path / "curves.csv"), "--group-by", "family", "--bootstrap", "0"]),
            capsys.readouterr().out)[1]
    assert "[family=epoch] 16 runs" in text and "[family=hoffmann] 16 runs" in text


def test_where_selects_checkpoints(tmp_path, capsys):
    curves = law_curves(*HOFFMANN)
    path = write(tmp_path, curves)
    out = run_json(capsys, path, "--where", "tokens>=1e9", "--bootstrap", "0")
    (g,) = out["groups"]
    late = curves[curves.tokens >= 1e9]
    assert g["n_checkpoints"] == len(late) < len(curves) and out["where"] == ["tokens>=1e9"]
    assert g["exponent"]["a"] == pytest.approx(library(late, n_boot=0).exponent, abs=1e-12)
    # Starting every curve at 1e9 tokens moves the envelope: the selection reached the fit.
    assert g["n_envelope_points"] == 1500 and g["segments"][0]["c_from"] >= 6 * 1e7 * 1e9 * (1 - 1e-9)
    assert "rows: where tokens>=1e9" in (main(["envelope", str(path), "--where", "tokens>=1e9", "--bootstrap", "0"]),
                                         capsys.readouterr().out)[1]


def test_keep_edges_fits_every_point(tmp_path, capsys):
    path = write(tmp_path, law_curves(*HOFFMANN))
    dropped = run_json(capsys, path, "--bootstrap", "0")["groups"][0]
    kept = run_json(capsys, path, "--bootstrap", "0", "--keep-edges")["groups"][0]
    # The same envelope, the same edges; kept, they enter the fit.
    assert kept["n_edge"] == dropped["n_edge"] > 0
    assert dropped["n_points"] == dropped["n_envelope_points"] - dropped["n_edge"]
    assert kept["n_points"] == kept["n_envelope_points"] == dropped["n_envelope_points"]
    assert kept["n_sizes"] > dropped["n_sizes"] and kept["exponent"]["a"] != dropped["exponent"]["a"]


def test_a_gap_in_compute_has_no_envelope_points(tmp_path, capsys):
    # Small models that stop at 1e9 tokens and large ones that start at 1e11: their compute
    # ranges do not meet, and the grid between them has no curve to read. Those grid values must
    # get no optimum at all (they once got run 0's N at infinite loss, which --keep-edges then fitted).
    curves = law_curves(*HOFFMANN)
    gap = curves[((curves.N < 1e8) & (curves.tokens <= 1e9)) | ((curves.N > 1e9) & (curves.tokens >= 1e11))]
    path = write(tmp_path, gap)
    small_end = (6 * gap.N * gap.tokens)[gap.N < 1e8].max()
    large_start = (6 * gap.N * gap.tokens)[gap.N > 1e9].min()
    for extra in ([], ["--keep-edges"]):
        g = run_json(capsys, path, "--bootstrap", "0", *extra)["groups"][0]
        assert all(s["c_to"] <= small_end * (1 + 1e-9) or s["c_from"] >= large_start * (1 - 1e-9)
                   for s in g["segments"])
        assert np.isfinite(g["exponent"]["a"])


def test_gemstones_roles_name_registered_columns():
    from scalinglab import data
    from scalinglab.papers import gemstones

    # `--dataset gemstones-*` needs no column flags only if every role names one of the table's columns.
    for name in gemstones.DATASETS:
        ds = data.get(name)
        assert {"run", "n", "d", "loss"} <= set(ds.roles) and set(ds.roles.values()) <= set(ds.columns), name


# --- Gemstones (needs the mirror) ----------------------------------------------------------------

def test_gemstones_cool_end_equals_the_library(mirror, capsys):
    from scalinglab import data
    from scalinglab.papers import gemstones

    out = run_json(capsys, "--dataset", "gemstones-cool-end", "--bootstrap", "200")
    (g,) = out["groups"]
    raw = data.load("gemstones-cool-end")
    lib = envelope.fit_envelope(raw, envelope.EnvelopeOptions(n_boot=200), run_col="run_name",
                                n_col="params_active_precise", loss_col="final_loss", flops_col=None)
    # Same table, same options and seed: the CLI must be the library to rounding.
    assert g["exponent"]["a"] == pytest.approx(lib.exponent, abs=1e-12) and g["exponent"]["ci"] == pytest.approx(list(lib.ci), abs=1e-12)
    assert g["d_exponent"]["b"] == pytest.approx(lib.d_exponent, abs=1e-12)
    assert (g["n_runs"], g["n_points"], g["n_edge"]) == (20, lib.n_points, lib.n_edge)
    # gemstones.curves with 6·N·D is the same envelope by another route (renamed runs).
    six_nd = envelope.fit_envelope(gemstones.curves("gemstones-cool-end", flops="6N"),
                                   envelope.EnvelopeOptions(n_boot=0))
    assert g["exponent"]["a"] == pytest.approx(six_nd.exponent, abs=1e-12)
    # Notebook 01 counts compute as the authors do (1.18 × 6N for the smallest model, 0.99 × 6N
    # for the largest), which moves the grid's a by ~0.14 on this table: the registry's table has
    # no FLOP column, so `--dataset` answers under 6ND and is not notebook 01's number (the test
    # below reaches that one through --c-col).
    nb = envelope.fit_envelope(gemstones.curves("gemstones-cool-end"), envelope.EnvelopeOptions(n_boot=0))
    assert abs(nb.exponent - g["exponent"]["a"]) > 0.05


def test_gemstones_authors_flops_through_a_csv_match_notebook_01(mirror, tmp_path, capsys):
    from scalinglab.papers import gemstones

    hot = gemstones.curves("gemstones-hot")
    path = write(tmp_path, hot, "hot.csv")
    out = run_json(capsys, path, "--n-col", "n", "--c-col", "flops", "--bootstrap", "1000")
    (g,) = out["groups"]
    # Notebook 01's "Hoffmann grid, edges dropped, hot": the same call, so equal to rounding
    # (a CSV round trip of the floats is exact with pandas' default repr).
    nb = envelope.fit_envelope(hot, envelope.EnvelopeOptions(method="grid", n_boot=1000, seed=0))
    assert g["exponent"]["a"] == pytest.approx(nb.exponent, abs=1e-12) and g["exponent"]["ci"] == pytest.approx(list(nb.ci), abs=1e-12)
    assert g["n_sizes"] == nb.n_sizes and out["tokens_from"] == "column tokens"


# --- bad input: exit 2, one line naming the file, column or value, no traceback ---------------------

GOOD = """run,N,tokens,loss
a,1e8,1e9,3.40
a,1e8,2e9,3.20
a,1e8,4e9,3.10
b,2e8,1e9,3.50
b,2e8,2e9,3.15
b,2e8,4e9,3.00
"""


@pytest.mark.parametrize("content, extra, needle", [
    (None, [], "no such file"),                                              # missing file
    ("", [], "is empty"),
    ("run,N,tokens,loss\n", [], "no rows; expected one row per (run, checkpoint)"),
    (GOOD, ["--n-col", "params"], "no N column 'params'"),
    (GOOD, ["--d-col", "D"], "no tokens column 'D'"),
    (GOOD.replace("tokens", "steps"), [], "no tokens column 'tokens'"),
    (GOOD, ["--c-col", "C"], "no compute column 'C'"),
    (GOOD.replace("3.40", "abc"), [], "column 'loss' needs positive finite numbers; line 2 has 'abc'"),
    (GOOD.replace("a,1e8,1e9", "a,-1e8,1e9"), [], "column 'N' needs positive finite numbers; line 2 has -1"),
    (GOOD.replace("3.40", "0"), [], "column 'loss' needs positive finite numbers; line 2 has 0"),
    (GOOD.replace("a,1e8,2e9", "a,3e8,2e9"), [], "run 'a' has more than one value in 'N'"),
    (GOOD.replace("b,", "a,").replace("2e8", "1e8"), [], "needs at least 2 runs in 'run', got 1 (only 'a')"),
    (GOOD, ["--where", "run==z"], "'run==z' matches none of the"),
    (GOOD, ["--where", "run==a"], "needs at least 2 runs"),
    (GOOD, ["--group-by", "family"], "no --group-by column 'family'"),
    (GOOD, ["--method", "cubic"], "argument --method: invalid choice: 'cubic'"),
    (GOOD, ["--level", "95"], "--level must lie strictly between 0 and 1"),
    (GOOD, ["--bootstrap", "-1"], "--bootstrap must be >= 0, not -1"),
])
def test_bad_input_is_one_line(tmp_path, capsys, content, extra, needle):
    path = tmp_path / "runs.csv"
    if content is not None:
        path.write_text(content)
    try:
        rc = main(["envelope", str(path), *extra])
    except SystemExit as exc:  # argparse's usage errors (an unknown --method) exit; the parser makes them one line
        rc = exc.code
    assert rc == 2
    err = capsys.readouterr().err.strip()
    assert needle in err and "\n" not in err, err
    if not any(flag in extra for flag in ("--method", "--level", "--bootstrap")):
        assert "runs.csv" in err  # option errors name the option; data errors name the file


def test_a_bad_group_is_named(tmp_path, capsys):
    text = GOOD.replace("run,N,tokens,loss", "run,N,tokens,loss,family")
    rows = [line + ",x" for line in text.strip().splitlines()[1:]] + ["c,4e8,1e9,3.3,y", "c,4e8,2e9,3.1,y"]
    path = tmp_path / "runs.csv"
    path.write_text("run,N,tokens,loss,family\n" + "\n".join(rows) + "\n")
    assert main(["envelope", str(path), "--group-by", "family"]) == 2
    err = capsys.readouterr().err.strip()
    assert "runs.csv [family=y]" in err and "needs at least 2 runs" in err and "\n" not in err


def test_bad_input_from_the_shell_has_no_traceback(tmp_path):
    path = tmp_path / "runs.csv"
    path.write_text(GOOD.replace("a,1e8,2e9", "a,3e8,2e9"))
    out = subprocess.run([sys.executable, "-m", "scalinglab", "envelope", str(path)], capture_output=True, text=True)
    assert out.returncode == 2 and "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1
    assert "has more than one value" in out.stderr
