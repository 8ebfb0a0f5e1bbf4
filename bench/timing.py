"""The bench scripts' one timer: the best of a few repeats (the least disturbed by the rest of the machine).

Run a bench script as ``python bench/bench_x.py``, which puts this folder on sys.path."""

from __future__ import annotations

import time


def best_of(fn, repeat: int = 3):
    """(fastest wall-clock seconds of ``repeat`` calls of ``fn``, the last call's result)."""
    times, out = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return min(times), out
