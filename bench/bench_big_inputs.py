"""Big inputs: `scalinglab fit` and `isoflop` on 20,000 to 1,000,000 rows, and the CLI's start,
each a whole `python -m scalinglab` process timed with its peak memory (ru_maxrss from os.wait4), against
the baseline (the library at ``--baseline-rev``, before the fixes) in the same run.

Targets: `fit` on 1M rows under 60 s, 20k rows under 5 s; at most ~1 GB whatever the row count; `isoflop`
on 1M rows near `envelope`'s 6 s / 0.4 GB. The baseline `fit` cannot run on 1M rows: scoring the 4,500
starts at once allocates 4,500 × 1M × 8 bytes = 33.5 GiB, so that row says "not run" and the ratio is taken
at the sizes it can (20k). The data are simulated from Hoffmann's law with 1% noise (seeded), written to
a temporary folder.

    .venv/bin/python bench/bench_big_inputs.py [--quick] [--baseline-rev REV]

--quick: 20k-row cases and the start only (no 1M rows).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
E, A, B, ALPHA, BETA = 1.69, 406.4, 410.7, 0.34, 0.28  # Hoffmann et al.'s printed fit


def fit_csv(path: Path, n: int, seed: int = 0) -> None:
    """n runs: N log-uniform on [1e7, 1e10], D on [1e9, 1e12], loss from the law times e^(1% noise)."""
    rng = np.random.default_rng(seed)
    N = np.exp(rng.uniform(np.log(1e7), np.log(1e10), n))
    D = np.exp(rng.uniform(np.log(1e9), np.log(1e12), n))
    L = (E + A / N**ALPHA + B / D**BETA) * np.exp(0.01 * rng.standard_normal(n))
    np.savetxt(path, np.column_stack([N, D, L]), delimiter=",", fmt="%.10g", header="N,D,loss", comments="")


def isoflop_csv(path: Path, n: int, seed: int = 0, budgets: int = 10) -> None:
    """n runs over ``budgets`` budgets 1e17…1e21: each run a distinct N log-uniform within e^±1.5 of its
    budget's optimum (so every run is its own size), loss from the law with D = C/(6N), 0.5% noise."""
    rng = np.random.default_rng(seed)
    C = np.repeat(np.geomspace(1e17, 1e21, budgets), -(-n // budgets))[:n]
    n_opt = (ALPHA * A / (BETA * B)) ** (1 / (ALPHA + BETA)) * (C / 6) ** (BETA / (ALPHA + BETA))
    N = n_opt * np.exp(rng.uniform(-1.5, 1.5, n))
    L = (E + A / N**ALPHA + B / (C / (6 * N)) ** BETA) * np.exp(0.005 * rng.standard_normal(n))
    np.savetxt(path, np.column_stack([N, C, L]), delimiter=",", fmt=["%.8g", "%.6g", "%.6g"],
               header="N,C,loss", comments="")


def run(lib: Path, argv: list[str], timeout: float) -> tuple[float, float, float, int, str]:
    """(wall seconds, CPU seconds, peak MB, exit status, the fit's status line or the last line of output) of
    `python -m scalinglab ARGV` with ``lib`` first on PYTHONPATH; 2 cores' worth of BLAS threads at most.
    CPU seconds (user + system, from os.wait4) hardly move with the machine's load; wall seconds do."""
    env = dict(os.environ, PYTHONPATH=str(lib), OPENBLAS_NUM_THREADS="2", MKL_NUM_THREADS="2", OMP_NUM_THREADS="2",
               MPLBACKEND="Agg")
    t0 = time.perf_counter()
    p = subprocess.Popen([sys.executable, "-m", "scalinglab", *argv], env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True)
    timer = threading.Timer(timeout, p.kill)
    timer.start()
    out = p.stdout.read()
    # os.wait4 reaps the child with its own rusage (Popen.wait would discard it).
    _, status, usage = os.wait4(p.pid, 0)
    timer.cancel()
    p.returncode = os.waitstatus_to_exitcode(status)
    seconds = time.perf_counter() - t0
    peak = usage.ru_maxrss / 1024  # KB on Linux
    if p.returncode == -9:
        return float("nan"), float("nan"), float("nan"), -9, f"killed after {timeout:.0f} s"
    lines = [x for x in (out or "").strip().splitlines() if x.strip()]
    status = next((x.strip() for x in lines if x.startswith("status:")), None)  # fit: status and objective
    cpu = usage.ru_utime + usage.ru_stime
    return seconds, cpu, peak, p.returncode, (status or (lines[-1] if lines else ""))[:110]


def baseline_lib(rev: str, into: Path) -> Path:
    """The library as it was at ``rev`` (git archive), unpacked under ``into``."""
    tar = into / "base.tar"
    subprocess.run(["git", "-C", str(ROOT), "archive", "-o", str(tar), rev, "lib"], check=True)
    with tarfile.open(tar) as tf:
        tf.extractall(into, filter="data")
    return into / "lib"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="20k rows and the start only")
    ap.add_argument("--baseline-rev", default="c5eac06", help="the commit whose library is the baseline")
    ap.add_argument("--timeout", type=float, default=300, help="seconds before a run is killed")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench_big_"))
    base, new = baseline_lib(args.baseline_rev, tmp), ROOT / "lib"
    small_iso = tmp / "iso_small.csv"
    isoflop_csv(small_iso, 90, budgets=5)
    cases = [  # (case, argv, whether the baseline can run it)
        ("isoflop, 90 rows, --bootstrap 0 (start)", ["isoflop", str(small_iso), "--bootstrap", "0"], True),
        ("isoflop, 90 rows", ["isoflop", str(small_iso)], True),
    ]
    sizes = [20_000] if args.quick else [20_000, 1_000_000]
    for n in sizes:
        f, i = tmp / f"fit_{n}.csv", tmp / f"iso_{n}.csv"
        fit_csv(f, n)
        isoflop_csv(i, n)
        mb = f.stat().st_size / 1e6
        cases.append((f"fit {n:,} rows ({mb:.0f} MB)", ["fit", str(f)], n <= 200_000))
        cases.append((f"isoflop {n:,} rows", ["isoflop", str(i)], True))
        if n > 200_000:
            cases.append((f"isoflop {n:,} rows --bootstrap 0", ["isoflop", str(i), "--bootstrap", "0"], True))
    big = ["--bootstrap", "100000000"]
    cases.append(("fit --bootstrap 100000000 (20k rows)", ["fit", str(tmp / "fit_20000.csv"), *big], False))
    load = os.getloadavg()[0]
    print(f"baseline: lib at {args.baseline_rev}; new: {new}; {os.cpu_count()} CPUs visible, BLAS threads 2; "
          f"load average {load:.1f} at the start\n")
    head = (f"{'case':<42}{'base wall s':>12}{'CPU s':>8}{'MB':>7}{'new wall s':>11}{'CPU s':>8}{'MB':>7}"
            f"{'ratio wall':>11}{'CPU':>7}")
    print(head)
    print("-" * len(head))
    notes = []
    for name, argv, base_ok in cases:
        t1, c1, m1, rc1, last1 = run(new, argv, args.timeout)
        if base_ok:
            t0, c0, m0, rc0, last0 = run(base, argv, args.timeout)
            b, ratio = f"{t0:12.2f}{c0:8.2f}{m0:7.0f}", f"{t0 / t1:10.1f}x{c0 / c1:6.1f}x"
        else:
            rc0, last0 = None, "not run"
            b, ratio = f"{'not run':>12}{'':>8}{'':>7}", ""
        print(f"{name:<42}{b}{t1:11.2f}{c1:8.2f}{m1:7.0f}{ratio}", flush=True)
        notes.append(f"  {name}: new exit {rc1}: {last1}" + ("" if rc0 is None else f" | baseline exit {rc0}: {last0}"))
    print("\nlast line of each run's output:")
    print("\n".join(notes))
    return 0


if __name__ == "__main__":
    sys.exit(main())
