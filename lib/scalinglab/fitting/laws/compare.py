"""Which law? Several registry laws fitted to the same runs and scored on runs they never saw.

For each law: a fit on every selected run (its objective, information
criteria under the squares objective, and with a bootstrap the spread of its
prediction at a target), a *split* (rows matching ``holdout`` held out, or by
default the last ``1 − train_frac`` of the runs ordered by compute), and
*leave-one-group-out* (each group, e.g. each model size, predicted by a fit
on the others). Held-out error is RMSLE, √mean(log(predicted/actual))².

The verdict is a paired bootstrap of the held-out errors: resampling units
are drawn with replacement, the same draws for every law, and the RMSLE
difference between the runner-up and the best law is recomputed each time.
The unit must be what is independent. Held-out runs of one model size share
that size's misfit (the law is off for the size, not run by run), so
``paired_by`` names a column whose values are resampled whole (a cluster
bootstrap: e.g. the N column, each model size); by default each held-out run
is its own unit. Leave-one-group-out always resamples its groups. When the
interval includes 0 the data cannot tell the two laws apart; each difference
also carries the smallest difference the check could detect (80% power at
the 5% level, normal approximation from the interval's width). The fits are
held fixed in that resampling, so the interval is about which runs happened
to be held out, not about the fits' own spread (each law's bootstrap shows
that, at the target).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Any

import numpy as np

from scalinglab.errors import OptionError, UserError
from scalinglab.fitting.conditions import is_mask, rows_mask
from scalinglab.fitting.form import Law
from scalinglab.fitting.huber import HUBER_DELTA
from scalinglab.fitting.laws.table import Columns, fit_table, inputs_at, predict_arrays, predict_rows
from scalinglab.fitting.options import FitOptions, Resampling
from scalinglab.fitting.prediction.held_out import Predictions
from scalinglab.fitting.results import LawFit
from scalinglab.fitting.rows import group_labels, unit_picks
from scalinglab.serialization import to_jsonable

PAIRED_BOOT = 2000


@dataclass(frozen=True)
class LawScore:
    """One law's fits and held-out predictions. ``split``/``logo``: None when not run; ``notes``: why a fit
    was refused (then that check has no predictions for this law)."""

    law: Law
    fit: LawFit | None
    split: Predictions | None = None
    split_fit: LawFit | None = None
    logo: Predictions | None = None
    logo_groups: np.ndarray | None = None   # each LOGO prediction's group label
    at_target: dict[str, Any] | None = None
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return to_jsonable({**self.row(), "fit": self.fit.to_dict() if self.fit else None})

    def summary(self) -> str:
        r = self.row()
        notes = f"; {'; '.join(self.notes)}" if self.notes else ""
        return (f"{r['law']}: {r['status']}; split RMSLE {r['split_rmsle']:.4g} on {r['split_n']} runs, "
                f"leave-one-group-out RMSLE {r['logo_rmsle']:.4g}{notes}")

    def row(self) -> dict[str, Any]:
        ic = self.fit.information_criteria() if self.fit else None
        return {"law": self.law.name, "params": len(self.law.params),
                "status": self.fit.status if self.fit else "not fitted",
                "split_rmsle": self.split.rmsle() if self.split else float("nan"),
                "split_n": len(self.split.rows) if self.split else 0,
                "split_status": self.split_fit.status if self.split_fit else None,
                "logo_rmsle": self.logo.rmsle() if self.logo else float("nan"),
                "aic": ic["aic"] if ic else None, "bic": ic["bic"] if ic else None,
                "at_target": self.at_target, "notes": list(self.notes)}


@dataclass(frozen=True)
class LawComparison:
    """Every law's scores, the ranking on the primary check, and the paired-bootstrap verdict."""

    scores: dict[str, LawScore]
    check: str                          # what ranks: "split" or "logo"
    split_label: str | None
    group_by: str | None
    ranking: tuple[str, ...]
    differences: dict[str, dict[str, Any]]   # law → RMSLE minus the best's, with its paired interval
    verdict: str
    level: float
    n_rows: int
    target: dict[str, float] | None = None
    objective: str = "huber"
    seed: int = 0
    extra: dict[str, Any] = field(default_factory=dict)
    paired_by: str | None = None            # the split verdict's resampling unit: a column, or None for each run

    @property
    def best(self) -> str | None:
        return self.ranking[0] if self.ranking else None

    @property
    def paired_unit(self) -> str:
        """What the split verdict's bootstrap draws whole: each held-out run, or each value of a column."""
        return f"values of {self.paired_by}" if self.paired_by else "held-out runs"

    def table(self) -> list[dict[str, Any]]:
        return [self.scores[k].row() | {"rank": self.ranking.index(k) + 1 if k in self.ranking else None,
                                        "vs_best": self.differences.get(k)} for k in self.scores]

    def to_dict(self) -> dict[str, Any]:
        return to_jsonable({"check": self.check, "split": self.split_label, "group_by": self.group_by,
                            "n_rows": self.n_rows, "objective": self.objective, "level": self.level,
                            "seed": self.seed, "target": self.target, "ranking": list(self.ranking),
                            "paired_unit": self.paired_unit,
                            "verdict": self.verdict, "laws": self.table(),
                            "fits": {k: s.fit.to_dict() for k, s in self.scores.items() if s.fit}})

    def summary(self, source: str = "runs") -> str:
        pct = round(self.level * 100)
        lines = [f"{source}: {self.n_rows} runs, {len(self.scores)} laws; "
                 + ("Huber delta on log residuals" if self.objective == "huber" else "least squares"),
                 f"split: {self.split_label or 'none'}; leave-one-group-out by: {self.group_by or 'none'}; "
                 f"ranked by the {'split' if self.check == 'split' else 'leave-one-group-out'} RMSLE", ""]
        head = f"{'rank':>4}  {'law':<17}{'params':>6}  {'status':<10}{'split RMSLE':>12}{'LOGO RMSLE':>12}"
        head += f"{'AIC':>9}{'BIC':>9}   {'vs best (' + str(pct) + '% paired interval)'}"
        lines.insert(2, f"paired interval on the split resamples {self.paired_unit}")
        lines.append(head)
        for r in sorted(self.table(), key=lambda r: (r["rank"] is None, r["rank"] or 0)):
            ic = (f"{r['aic']:>9.1f}{r['bic']:>9.1f}" if r["aic"] is not None else f"{'n/a':>9}{'n/a':>9}")
            vs = r["vs_best"]
            diff = ("best" if r["rank"] == 1 else
                    f"{vs['diff']:+.4f} [{vs['ci'][0]:+.4f}, {vs['ci'][1]:+.4f}]" if vs else "")
            split, logo = (f"{v:>12.4f}" if np.isfinite(v) else f"{'-':>12}" for v in (r["split_rmsle"],
                                                                                         r["logo_rmsle"]))
            lines.append(f"{r['rank'] or '-':>4}  {r['law']:<17}{r['params']:>6}  {r['status']:<10}{split}{logo}{ic}"
                         f"   {diff}")
        if self.objective == "huber":
            lines.append("AIC/BIC: n/a under the Huber objective (no likelihood); --objective squares gives them")
        if self.target:
            where = ", ".join(f"{k}={v:g}" for k, v in self.target.items())
            lines += ["", f"prediction at {where} (fit on all runs" + (", bootstrap percentile interval)" if any(
                s.at_target and s.at_target.get("interval") for s in self.scores.values()) else ")")]
            for k, s in self.scores.items():
                t = s.at_target
                if t is None:
                    continue
                iv = t.get("interval")
                lines.append(f"  {k:<17}{t['predicted']:.4f}" + (f"  [{iv[0]:.4f}, {iv[1]:.4f}]" if iv else ""))
        notes = [f"  {k}: {n}" for k, s in self.scores.items() for n in s.notes]
        if notes:
            lines += ["", "notes:", *notes]
        lines += ["", f"verdict: {self.verdict}"]
        return "\n".join(lines)


