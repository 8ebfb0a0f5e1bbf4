"""A registry of scaling-law forms: each with its citation, its parameters' meaning, and one fit for all.

``get(name)`` gives a ``Law`` (``forms``); ``fit_law`` (``base``) fits one to arrays as ``FitOptions`` say
(δ, ``Resampling``), ``fit_table`` to rows of a table by column names, and ``predict_rows`` gives its
``Predictions`` for rows it did not see; ``compare`` ranks several on held-out runs. ``scalinglab fit --law NAME``
and ``scalinglab compare-laws`` are the command-line faces. numpy and scipy only.
"""

from __future__ import annotations

from scalinglab.errors import UserError
from scalinglab.fitting.form import Law, Param
from scalinglab.fitting.laws.base import fit_law
from scalinglab.fitting.laws.forms import LAWS
from scalinglab.fitting.laws.table import Columns, fit_table, inputs_at, predict_rows
from scalinglab.fitting.options import FitOptions, Resampling
from scalinglab.fitting.prediction.held_out import Predictions
from scalinglab.fitting.results import Bootstrap, LawFit

__all__ = ["LAWS", "Columns", "FitOptions", "Law", "Bootstrap", "LawFit", "Param", "Predictions", "Resampling",
           "fit_law", "fit_table", "get", "inputs_at", "names", "predict_rows"]


def names() -> tuple[str, ...]:
    return tuple(LAWS)


def get(name: str) -> Law:
    """The law called ``name``, or a UserError listing the registry."""
    try:
        return LAWS[name]
    except KeyError:
        raise UserError(f"no law {name!r}; the laws are {', '.join(LAWS)}") from None
