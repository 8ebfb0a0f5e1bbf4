"""scalinglab: a reproducible scaling-law workbook.

The front door for the library::

    import scalinglab as sl
    runs = sl.load_runs("runs.csv")            # or sl.load_runs(dataset="epoch-chinchilla")
    fit = sl.fit(runs, law="chinchilla", bootstrap=200)
    print(fit.summary())                        # fit.params, fit.bse, fit.conf_int(), fit.allocate(1e22)
    curve = sl.fit_curve("curves.csv", law="multipower")   # (run, step, lr, loss) rows: curve.fit.predict(...)

``sl.laws`` is the registry of functional forms (``sl.laws.names()``, ``sl.laws.get(name)``), ``sl.data`` the
dataset registry. The package is deliberately light at import: these names load their modules when first used,
and fitting, data and the CLI's start never import torch. Modules that need torch (model, train, sweep
workers, model adapters) import it themselves.
"""

from __future__ import annotations

import importlib

from scalinglab.version import __version__

__all__ = ["FitOptions", "LawFit", "LbfgsSettings", "NewtonSettings", "Resampling", "Runs", "__version__", "data",
           "fit", "fit_curve", "laws", "load_runs"]

_LAZY = {"laws": "scalinglab.fitting.laws", "data": "scalinglab.data"}


def load_runs(path: str | None = None, *, dataset: str | None = None):
    """Runs from a CSV file or a registered dataset: ``scalinglab.runs.Runs`` (table, roles, label)."""
    from scalinglab.runs import load_runs as _load

    return _load(path, dataset=dataset)


def fit(runs, law="chinchilla", *, where=None, fixed=None, tied=None, drop_highest: int = 0, bootstrap: int = 0,
        seed: int = 0, level: float = 0.95, bootstrap_by: str | None = None, subsample: float | None = None,
        delta: float | None = None, solver: str | None = None, options=None, **columns):
    """Fit a registered law to runs (``Runs``, a CSV path, or a table: a DataFrame or a dict of columns) and
    return its ``LawFit`` (variable projection's ``VarproFit`` with ``solver="varpro"``): the same fit as
    `scalinglab fit` (``fitting.workflow.fit_runs``), keeping the runs it saw (``fit.data``).

    ``law``: a name in ``sl.laws``, or a ``Law`` whose parameters are set, as lmfit's Parameters are
    (``sl.laws.get("kaplan").set("alpha_N", value=0.076, vary=False)``, ``.set("alpha_D", expr="alpha_N")``).
    ``solver``: a name in ``fitting.solvers`` (default the law's own; "least-squares" fits Chinchilla's form by
    the generic solver, which takes any tie, start or range; "varpro" returns variable projection's ``VarproFit``,
    least squares with Wald intervals, and takes no constraint or bootstrap). ``where``: row conditions such as
    ``["tokens>1e9"]``; ``fixed``: parameters held, e.g. ``{"E": 1.69}``; ``tied``: parameters held equal to
    another or given by a formula, e.g. ``{"alpha_N": "alpha_D"}`` (``FitOptions.tied``); ``drop_highest``: leave
    out the K highest losses first (Epoch's protocol drops 5); ``bootstrap``: resamples (of rows, or of whole
    groups named by the column ``bootstrap_by``); ``subsample``: instead, refits on that share of the runs (or groups)
    drawn without replacement (Hoffmann et al.'s 0.8; ``fit.bootstrap`` then holds subsampling's spread, not a
    sampling interval); or give ``options`` (``FitOptions``, with its ``Resampling``) instead of ``bootstrap``,
    ``seed``, ``level``, ``bootstrap_by``, ``subsample``, ``delta``, ``tied`` and ``solver``; column roles by keyword
    (``n="params"``, ``d="tokens"``, ``c="flops"``, ``loss=...``, ``u=...``, ``x=...``,
    ``y=...``) override the dataset's roles and the defaults N, D, loss."""
    import os

    from scalinglab.errors import UserError
    from scalinglab.fitting import laws as registry
    from scalinglab.fitting.huber import HUBER_DELTA
    from scalinglab.fitting.options import FitOptions, Resampling
    from scalinglab.fitting.workflow import FitRequest, fit_runs
    from scalinglab.runs import Runs

    unknown = sorted(set(columns) - set(COLUMN_ROLES))
    if unknown:   # n_col="nope" and bogus_col= were ignored silently
        hint = f"; did you mean {unknown[0][:-4]}=?" if unknown[0].endswith("_col") and \
            unknown[0][:-4] in COLUMN_ROLES else ""
        raise UserError(f"sl.fit: unknown keyword {unknown[0]!r}; column roles are {', '.join(COLUMN_ROLES)} "
                        f"(e.g. n='params'){hint}")
    if options is not None:
        given = [k for k, v, default in (("bootstrap", bootstrap, 0), ("seed", seed, 0), ("level", level, 0.95),
                                         ("bootstrap_by", bootstrap_by, None), ("subsample", subsample, None),
                                         ("delta", delta, None),
                                         ("tied", tied, None), ("solver", solver, None))
                 if v != default]
        if given:   # bootstrap=50 beside options=FitOptions(...) was dropped without a word
            raise UserError(f"sl.fit: {given[0]}= given beside options=; options' resampling, delta, ties and "
                            "solver decide, so give it there (FitOptions(delta=..., tied=..., solver=..., "
                            "resampling=Resampling(n, by, seed, level)))")
        if not isinstance(options, FitOptions):
            raise UserError(f"sl.fit: options must be a FitOptions, not {type(options).__name__}")
    if where is not None and not isinstance(where, str) and not (
            isinstance(where, (list, tuple)) and all(isinstance(c, str) for c in where)):
        raise UserError(f"sl.fit: where={where!r}; give a condition such as 'tokens>1e9', or a list of them")
    if isinstance(runs, (str, os.PathLike)):
        runs = load_runs(os.fspath(runs))
    elif not isinstance(runs, Runs):
        runs = Runs(_table(runs), "table")
    form = law if isinstance(law, registry.Law) else registry.get(law)
    if options is None:
        options = FitOptions(delta=HUBER_DELTA if delta is None else delta, tied=tied or (), solver=solver,
                             resampling=Resampling(bootstrap, bootstrap_by, seed, level, subsample))
    cols = registry.Columns.from_roles(runs.roles, columns, tokens="d" in form.inputs)
    request = FitRequest(form, cols, options, dict(fixed or {}), drop_highest)
    return fit_runs(runs.select(where), request).fit