def _order_values(law: Law, table, rows, cols: Columns, order_by: str | None) -> np.ndarray:
    if order_by:
        if order_by not in table:
            raise UserError(f"no column {order_by!r} to order runs by; the table has {', '.join(map(str, table))}")
        cells = np.asarray(list(table[order_by]), object)[rows]
        try:
            return np.array([float(v) for v in cells])
        except (TypeError, ValueError):
            bad = next(i for i, v in zip(rows, cells) if not _is_number(v))
            raise UserError(f"column {order_by!r} holds a non-number at row {bad}: {table[order_by][bad]!r}") from None
    inputs, _ = inputs_at(law, table, rows, cols)
    if "n" in inputs and "d" in inputs:
        return 6.0 * inputs["n"] * inputs["d"]
    if "x" in inputs:
        return inputs["x"]
    return -inputs["loss"]  # downstream: the better (lower-loss) models last


def _is_number(v) -> bool:
    try:
        float(v)
    except (TypeError, ValueError):
        return False
    return True


def _split_mask(laws, table, keep, cols, holdout, order_by, train_frac) -> tuple[np.ndarray, str]:
    """Held-out rows (a mask over the table) and a label saying how they were chosen."""
    if holdout is not None:
        mask = rows_mask(table, holdout, match="any") & keep
        label = ("the given rows" if is_mask(holdout) else " or ".join(
            map(str, [holdout] if isinstance(holdout, str) else holdout))) + " held out"
        return mask, label
    if not 0 < train_frac < 1:
        raise UserError(f"train fraction {train_frac:g} must lie strictly between 0 and 1")
    rows = np.flatnonzero(keep)
    values = _order_values(laws[0], table, rows, cols, order_by)
    order = rows[np.argsort(values, kind="stable")]
    k = int(np.ceil(train_frac * len(rows)))
    mask = np.zeros(len(keep), bool)
    mask[order[k:]] = True
    what = order_by or {"n": "compute 6ND", "x": "x", "loss": "loss (descending)"}[
        "n" if "n" in laws[0].inputs else laws[0].inputs[0]]
    return mask, f"the last {len(rows) - k} of {len(rows)} runs by {what} held out"


