"""Porian et al. 2024's released isoFLOP data, and their estimator's settings.

"Resolving Discrepancies in Compute-Optimal Scaling of Language Models"
(arXiv:2406.19146) walks from Kaplan's exponent (0.835 on RefinedWeb) to
Hoffmann's (0.497): Kaplan's setup reproduced, then four changes, one at a time. Their repository publishes, per
configuration, the isoFLOP points behind each fit as pandas pickles
(``data/summary_df*.pickle.xz``, registered in ``registry/porian2024.toml``).

A pickle can run arbitrary code, so :func:`read_pickle` runs only after the
registry has matched the file's sha256, and then with an Unpickler that
resolves nothing but the pandas/numpy constructors these files use
(``numpy.core`` is mapped to ``numpy._core``, its name since numpy 2).
:func:`points_loader` flattens a pickle into one tidy row per (configuration,
budget, model size); it is the registry's ``loader`` hook for the four pickles.
"""

from __future__ import annotations

import lzma
import math
import pickle
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from scalinglab.errors import DataError, UserError

# What configures one of their isoFLOP families (column names as in the pickles,
# except that their `val` is our `loss_split`).
CONFIG_COLUMNS = ("dataset", "hparams", "warmup", "decay", "param_count", "loss_split")

# The correction ladder of their Figure 1 / Table 2: (hparams, warmup, decay,
# param_count, loss_split). "kaplan" param_count is non-embedding N with 6N
# FLOPs; "standard" adds the output head. Kaplan's reproduction is scored on
# the smoothed train loss, the rest on validation loss.
STEPS = {
    "kaplan_reproduction": ("base", "long", "kaplan", "kaplan", "train"),
    "plus_head": ("base", "long", "kaplan", "standard", "val"),
    "plus_short_warmup": ("base", "short", "kaplan", "standard", "val"),
    "plus_cosine": ("base", "short", "chinchilla", "standard", "val"),
    "tuned_constant_lr": ("tuned", "short", "const", "standard", "val"),
}
STEP_LABELS = {
    "kaplan_reproduction": "Reproducing Kaplan",
    "plus_head": "+ last-layer FLOPs",
    "plus_short_warmup": "+ short warmup",
    "plus_cosine": "+ cosine decay matched to budget",
    "tuned_constant_lr": "tuned lr/batch/β2, constant LR",
}
DATASETS = {"rw": "RefinedWeb", "owt2": "OpenWebText2"}
# The pickle behind each dataset's five steps, as `porian-exponent-fits` names it.
SOURCE_FILES = {"rw": "data/summary_df.pickle.xz", "owt2": "data/summary_df_owt2.pickle.xz"}


@dataclass(frozen=True)
class NoiseSchedule:
    """Seed-noise sd as a function of the loss: ``low`` below ``loss_low``,
    ``high`` above ``loss_high``, log-log interpolated between."""

    low: float
    high: float
    loss_low: float
    loss_high: float

    def __call__(self, loss: np.ndarray) -> np.ndarray:
        t = np.clip((np.log(loss) - math.log(self.loss_low)) / math.log(self.loss_high / self.loss_low), 0, 1)
        return np.exp(math.log(self.low) + t * math.log(self.high / self.low))


# Their configs.py: RW noise 0.002 → 0.05, OWT2 0.01 → 0.1, between "thresholds"
# 3 and 7 (OWT2: 3 and 6). Their get_noise_for_loss compares those thresholds
# with log(loss), so in loss units they are e^3 ≈ 20 and e^7 (e^6): every loss in
# these data (< 11) gets the low noise. We keep that behaviour, since it is what
# produced the published intervals and weights.
NOISE = {
    "rw": NoiseSchedule(low=0.002, high=0.05, loss_low=math.exp(3), loss_high=math.exp(7)),
    "owt2": NoiseSchedule(low=0.01, high=0.1, loss_low=math.exp(3), loss_high=math.exp(6)),
}
N_BOOT = 1000  # their bootstrap_iters

# Every global the four released pickles need, after numpy.core → numpy._core.
_ALLOWED = {
    ("builtins", "slice"),
    ("numpy", "dtype"),
    ("numpy", "ndarray"),
    ("numpy._core.multiarray", "_reconstruct"),
    ("numpy._core.multiarray", "scalar"),
    ("numpy._core.numeric", "_frombuffer"),
    ("pandas._libs.internals", "_unpickle_block"),
    ("pandas.core.frame", "DataFrame"),
    ("pandas.core.series", "Series"),
    ("pandas.core.indexes.base", "Index"),
    ("pandas.core.indexes.base", "_new_Index"),
    ("pandas.core.indexes.range", "RangeIndex"),
    ("pandas.core.internals.managers", "BlockManager"),
    ("pandas.core.internals.managers", "SingleBlockManager"),
}


# What the allowed globals raise when a file hands them junk arguments (or a BUILD state of the wrong form).
_JUNK_ARGUMENTS = (TypeError, ValueError, AttributeError, KeyError, IndexError, OverflowError, RecursionError)


class _RestrictedUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str):
        if module == "numpy.core" or module.startswith("numpy.core."):
            module = "numpy._core" + module[len("numpy.core"):]
        if (module, name) not in _ALLOWED:
            raise pickle.UnpicklingError(f"global {module}.{name} is not allowed")
        return super().find_class(module, name)


