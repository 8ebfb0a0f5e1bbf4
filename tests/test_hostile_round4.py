"""The fourth round of hostile input: nothing destroyed, nothing read whole, every command as careful as `fit`.
Each case a careless or hostile user tried is kept here: a one-line refusal (exit 2), a warning with the
distance, or a right answer."""

import math

import numpy as np
import pytest
from conftest import refused
from scalinglab.cli import main
from scalinglab.errors import UserError
from scalinglab.fitting import saved
from test_saved_fit import _rewrite, simulate

# --- a saved exact fit loads on any BLAS kernel ---------------------------------------------------------------

def test_the_objective_tolerance_allows_rounding_of_an_exact_fit_and_nothing_more():
    """An exact fit's objective is a sum of rounding errors (1.97e-30 on one kernel, 2.34e-30 on Haswell's): a
    relative tolerance refused the second. An edit of 1e-9 to alpha moves every residual by about 1e-9 * log N
    (~2e-8), so the objective by ~n * 2e-16: far outside the tolerance."""
    tol = saved.objective_tolerance(1.97215e-30, 20)
    assert abs(2.34193e-30 - 1.97215e-30) <= tol
    assert 20 * 0.5 * (1e-9 * math.log(1e8)) ** 2 > 100 * tol
    # Away from zero the relative tolerance is the one that binds, as before.
    assert saved.objective_tolerance(1e-3, 200) == pytest.approx(1e-11, rel=0.05)


def _flat_fit(tmp_path):
    N, D, _ = simulate(20, 3)
    flat = tmp_path / "flat.csv"
    flat.write_text("N,D,loss\n" + "".join(f"{n:.17g},{d:.17g},4.5\n" for n, d in zip(N, D)))
    out = tmp_path / "flat.slfit"
    assert main(["fit", str(flat), "--save", str(out)]) == 0
    return out


def test_an_exact_fit_loads_when_its_objective_is_recomputed_by_another_kernel(tmp_path, capsys, monkeypatch):
    """Another BLAS kernel's evaluation, stood in for by the stored objective scaled by 1.19 (what Haswell's
    gave), still loads; an edit of the law by 1e-6 in E does not."""
    out = _flat_fit(tmp_path)
    capsys.readouterr()
    from scalinglab.fitting.chinchilla import newton as solver

    real = solver.objective
    monkeypatch.setattr(solver, "objective", lambda *a, **k: real(*a, **k) * 1.19)
    assert saved.load(out).result.objective < 1e-20
    monkeypatch.setattr(solver, "objective", real)
    bad = tmp_path / "edited.slfit"
    _rewrite(out, bad, lambda o: o["law"].update(E=o["law"]["E"] * (1 + 1e-6)))
    refused(capsys, ["allocate", bad, "--compute", "1e12"], str(bad), "is not what its law gives")


# --- every writing flag of every command: nothing destroyed ---------------------------------------------------

def _writing_flags():
    """(command, dest, flag, argv without the flag) for every writing flag of every command: each required
    argument filled in with a small file (or its first choice), so the command would start."""
    import argparse

    from scalinglab.cli import OUTPUT_FLAGS, build_parser

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    out = []
    for name, parser in sub.choices.items():
        argv = [name]
        for a in parser._actions:
            if not a.required and not (not a.option_strings and a.nargs in (None, "?", "+")):
                continue
            if a.dest == "help":
                continue
            value = str(list(a.choices)[0]) if a.choices else "{input}"
            if a.option_strings:
                argv += [a.option_strings[0], value]
            else:
                argv += [value]
        for a in parser._actions:
            if a.dest in OUTPUT_FLAGS:
                out.append((name, a.dest, a.option_strings[0], argv))
    return out


WRITING = _writing_flags()