# z(0.975) + z(0.80): a true difference this many standard errors from 0 is detected with 80% power by a
# two-sided 5% test; the standard error is read off the percentile interval as width / (2 z(1 − (1 − level)/2)).
_Z_DETECT = 1.959964 + 0.841621


def paired_rmsle_differences(errors: Mapping[str, np.ndarray], units: np.ndarray, best: str, n_boot: int = PAIRED_BOOT,
                             seed: int = 0, level: float = 0.95) -> dict[str, dict[str, Any]]:
    """RMSLE(law) − RMSLE(best) with a paired percentile interval: ``errors`` are each law's log errors on the
    same held-out rows, ``units`` one label per row; whole units are drawn with replacement, the same draws for
    every law (a cluster bootstrap when units hold several rows). ``detectable``: the smallest difference the
    interval's width lets a 5% test find with 80% power."""
    return _paired(errors, np.asarray(units), best, n_boot, seed, level)


def _paired(errors: Mapping[str, np.ndarray], units: np.ndarray, best: str, n_boot: int, seed: int,
            level: float) -> dict[str, dict[str, Any]]:
    """RMSLE(law) − RMSLE(best) with a paired percentile interval: ``units`` (one label per held-out row)
    are resampled whole, the same draws for every law."""
    labels = list(dict.fromkeys(units.tolist()))
    members = [np.flatnonzero(units == g) for g in labels]
    picks = unit_picks(len(members), n_boot, seed)
    sq = {k: np.array([np.sum(e[m] ** 2) for m in members]) for k, e in errors.items()}
    counts = np.array([len(m) for m in members], float)
    q = [(1 - level) / 2 * 100, (1 + level) / 2 * 100]
    n_rows = counts[picks].sum(axis=1)
    base = np.sqrt(sq[best][picks].sum(axis=1) / n_rows)
    out = {}
    for k, s in sq.items():
        if k == best:
            continue
        diff = np.sqrt(s[picks].sum(axis=1) / n_rows) - base
        point = float(np.sqrt(s.sum() / counts.sum()) - np.sqrt(sq[best].sum() / counts.sum()))
        lo, hi = np.percentile(diff, q)
        z = NormalDist().inv_cdf((1 + level) / 2)
        out[k] = {"diff": point, "ci": [float(lo), float(hi)], "n_units": len(members),
                  "detectable": float(_Z_DETECT * (hi - lo) / (2 * z))}
    return out


