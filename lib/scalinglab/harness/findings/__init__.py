"""Each notebook's headline findings, computed from its ``summary.json``, never typed by hand.

One module per notebook; ``format`` holds the key lookup and the number formatting they share.

One function per notebook takes that notebook's summary dict (``wb.summary``, or the JSON that
``Workbook.write_summary()`` wrote) and returns at most six :class:`Finding`\\ s: a number with its interval
where the summary has one, and one plain clause on what it means. Every number is read from the dict and
rounded to what the method resolves (2-3 significant digits), so a rerun updates the text with the
outputs. A key the summary lacks raises :class:`MissingSummaryKey` (a ``KeyError``) naming the notebook
and the key path; nothing is skipped silently. A value present but null (what the smoke profile writes
where it cannot estimate) renders as "n/a".

In a notebook::

    display(Markdown("*Computed at the end of this notebook.*"), display_id="findings")   # top cell
    ...
    wb.write_summary()
    update_display(Markdown(render_markdown(wb.name, wb.summary)), display_id="findings")

``python -m scalinglab.harness.results_page`` renders them all into ``docs/results.md``.
"""

from collections.abc import Callable, Mapping
from typing import Any

from scalinglab.harness.findings.benchmark import benchmark
from scalinglab.harness.findings.chinchilla import chinchilla_fit
from scalinglab.harness.findings.downstream import downstream
from scalinglab.harness.findings.estimator_audit import estimator_audit
from scalinglab.harness.findings.extrapolation import extrapolation
from scalinglab.harness.findings.format import (
    MAX_FINDINGS,
    NA,
    Finding,
    MissingSummaryKey,
    dec,
    diff,
    interval,
    pct,
    pval,
    sig,
)
from scalinglab.harness.findings.hyperparameters import hyperparameters
from scalinglab.harness.findings.inverse import inverse_scaling
from scalinglab.harness.findings.kaplan_hoffmann import kaplan_vs_hoffmann
from scalinglab.harness.findings.loss_curves import loss_curves

__all__ = ["FINDINGS", "MAX_FINDINGS", "NA", "Finding", "MissingSummaryKey", "benchmark", "chinchilla_fit", "dec",
           "diff", "downstream", "estimator_audit", "extrapolation", "findings", "hyperparameters", "interval",
           "inverse_scaling", "kaplan_vs_hoffmann", "loss_curves", "pct", "pval", "render_markdown", "sig"]

FINDINGS: dict[str, Callable[[Mapping[str, Any]], list[Finding]]] = {
    "01_chinchilla_fit": chinchilla_fit,
    "02_kaplan_vs_hoffmann": kaplan_vs_hoffmann,
    "03_inverse_scaling": inverse_scaling,
    "04_extrapolation": extrapolation,
    "05_estimator_audit": estimator_audit,
    "06_loss_curves": loss_curves,
    "07_downstream": downstream,
    "08_extrapolation_benchmark": benchmark,
    "09_hyperparameters_and_data": hyperparameters,
}


def findings(notebook: str, summary: Mapping[str, Any]) -> list[Finding]:
    """The findings of ``notebook`` (a key of :data:`FINDINGS`) from its summary dict."""
    try:
        fn = FINDINGS[notebook]
    except KeyError:
        raise KeyError(f"no findings for notebook {notebook!r}; known: {', '.join(FINDINGS)}") from None
    return fn(summary)


def render_markdown(notebook: str, summary: Mapping[str, Any]) -> str:
    """A '**Findings**' line and one Markdown bullet per finding (a note first in the smoke profile)."""
    lines = ["**Findings**", ""]
    if summary.get("profile") == "smoke":
        lines += ["*Smoke profile: fewer resamples and subset draws and tiny sweeps, so intervals and subset "
                  "statistics are rougher than the full run's (`make reproduce`).*", ""]
    lines += [f.markdown() for f in findings(notebook, summary)]
    return "\n".join(lines) + "\n"