def test_every_flag_that_names_a_path_is_known_as_an_input_or_an_output():
    """A new flag that writes a file must be in OUTPUT_FLAGS, or the checks below never see it."""
    import argparse

    from scalinglab.cli import INPUT_ARGS, OUTPUT_FLAGS, build_parser

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    unknown = []
    for name, parser in sub.choices.items():
        for a in parser._actions:
            words = f"{a.metavar or ''} {a.help or ''}".lower()
            pathlike = a.metavar in ("FILE", "PNG", "PATH", "FOLDER", "CSV") or " write" in f" {words}"
            if pathlike and a.dest not in OUTPUT_FLAGS and a.dest not in INPUT_ARGS and a.dest != "dir":
                unknown.append(f"{name} {a.dest}")
    assert not unknown
    assert {(c, d) for c, d, _, _ in WRITING} >= {("fit", "save"), ("fit", "plot"), ("predict", "out"),
                                                  ("chain", "plot"), ("fit-curve", "save"), ("fit-curve", "plot"),
                                                  ("predict-curve", "plot"), ("scoreboard", "plot"),
                                                  ("sweep", "export")}


def _inputs(tmp_path):
    inp = tmp_path / "in.csv"
    inp.write_text("N,D,loss\n1e8,1e9,3.0\n")
    return inp


@pytest.mark.parametrize("command, dest, flag, argv", WRITING, ids=[f"{c} {f}" for c, _, f, _ in WRITING])
def test_no_writing_flag_replaces_a_fifo_or_a_socket(tmp_path, capsys, command, dest, flag, argv):
    """A rename over a FIFO (or, as root, over /dev/null) replaced the node with a regular file and said
    "saved". Only FIFOs and sockets made here are used: never a real device node."""
    import os
    import socket
    import stat

    inp = _inputs(tmp_path)
    args = [a.replace("{input}", str(inp)) for a in argv]
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    refused(capsys, [*args, flag, fifo], flag, "a FIFO (named pipe)")
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    sock_path = tmp_path / "out.sock"
    sock = socket.socket(socket.AF_UNIX)
    try:
        sock.bind(str(sock_path))
        refused(capsys, [*args, flag, sock_path], flag, "a socket")
        assert stat.S_ISSOCK(os.stat(sock_path).st_mode)
    finally:
        sock.close()


@pytest.mark.parametrize("command, dest, flag, argv", WRITING, ids=[f"{c} {f}" for c, _, f, _ in WRITING])
def test_no_writing_flag_writes_onto_an_input_or_an_empty_path(tmp_path, capsys, command, dest, flag, argv):
    """`chain --plot` overwrote its evaluations (or --targets) with PNG data, `predict-curve --plot` its schedule
    or its fit; `fit --save ''` saved nothing and said nothing. Each input, also through a symbolic link and a
    hard link, is refused as an output."""
    import os

    inp = _inputs(tmp_path)
    before = inp.read_bytes()
    args = [a.replace("{input}", str(inp)) for a in argv]
    refused(capsys, [*args, flag, ""], flag, "an empty path")
    if "{input}" not in " ".join(argv):
        return
    (tmp_path / "link.csv").symlink_to(inp)
    os.link(inp, tmp_path / "hard.csv")
    for target in (inp, tmp_path / "link.csv", tmp_path / "hard.csv"):
        message = "not a folder" if flag == "--export" else "is the input file"
        refused(capsys, [*args, flag, target], flag, message)
    assert inp.read_bytes() == before


def test_the_writer_itself_refuses_a_fifo_for_callers_outside_the_cli(tmp_path):
    """atomic_write is the one writer under every flag; a library caller that skipped the CLI's check still
    cannot replace a FIFO (a mocked device would take the same path: the refusal is by stat's mode)."""
    import os

    from scalinglab.errors import UserError
    from scalinglab.files import atomic_write

    fifo = tmp_path / "f"
    os.mkfifo(fifo)
    with pytest.raises(UserError, match="is a FIFO"), atomic_write(fifo, "--save") as tmp:
        tmp.write_text("x")
    assert not list(tmp_path.glob(".*partial*"))