def read_pickle(path: Path) -> pd.DataFrame:
    """Unpickle one of their xz-compressed summaries with the restricted Unpickler.

    Call only on a file whose sha256 the registry has checked (``data.locate``).
    """
    try:
        fh = lzma.open(path)
    except OSError as exc:
        raise DataError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        with fh:
            obj = _RestrictedUnpickler(fh).load()
    except (pickle.UnpicklingError, lzma.LZMAError, EOFError) as exc:
        raise DataError(f"{path}: not a Porian et al. summary pickle ({exc})") from None
    except _JUNK_ARGUMENTS as exc:
        # Only the file's opcodes run inside load(), calling nothing but the allowed globals: one of them
        # raising (slice with four arguments, a dtype named 'junk', a block of the wrong shape) is the
        # file's fault. Anything else (MemoryError, KeyboardInterrupt, an OSError) is not a data error.
        raise DataError(f"{path}: not a Porian et al. summary pickle (an allowed global rejected its "
                        f"arguments: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})") from None
    if not isinstance(obj, pd.DataFrame) or "data" not in obj.columns:
        raise DataError(f"{path}: expected a DataFrame with a 'data' column, got {type(obj).__name__}")
    return obj.rename(columns={"val": "loss_split"})


def flatten_points(summary: pd.DataFrame, source_file: str = "") -> pd.DataFrame:
    """One row per (configuration, budget, model size): flops, n, tokens, loss."""
    rows = []
    for _, cfg in summary.iterrows():
        for _, budget in cfg["data"].iterrows():
            n = budget.get("orig_n")
            if not isinstance(n, pd.Series):  # a budget with < 3 sizes has no points
                continue
            for ni, ti, li in zip(n.to_numpy(float), budget["orig_t"].to_numpy(float),
                                  budget["orig_loss"].to_numpy(float)):
                rows.append((source_file, *(cfg[c] for c in CONFIG_COLUMNS), float(budget["flops"]), ni, ti, li))
    return pd.DataFrame(rows, columns=["source_file", *CONFIG_COLUMNS, "flops", "n", "tokens", "loss"])


def points_loader(path: Path, dataset) -> pd.DataFrame:
    """The registry's loader hook: a verified pickle → its tidy isoFLOP points."""
    return flatten_points(read_pickle(path), source_file=f"data/{Path(path).name}")


def summary(name: str = "porian-summary-rw") -> pd.DataFrame:
    """A registered pickle as the authors' DataFrame (checksum verified first)."""
    from scalinglab import data

    return read_pickle(data.locate(name))


def isoflop_points(names=("porian-summary-rw", "porian-summary-owt2")) -> pd.DataFrame:
    """The tidy isoFLOP points of the named registered pickles, concatenated."""
    from scalinglab import data

    return pd.concat([data.load(n) for n in names], ignore_index=True)


def step_points(points: pd.DataFrame, dataset: str, step: str) -> pd.DataFrame:
    """The points of one correction step (a key of STEPS) on one dataset (rw, owt2)."""
    if step not in STEPS:
        raise UserError(f"unknown Porian et al. step {step!r}; one of {', '.join(STEPS)}")
    if dataset not in DATASETS:
        raise UserError(f"unknown Porian et al. dataset {dataset!r}; one of {', '.join(DATASETS)}")
    want = dict(zip(CONFIG_COLUMNS, (dataset, *STEPS[step])))
    mask = np.logical_and.reduce([points[c] == v for c, v in want.items()])
    return points[mask]


def estimate(points: pd.DataFrame, dataset: str, step: str, method: str = "spline", n_boot: int = N_BOOT,
             seed: int = 0, **options):
    """(optima, fit) for one step with Porian et al.'s estimator (spline, their noise, 1/var weights)."""
    from scalinglab.fitting.frontier import isoflop

    optima = isoflop.budget_optima(step_points(points, dataset, step), method=method, n_boot=n_boot,
                                   seed=seed, noise=NOISE[dataset], **options)
    return optima, isoflop.fit_exponent(optima, weighted=n_boot > 0)


def published_exponents(fits: pd.DataFrame | None = None) -> pd.DataFrame:
    """Their published a of N* ∝ C^a per (dataset, step): a, ci_lo, ci_hi (bootstrap 95%), n_bootstrap.

    From the registered ``porian-exponent-fits`` (their ``bs_median_weighted`` fits) unless
    ``fits`` is given; one row per dataset of DATASETS and step of STEPS, in the ladder's order.
    These are targets: Kaplan's own laws (0.73, and 0.88 at a fixed batch) are not in this table.
    """
    if fits is None:
        from scalinglab import data

        fits = data.load("porian-exponent-fits")
    rows = []
    for dataset, source in SOURCE_FILES.items():
        for step in STEPS:
            match = step_points(fits[fits["source_file"] == source], dataset, step)
            if len(match) != 1:
                raise DataError(f"porian-exponent-fits: {len(match)} rows for {DATASETS[dataset]}, "
                                f"{STEP_LABELS[step]} in {source} (expected 1)")
            r = match.iloc[0]
            rows.append(dict(dataset=dataset, step=step, label=STEP_LABELS[step], a=float(r["a_n_exponent"]),
                             ci_lo=float(r["a_ci95_lo"]), ci_hi=float(r["a_ci95_hi"]),
                             n_bootstrap=int(r["n_bootstrap"])))
    return pd.DataFrame(rows)
