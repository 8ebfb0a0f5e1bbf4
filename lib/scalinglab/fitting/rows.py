"""What every fit does with its rows, written once: positive logs of checked arrays, dropping the highest losses
(Epoch's protocol), the group labels of a cluster bootstrap, and the bootstrap's draws, over rows or over whole
groups (a cluster bootstrap), as resample counts (the batched solvers weight every row) or as row indices (the
solvers that refit one resample at a time); and the progress bar long loops show.

The draw has two forms, ``unit_picks`` (indices) and ``unit_counts`` (weights), and every bootstrap in the
package takes one of them. They are kept apart on purpose: each is the random stream its fits have always used,
so a seed gives the same replicates before and after, and the counts are not the indices' histogram under one
seed.
"""

from __future__ import annotations

import numpy as np

from scalinglab.errors import OptionError, RowError, UserError
from scalinglab.fitting.conditions import _n_rows


def positive_logs(values, name: str) -> np.ndarray:
    """log of a column that must be finite and positive, or a RowError naming the first bad row."""
    x = np.asarray(values, dtype=float).ravel()
    bad = np.flatnonzero(~np.isfinite(x))
    if bad.size:
        raise RowError(f"column {name!r} has {bad.size} missing or non-finite value(s) (first at {{row}})", bad[0])
    bad = np.flatnonzero(x <= 0)
    if bad.size:
        raise RowError(f"column {name!r} must be positive; {{row}} is {x[bad[0]]:g}", bad[0])
    return np.log(x)


def keep_below_highest(L, k: int) -> np.ndarray:
    """Boolean mask dropping the ``k`` highest losses (Epoch drops 5 of 245 as outliers)."""
    L = np.asarray(L, float)
    if k < 0:
        raise OptionError(f"{{drop_highest}} must be >= 0, not {k}", "drop_highest")
    if not len(L):
        raise UserError("no runs to fit (the table has a header and no rows)")
    if k >= len(L):
        raise UserError(f"cannot drop the {k} highest losses of {len(L)} rows")
    keep = np.ones(len(L), bool)
    if k:
        keep[np.argsort(L, kind="stable")[len(L) - k:]] = False
    return keep


def unit_picks(k: int, n_boot: int, seed=0) -> np.ndarray:
    """(n_boot, k) indices of the units each resample draws: k of the k units, with replacement. The one
    index draw of every bootstrap that refits resample by resample (rows, runs, groups, configurations).

    ``seed`` may be a ``Generator``, whose stream then continues. Row i is what the i-th of a loop of
    ``rng.integers(0, k, k)`` calls draws, so a loop may take one row a pass (``unit_picks(k, 1, rng)[0]``)
    and skip a failed resample without moving the others."""
    return np.random.default_rng(seed).integers(0, k, (n_boot, k))


def unit_counts(k: int, n_boot: int, seed=0) -> np.ndarray:
    """(n_boot, k) float counts of how often each unit is drawn in each resample (k of k, with replacement):
    the one weight draw of every bootstrap whose solver weights rows instead of copying them. ``seed`` may be
    a ``Generator``: drawing chunk after chunk from one generator gives the same counts as one call."""
    return np.random.default_rng(seed).multinomial(k, np.full(k, 1.0 / k), size=n_boot).astype(float)


def subsample_counts(k: int, n_boot: int, fraction: float, seed=0) -> np.ndarray:
    """(n_boot, k) 0/1 weights of subsampling: each refit keeps round(fraction·k) of the k units, drawn without
    replacement (Hoffmann et al.'s Table 2 caption: refits on 80% of the data, 100 times). Not a bootstrap: the
    spread of such refits is the sampling spread times about sqrt(1/fraction - 1) for a smooth estimate (0.5 at 0.8)."""
    check_fraction(fraction)
    m = int(round(fraction * k))
    rng = np.random.default_rng(seed)
    out = np.zeros((n_boot, k))
    for i in range(n_boot):
        out[i, rng.choice(k, m, replace=False)] = 1.0
    return out


def check_fraction(fraction) -> None:
    if isinstance(fraction, bool) or not isinstance(fraction, (int, float, np.floating)) or not 0 < fraction < 1:
        raise UserError(f"subsample fraction {fraction!r}: a share of the units in (0, 1) (0.8 keeps 80% each refit)")


def resample_counts(n: int, n_boot: int, seed: int = 0) -> np.ndarray:
    """(n_boot, n) counts of each row in each resample (rows drawn with replacement)."""
    return unit_counts(n, n_boot, seed)


def group_counts(labels, n_boot: int, seed: int = 0) -> np.ndarray:
    """(n_boot, rows) weights of a cluster bootstrap: each resample draws as many groups as there are,
    with replacement, and every row counts as often as its group was drawn. With one row per group
    this is ``resample_counts`` (same draws for the same seed)."""
    _, inverse = np.unique(np.asarray(labels), return_inverse=True)
    return unit_counts(int(inverse.max()) + 1, n_boot, seed)[:, inverse]


def resample_indices(n: int, n_boot: int, seed: int, groups=None, fraction: float | None = None):
    """Yield row indices of each resample: rows with replacement, or whole groups (a cluster bootstrap); with
    ``fraction``, that share of the rows (or groups) without replacement (``subsample_counts``' draws)."""
    if groups is None:
        if fraction is None:
            yield from unit_picks(n, n_boot, seed)
        else:
            yield from (np.flatnonzero(w) for w in subsample_counts(n, n_boot, fraction, seed))
        return
    labels = np.asarray(groups)
    members = [np.flatnonzero(labels == g) for g in dict.fromkeys(labels.tolist())]
    picks = unit_picks(len(members), n_boot, seed) if fraction is None else \
        (np.flatnonzero(w) for w in subsample_counts(len(members), n_boot, fraction, seed))
    for pick in picks:
        yield np.concatenate([members[i] for i in pick])


def progress_bar(iterable, desc: str, on: bool):
    """``iterable`` with a tqdm bar when ``on`` (tqdm is imported only then)."""
    if not on:
        return iterable
    from tqdm.auto import tqdm

    return tqdm(iterable, desc=desc)


def group_labels(table, groups) -> np.ndarray:
    """One label (as text) per table row, from a column name or a sequence as long as the table."""
    n = _n_rows(table)
    what = "the group labels"
    if isinstance(groups, str):
        if groups not in table:
            raise UserError(f"no column {groups!r} to group rows by; the table has {', '.join(map(str, table))}")
        what = f"column {groups!r}"
        groups = list(table[groups])
    # A blank label would silently put every unlabelled row in one made-up group ("nan") and resample
    # them together as if they were one model. (The CLI's CSV reader, like pandas, reads an empty cell as nan.)
    blank = [i for i, g in enumerate(groups)
             if g is None or (isinstance(g, float) and np.isnan(g)) or str(g).strip().lower() in ("", "nan")]
    if blank:
        raise RowError(f"{what} is blank in {len(blank)} row(s) (first: {{row}}): every row needs a group "
                       "to resample by", blank[0])
    labels = np.array([str(g) for g in groups])
    if labels.shape != (n,):
        raise UserError(f"{labels.size} group labels for a table of {n} rows")
    return labels