def test_a_mocked_character_device_is_refused_as_an_output(tmp_path, monkeypatch, capsys):
    """/dev/null and /dev/full were replaced by regular files (as root). The stat is mocked: no real device
    node is touched."""
    import os
    import stat

    from scalinglab import files

    target = tmp_path / "null"
    real = os.stat

    def fake(path, *a, **k):
        if os.fspath(path) == str(target):
            return os.stat_result((stat.S_IFCHR | 0o666, 0, 0, 1, 0, 0, 0, 0, 0, 0))
        return real(path, *a, **k)

    monkeypatch.setattr(files.os, "stat", fake)
    inp = _inputs(tmp_path)
    refused(capsys, ["fit", inp, "--save", target], "--save", "a character device")
    monkeypatch.undo()   # os.stat is os.stat everywhere: the check below must see the real file system
    assert not target.exists()


# --- refusals before side effects -----------------------------------------------------------------------------

def test_a_sweep_refused_for_another_sweeps_database_leaves_it_untouched(tmp_path, capsys):
    """`sweep --preset kaplan --profile smoke --db copy_of_hoffmann.db` refused, but had already added columns
    to `runs` and `curves`."""
    import json
    import sqlite3

    db = tmp_path / "hoffmann.db"
    con = sqlite3.connect(db)
    con.executescript("CREATE TABLE sweep (key TEXT PRIMARY KEY, value TEXT);"
                      "CREATE TABLE runs (run_id TEXT PRIMARY KEY, status TEXT);")
    con.executemany("INSERT INTO sweep VALUES (?, ?)", [("preset", json.dumps("hoffmann")),
                                                        ("profile", json.dumps("cpu"))])
    con.commit()
    con.close()
    before = db.read_bytes()
    refused(capsys, ["sweep", "--preset", "kaplan", "--profile", "smoke", "--db", db], "holds the hoffmann/cpu sweep")
    assert db.read_bytes() == before


def test_sweep_export_onto_a_file_is_refused_before_training(tmp_path, capsys):
    """It was refused only after the whole sweep had trained (53 s and 2 GB)."""
    db, export = tmp_path / "new.db", tmp_path / "models.txt"
    export.write_text("mine\n")
    refused(capsys, ["sweep", "--preset", "kaplan", "--profile", "smoke", "--db", db, "--export", export],
            "--export", "not a folder")
    assert not db.exists() and export.read_text() == "mine\n"


# --- nothing read whole, nothing allocated past a cap ---------------------------------------------------------

READERS = [
    ["fit", "{big}"], ["predict", "{big}", "{small}"], ["allocate", "{big}", "--compute", "1e20"],
    ["compare", "{big}", "{small}"], ["compare-laws", "{big}", "--law", "chinchilla", "--law", "kaplan"],
    ["scoreboard", "{big}", "--holdout", "largest-budget"], ["isoflop", "{big}"], ["envelope", "{big}"],
    ["trend", "{big}", "--x-col", "x", "--y-col", "y", "--count-col", "n"],
    ["chain", "{big}", "--targets", "{small}", "--tasks", "a"], ["chain", "{small}", "--targets", "{big}", "--tasks", "a"],
    ["translate", "{big}", "{small}", "--x-col", "a", "--y-col", "b", "--targets", "{small}"],
    ["translate", "{small}", "{big}", "--x-col", "a", "--y-col", "b", "--targets", "{small}"],
    ["fit-curve", "{big}"], ["predict-curve", "{big}", "--fit", "{small}"],
    ["predict-curve", "constant:peak=1e-3,steps=100", "--fit", "{big}"], ["sweep-report", "--db", "{big}"],
    ["fit", "{small}", "--predict", "{big}"], ["design", "{big}", "--target", "1e20", "--budget", "1e20"],
]


@pytest.mark.parametrize("argv", READERS, ids=[" ".join(a[:2]) for a in READERS])
def test_a_file_over_the_input_cap_is_refused_before_it_is_read(tmp_path, capsys, monkeypatch, argv):
    """A 2 GB sparse file was read whole (4.2 GB resident) and ended in a bare MemoryError. Here the cap is
    lowered to 1,000 bytes and the file is a sparse 5,000: the same check, without the gigabytes."""
    import os

    monkeypatch.setenv("SCALINGLAB_MAX_INPUT_BYTES", "1000")
    big, small = tmp_path / "big.csv", tmp_path / "small.csv"
    with open(big, "wb") as fh:
        fh.truncate(5000)
    small.write_text("N,D,loss\n1,2,3\n")
    assert os.stat(big).st_blocks == 0 or os.stat(big).st_size == 5000
    args = [a.replace("{big}", str(big)).replace("{small}", str(small)) for a in argv]
    refused(capsys, args, str(big), "5,000 bytes, over the 1,000", "SCALINGLAB_MAX_INPUT_BYTES")