def compare(laws: Sequence[Law], table, cols: Columns, *, select=None, holdout=None, order_by: str | None = None,
            train_frac: float = 0.7, group_by: str | None = None, logo: bool = True, paired_by: str | None = None,
            target: Mapping[str, float] | None = None, objective: str | None = "huber", n_boot: int = 0,
            seed: int = 0, level: float = 0.95, paired_boot: int = PAIRED_BOOT, delta: float = HUBER_DELTA,
            progress: bool = False) -> LawComparison:
    """Fit each law, score it on the split and (with ``group_by``, or each distinct first input when ``logo``)
    on leave-one-group-out, and say whether the data can tell the best from the runner-up.

    ``select``: rows to use (mask or conditions); ``holdout``: rows to hold out (mask or conditions, ORed),
    else the ordered split (``order_by`` column, default compute 6ND; ``train_frac`` fitted). ``target``: a
    point (role → value, e.g. {"n": 7e9, "d": 1.4e11}) where each law's prediction and its bootstrap spread
    (``n_boot`` resamples of all runs) are reported. ``n_boot`` also bootstraps the split's fit (resampling
    its training runs), so each held-out run gets an interval. ``paired_by``: a column whose values are the
    split verdict's resampling units (each held-out run when None). Laws must share a target (all losses, or
    all metrics).
    """
    laws = list(laws)
    if len(laws) < 2:
        raise UserError("compare needs at least two laws")
    if len({law.name for law in laws}) < len(laws):
        raise UserError("a law is named twice")
    if len({law.target for law in laws}) > 1:
        raise UserError(f"laws {', '.join(law.name for law in laws)} do not share a target (loss vs a downstream "
                        "metric): their errors do not compare")
    keep = rows_mask(table, select)
    if not keep.any():
        raise UserError("no rows selected")
    held, split_label = _split_mask(laws, table, keep, cols, holdout, order_by, train_frac)
    train = keep & ~held
    if not held.any():
        raise OptionError(f"the split ({split_label}) holds out none of the {int(keep.sum())} selected rows: too "
                          "few runs to keep some back; give more runs, or {holdout} COND", "holdout")
    if not train.any():
        raise UserError("the split holds out every selected row: nothing to fit")
    labels = None
    if group_by or logo:
        if group_by:
            labels = group_labels(table, group_by)
        else:  # each distinct value of the first input: each model size for L(N, D)
            first = laws[0].inputs[0]
            col = cols.c if first == "d" and cols.c else cols.for_role(first)
            labels = group_labels(table, col)
            group_by = col
    scores: dict[str, LawScore] = {}
    from scalinglab.fitting.rows import progress_bar

    how = FitOptions(delta=HUBER_DELTA if delta is None else delta, objective=objective,
                     resampling=Resampling(n_boot, seed=seed, level=level))
    for law in progress_bar(laws, "laws", progress):
        notes: list[str] = []
        fit = split_fit = split = logo_pred = logo_groups = at = None
        try:
            fit = fit_table(law, table, cols, keep, how.with_resampling(n_boot if target else 0))
        except UserError as exc:
            notes.append(f"fit on all runs refused: {exc}")
        try:
            split_fit = fit_table(law, table, cols, train, how)
            split = predict_rows(split_fit, table, np.flatnonzero(held), cols)
        except UserError as exc:
            notes.append(f"split refused: {exc}")
        if labels is not None:
            logo_pred, logo_groups, refused = _logo(law, table, cols, keep, labels, how.with_resampling(0))
            notes += refused
        if target and fit is not None:
            at = _at_target(fit, target, level)
        scores[law.name] = LawScore(law, fit, split, split_fit, logo_pred, logo_groups, at, tuple(notes))
    check = "split"
    rank_by = {k: s.split for k, s in scores.items() if s.split is not None}
    units_of = {k: p.rows for k, p in rank_by.items()}
    ranking = tuple(sorted(rank_by, key=lambda k: rank_by[k].rmsle()))
    differences: dict[str, dict[str, Any]] = {}
    if ranking:
        best = ranking[0]
        # Only laws scored on the same held-out runs compare pairwise (a refused split has none).
        errors = {k: rank_by[k].log_error for k in ranking if np.array_equal(units_of[k], units_of[best])}
        rows = units_of[best]
        units = group_labels(table, paired_by)[rows] if paired_by else rows
        differences = _paired(errors, units, best, paired_boot, seed, level)
        verdict = _verdict(ranking, differences, level, "split", f"{paired_by} values" if paired_by else "runs")
    else:
        verdict = "no law could be scored on the split"
    if labels is not None:
        logo_scored = [k for k, s in scores.items() if s.logo is not None and s.logo_groups is not None]
        if len(logo_scored) >= 2:
            lbest = min(logo_scored, key=lambda k: scores[k].logo.rmsle())
            same = [k for k in logo_scored if np.array_equal(scores[k].logo.rows, scores[lbest].logo.rows)]
            ldiff = _paired({k: scores[k].logo.log_error for k in same}, scores[lbest].logo_groups, lbest,
                            paired_boot, seed, level)
            lrank = tuple(sorted(same, key=lambda k: scores[k].logo.rmsle()))
            verdict += "; leave-one-group-out: " + _verdict(lrank, ldiff, level, "logo", f"{group_by} groups")
            extra = {"logo_ranking": list(lrank), "logo_differences": ldiff}
        else:
            extra = {}
    else:
        extra = {}
    return LawComparison(scores, check, split_label, group_by, ranking, differences, verdict, level,
                         int(keep.sum()), dict(target) if target else None, objective or "law default", seed, extra,
                         paired_by)


