"""scalinglab: a reproducible scaling-law workbook.

The front door for the library::

    import scalinglab as sl
    runs = sl.load_runs("runs.csv")            # or sl.load_runs(dataset="epoch-chinchilla")
    fit = sl.fit(runs, law="chinchilla", bootstrap=200)
    print(fit.summary())                        # fit.params, fit.bse, fit.conf_int(), fit.allocate(1e22)

``sl.laws`` is the registry of functional forms (``sl.laws.names()``, ``sl.laws.get(name)``), ``sl.data`` the
dataset registry. The package is deliberately light at import: these names load their modules when first used,
and fitting, data and the CLI's start never import torch. Modules that need torch (model, train, sweep
workers, model adapters) import it themselves.
"""

from __future__ import annotations

import importlib

from scalinglab.version import __version__

__all__ = ["FitOptions", "LawFit", "Resampling", "Runs", "__version__", "data", "fit", "laws", "load_runs"]

_LAZY = {"laws": "scalinglab.fitting.laws", "data": "scalinglab.data"}


def load_runs(path: str | None = None, *, dataset: str | None = None):
    """Runs from a CSV file or a registered dataset: ``scalinglab.runs.Runs`` (table, roles, label)."""
    from scalinglab.runs import load_runs as _load

    return _load(path, dataset=dataset)


def fit(runs, law: str = "chinchilla", *, where=None, fixed=None, drop_highest: int = 0, bootstrap: int = 0,
        seed: int = 0, level: float = 0.95, bootstrap_by: str | None = None, delta: float | None = None, options=None,
        **columns):
    """Fit a registered law to runs (``Runs``, a CSV path, or a table: a DataFrame or a dict of columns) and
    return its ``LawFit``: the same fit as `scalinglab fit` (``fitting.workflow.fit_runs``). ``where``: row
    conditions such as ``["tokens>1e9"]``; ``fixed``: parameters held, e.g. ``{"E": 1.69}``; ``drop_highest``: leave
    out the K highest losses first (Epoch's protocol drops 5); ``bootstrap``:
    resamples (of rows, or of whole groups named by the column ``bootstrap_by``), or give ``options``
    (``FitOptions``, with its ``Resampling``) instead of ``bootstrap``, ``seed``, ``level``, ``bootstrap_by`` and
    ``delta``; column roles by keyword (``n="params"``, ``d="tokens"``, ``c="flops"``, ``loss=...``, ``u=...``,
    ``x=...``, ``y=...``) override the dataset's roles and the defaults N, D, loss."""
    from scalinglab.fitting import laws as registry
    from scalinglab.fitting.huber import HUBER_DELTA
    from scalinglab.fitting.options import FitOptions, Resampling
    from scalinglab.fitting.workflow import FitRequest, fit_runs
    from scalinglab.runs import Runs

    if isinstance(runs, str):
        runs = load_runs(runs)
    elif not isinstance(runs, Runs):
        runs = Runs(runs, "table")
    form = registry.get(law)
    if options is None:
        options = FitOptions(delta=HUBER_DELTA if delta is None else delta,
                             resampling=Resampling(bootstrap, bootstrap_by, seed, level))
    cols = registry.Columns.from_roles(runs.roles, columns, tokens="d" in form.inputs)
    request = FitRequest(form, cols, options, dict(fixed or {}), drop_highest)
    return fit_runs(runs.select(where), request).fit


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
    raise AttributeError(f"module 'scalinglab' has no attribute {name!r}")


def __dir__() -> list[str]:
    # What the front door promises, not its import machinery (importlib, annotations).
    return sorted(__all__)