def test_the_input_cap_defaults_to_a_gigabyte_and_a_bad_override_is_named(monkeypatch):
    from scalinglab.errors import UserError
    from scalinglab.files import max_input_bytes

    monkeypatch.delenv("SCALINGLAB_MAX_INPUT_BYTES", raising=False)
    assert max_input_bytes() == 1_000_000_000
    monkeypatch.setenv("SCALINGLAB_MAX_INPUT_BYTES", "2e9")
    assert max_input_bytes() == 2_000_000_000
    for bad in ("lots", "0", "-5"):
        monkeypatch.setenv("SCALINGLAB_MAX_INPUT_BYTES", bad)
        with pytest.raises(UserError, match="SCALINGLAB_MAX_INPUT_BYTES"):
            max_input_bytes()


def test_every_size_cap_is_in_the_counts_table_with_its_reason():
    from scalinglab.cli import COUNTS
    from scalinglab.files import SIZES

    for key in SIZES:
        lo, hi, unit, why = COUNTS[key]
        assert hi == SIZES[key][0] and len(why) > 20


def test_varpro_profiles_the_grid_in_chunks_with_the_same_answer(monkeypatch):
    """The whole 1,600-pair grid over 300,000 rows asked for 3.6 GiB at once; in chunks the answer is the same."""
    from scalinglab.fitting.frontier import varpro

    N, D, L = simulate(50, 4)
    whole = varpro.search(np.log(N), np.log(D), L)
    monkeypatch.setattr(varpro, "_DESIGN_VALUES", 3 * 50 * 7)   # 7 pairs at a time
    chunked = varpro.search(np.log(N), np.log(D), L)
    assert chunked[:2] == whole[:2] and np.allclose(chunked[2], whole[2], rtol=1e-12)


def test_varpro_over_its_row_cap_is_refused(monkeypatch):
    from scalinglab.errors import UserError
    from scalinglab.files import SIZES
    from scalinglab.fitting.frontier import varpro

    monkeypatch.setitem(SIZES, "varpro_rows", (10, "rows", "test"))
    N, D, L = simulate(20, 4)
    with pytest.raises(UserError, match="variable projection: 20 rows, at most 10"):
        varpro.varpro_theta(np.log(N), np.log(D), np.log(L))


# --- predict-curve and fit-curve: schedules that cannot be ---------------------------------------------------

@pytest.fixture(scope="module")
def curve_fit(tmp_path_factory):
    folder = tmp_path_factory.mktemp("curve")
    rows = ["run,step,lr,loss"]
    for s in range(1, 2000, 20):
        rows.append(f"a,{s},3e-4,{3 + 5 * (s * 0.3) ** -0.5:.6g}")
    csv = folder / "curves.csv"
    csv.write_text("\n".join(rows) + "\n")
    out = folder / "fit.json"
    assert main(["fit-curve", str(csv), "--law", "baseline", "--save", str(out)]) == 0
    return out


@pytest.mark.parametrize("schedule, message", [
    ("constant:peak=3e-4,steps=1000000000", "1e+09 steps, at most 10,000,000"),   # asked for 7.45 GiB
    ("constant:peak=3e-4,steps=99999999999999999999", "at most 10,000,000"),        # OverflowError
    ("cosine:peak=3e-4,peak=1,steps=1000", "peak= is given twice"),
    ("cosine:peak=0,steps=1000", "peak=0 is not a learning rate"),                 # every loss inf, exit 0
    ("constant:peak=1e30,steps=1000", "peak=1e+30 is not a learning rate"),
    ("wsd:peak=3e-4,steps=1000,warmup=2000", "warmup=2000 is not between 0 and the run's 1000 steps"),
    ("cosine:peak=3e-4,steps=1000,floor=2", "floor=2 is a fraction of the peak"),
    ("cosine:peak=nan,steps=1000", "not a finite number"),
])
def test_predict_curve_refuses_a_schedule_that_cannot_be(curve_fit, capsys, schedule, message):
    refused(capsys, ["predict-curve", schedule, "--fit", curve_fit], message)