def fit_curve(runs=None, law: str = "multipower", *, dataset=None, schedules=(), where=None, bootstrap: int = 0,
              seed: int = 0, level: float = 0.95, calibrate: bool = False):
    """Fit a law of the whole training curve under its learning-rate schedule (``multipower``, Luo et al. 2025;
    ``tissue``, Tissue et al. 2024; ``baseline``, a power law in steps) to (run, step, lr, loss) rows: the same fit
    as `scalinglab fit-curve` (``curves.report.fit_source``), returning its report (``.fit``, a ``CurveFit``:
    params, predict(curve); ``summary()``, ``to_dict()``, ``save(path)``, ``plot(path)``).

    ``runs``: a CSV path, a DataFrame or a dict of columns run, step, lr, loss (loss empty where none was logged);
    or ``dataset``: a registered curve or a list of them (Luo et al.'s ``mpl-*``, their schedules rebuilt step by
    step). ``schedules``: each run's exact schedule (``"RUN=wsd:peak=3e-4,steps=24000,cooldown=0.2"`` or a CSV of
    run, step, lr); ``where``: row conditions; ``bootstrap``: block-bootstrap replicates (a parameter-only band);
    ``calibrate``: leave each run (a schedule) out in turn, for an interval calibrated on schedules never seen."""
    import os

    from scalinglab.curves.report import fit_source
    from scalinglab.errors import UserError
    from scalinglab.runs import Runs, Table

    if (runs is None) == (dataset is None):
        raise UserError("sl.fit_curve: give runs (a CSV path, DataFrame, dict of columns or Runs) or dataset=, "
                        "one of them")
    label = None
    if isinstance(runs, Runs):
        runs, label = (runs.table.to_frame() if isinstance(runs.table, Table) else runs.table), runs.label
    elif isinstance(runs, (list, tuple)) and runs and all(isinstance(r, str) for r in runs):
        raise UserError("sl.fit_curve: runs is a list of names; registered curves are dataset=[...]")
    elif runs is not None and not isinstance(runs, (str, os.PathLike)):
        import pandas as pd

        runs = _table(runs, "sl.fit_curve")
        if not isinstance(runs, (dict, pd.DataFrame)):
            raise UserError(f"sl.fit_curve: runs must be a CSV path, a DataFrame, a dict of columns or Runs, not "
                            f"{type(runs).__name__}")
        runs = runs if isinstance(runs, pd.DataFrame) else pd.DataFrame(runs)
    return fit_source(runs, datasets=dataset, schedules=schedules, where=where, law=law, n_boot=bootstrap, seed=seed,
                      level=level, calibrate=calibrate, label=label)


# The column roles sl.fit takes by keyword (fitting.laws.table.Columns' roles).
COLUMN_ROLES = ("n", "d", "c", "loss", "u", "x", "y")


def _table(runs, who: str = "sl.fit"):
    """A table given to ``who`` (sl.fit, sl.fit_curve): a DataFrame as it is, a dict of columns checked for equal
    lengths (pandas' own error named no column), anything else refused."""
    from scalinglab.errors import UserError

    if isinstance(runs, dict):
        lengths = {}
        for k, v in runs.items():
            try:
                lengths[k] = len(v)
            except TypeError:
                raise UserError(f"{who}: column {k!r} is not a sequence of values") from None
        if len(set(lengths.values())) > 1:
            (a, la), (b, lb) = sorted(lengths.items(), key=lambda kv: kv[1])[::len(lengths) - 1]
            raise UserError(f"{who}: columns of unequal length: {a!r} holds {la} values, {b!r} {lb}")
        return runs
    if runs is None or isinstance(runs, (bool, int, float, bytes)):
        raise UserError(f"{who}: runs must be Runs, a CSV path, a DataFrame or a dict of columns, not "
                        f"{type(runs).__name__}")
    return runs


def __getattr__(name: str):
    if name in _LAZY:
        return importlib.import_module(_LAZY[name])
    if name == "Runs":
        from scalinglab.runs import Runs

        return Runs
    if name == "LawFit":
        from scalinglab.fitting.results import LawFit

        return LawFit
    if name in ("FitOptions", "Resampling"):
        from scalinglab.fitting import options

        return getattr(options, name)
    if name == "NewtonSettings":
        from scalinglab.fitting.chinchilla.settings import NewtonSettings

        return NewtonSettings
    if name == "LbfgsSettings":
        from scalinglab.fitting.chinchilla.lbfgs_reference import LbfgsSettings

        return LbfgsSettings
    raise AttributeError(f"module 'scalinglab' has no attribute {name!r}")


def __dir__() -> list[str]:
    # What the front door promises, not its import machinery (importlib, annotations).
    return sorted(__all__)
