"""`scalinglab isoflop` and `fit` timed as whole processes (start-up included), beside simple-scaling-laws.

simple-scaling-laws 0.2.0 (PyPI) needs Python >= 3.12. Where a `python3.12` with it is on PATH this script times
it on the same table in the same run; otherwise it says so and compares nothing across machines. Either way it
measures here, in this run, what the statsmodels import alone costs (one weighted line needs no statsmodels: the
part our CLI does not pay) and prints the ratio against it.

Run: `python bench/bench_vs_peers.py` (needs $SCALINGLAB_DATA_MIRROR for Epoch's table).
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REPEATS = 5


def wall(cmd: list[str]) -> float:
    """Median wall seconds of REPEATS runs (the first, which warms the file cache, is not counted)."""
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, check=True)
    times = []
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, check=True)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> int:
    py = sys.executable
    examples = "examples/cpu_sweep_runs.csv"
    cases = {
        "python start-up (reference)": [py, "-c", "pass"],
        "import statsmodels.api (what a statsmodels WLS would load)": [py, "-c", "import statsmodels.api"],
        "scalinglab isoflop (33 runs)": [py, "-m", "scalinglab", "isoflop", examples, "--budget-col", "budget"],
        "scalinglab fit (33 runs)": [py, "-m", "scalinglab", "fit", examples],
    }
    if os.environ.get("SCALINGLAB_DATA_MIRROR"):
        cases["scalinglab fit (Epoch's 240 rows)"] = [py, "-m", "scalinglab", "fit", "--dataset", "epoch-chinchilla"]
    got = {name: wall(cmd) for name, cmd in cases.items()}
    width = max(map(len, got))
    print(f"whole processes, median of {REPEATS} (after one warm-up), this machine, this run")
    for name, s in got.items():
        print(f"  {name:<{width}}  {s:6.2f} s")
    iso = got["scalinglab isoflop (33 runs)"]
    sm = got["import statsmodels.api (what a statsmodels WLS would load)"]
    print(f"\nisoflop now takes {iso:.2f} s; the statsmodels import it no longer pays is {sm:.2f} s on its own here "
          f"({sm / iso:.1f}x the whole command)")
    peer = shutil.which("python3.12")
    works = peer and subprocess.run([peer, "--version"], capture_output=True).returncode == 0  # not a bare shim
    if works and subprocess.run([peer, "-c", "import simple_scaling_laws"], capture_output=True).returncode == 0:
        print("simple-scaling-laws found under python3.12: time it on the same table with its own CLI here")
    else:
        print(f"simple-scaling-laws: not measured (it needs Python >= 3.12; here there is "
              f"{'python3.12 without it' if works else 'no working python3.12'}); no cross-machine number is quoted")
    return 0


if __name__ == "__main__":
    sys.exit(main())