def test_predict_curve_refuses_a_fractional_step(curve_fit, capsys):
    """`--at 100.5` was predicted and printed as step 100."""
    refused(capsys, ["predict-curve", "constant:peak=3e-4,steps=1000", "--fit", curve_fit, "--at", "100.5"],
            "step 100.5 is not a whole number")


@pytest.mark.parametrize("text", ["[1, 2]", "[" * 100_000 + "]" * 100_000, '{"format": 5}', "{}"])
def test_predict_curve_refuses_a_fit_that_is_not_one(tmp_path, capsys, text):
    """A JSON list gave an AttributeError, a deep nesting a RecursionError."""
    bad = tmp_path / "fit.json"
    bad.write_text(text)
    refused(capsys, ["predict-curve", "constant:peak=3e-4,steps=1000", "--fit", bad], str(bad),
            "not a curve fit saved by")


def test_fit_curve_refuses_a_run_of_a_billion_steps(tmp_path, capsys):
    """It asked for 174 TiB."""
    rows = ["run,step,lr,loss"] + [f"a,{s},3e-4,{3 + s ** -0.3:.6g}" for s in
                                   (1, 10, 100, 1000, 10_000, 100_000, 1_000_000, 1_000_000_000)]
    csv = tmp_path / "big.csv"
    csv.write_text("\n".join(rows) + "\n")
    refused(capsys, ["fit-curve", csv], str(csv), "line 9", "1e+09 steps, at most 10,000,000")


def test_fit_curve_on_equal_losses_prints_no_warning_and_no_minus_infinite_r2(tmp_path, capsys):
    rows = ["run,step,lr,loss"] + [f"a,{s},3e-4,3.5" for s in range(1, 2000, 20)]
    csv = tmp_path / "flat.csv"
    csv.write_text("\n".join(rows) + "\n")
    assert main(["fit-curve", str(csv), "--json"]) == 0
    cap = capsys.readouterr()
    assert "RuntimeWarning" not in cap.err and "-inf" not in cap.out and "Infinity" not in cap.out


@pytest.mark.parametrize("run_id", ["../../outside", "hoffmann\x1b[31m-red", "/abs/path", ".hidden", ""])
def test_a_run_id_no_sweep_writes_is_refused_before_it_becomes_a_path_or_a_line(tmp_path, capsys, run_id):
    """A run id names its checkpoint file (``<db>.runs/<run_id>.pt``) and is printed: one from an edited
    database that would leave that folder or drive the terminal is refused in one line, naming the database."""
    import shutil
    import sqlite3

    from scalinglab.harness.workbook import project_root
    from scalinglab.training.sweep.launch import checkpoint_path

    db = tmp_path / "edited.db"
    shutil.copyfile(project_root() / "data/sweeps/kaplan.db", db)
    with sqlite3.connect(db) as con:
        first = con.execute("SELECT run_id FROM runs ORDER BY rowid LIMIT 1").fetchone()[0]
        con.execute("PRAGMA foreign_keys = OFF")
        for table in ("runs", "curves"):
            con.execute(f"UPDATE {table} SET run_id = ? WHERE run_id = ?", (run_id, first))
    assert main(["sweep-report", "--db", str(db)]) == 2
    err = capsys.readouterr().err.strip()
    assert "edited.db: run id" in err and "the database was edited" in err
    assert "\n" not in err and "\x1b" not in err and "Traceback" not in err
    with pytest.raises(UserError, match="not one a sweep writes"):
        checkpoint_path(db, run_id)
    assert checkpoint_path(db, first).parent == tmp_path / "edited.db.runs"