def _verdict(ranking, differences, level, check, unit: str) -> str:
    best = ranking[0]
    if len(ranking) < 2 or ranking[1] not in differences:
        return f"{best} is the only law scored"
    second = ranking[1]
    d = differences[second]
    lo, hi = d["ci"]
    pct = round(level * 100)
    over = f"over {d['n_units']} {unit}"
    if lo <= 0:
        return (f"cannot tell {best} and {second} apart (RMSLE difference {d['diff']:+.4f}, {pct}% paired interval "
                f"{over} [{lo:+.4f}, {hi:+.4f}] includes 0; it would detect a difference of about "
                f"{d['detectable']:.4f} with 80% power)")
    return (f"{best} predicts held-out runs best; next {second} (RMSLE +{d['diff']:.4f}, {pct}% paired interval "
            f"{over} [{lo:+.4f}, {hi:+.4f}])")


def _logo(law, table, cols, keep, labels, options: FitOptions):
    """Pooled predictions of each group by a fit on the other groups; groups a fit refused are noted."""
    order = list(dict.fromkeys(labels[keep].tolist()))
    if len(order) < 2:
        return None, None, [f"leave-one-group-out needs 2 groups, got {len(order)}"]
    preds, groups, refused = [], [], []
    for g in order:
        out = keep & (labels == g)
        try:
            f = fit_table(law, table, cols, keep & ~out, options)
            preds.append(predict_rows(f, table, np.flatnonzero(out), cols))
            groups.append(np.full(int(out.sum()), g, object))
        except UserError as exc:
            refused.append(f"leave-one-group-out: group {g} not predicted ({exc})")
    if not preds:
        return None, None, refused
    cat = {k: np.concatenate([getattr(p, k) for p in preds]) for k in ("rows", "actual", "predicted", "lower",
                                                                          "upper")}
    inputs = {k: np.concatenate([p.inputs[k] for p in preds]) for k in preds[0].inputs}
    return (Predictions(**cat, level=preds[0].level, inputs=inputs, space=preds[0].space),
            np.concatenate(groups).astype(str), refused)


def _at_target(fit: LawFit, target: Mapping[str, float], level: float) -> dict[str, Any] | None:
    missing = [r for r in fit.law.inputs if r not in target]
    if missing:
        return None
    inputs = {r: np.array([float(target[r])]) for r in fit.law.inputs}
    p = predict_arrays(fit, inputs, np.array([np.nan]), level=level)
    out: dict[str, Any] = {"predicted": float(p.predicted[0])}
    if p.has_interval:
        out["interval"] = [float(p.lower[0]), float(p.upper[0])]
        out["n_replicates"] = int(len(fit.bootstrap.samples))
    return out
