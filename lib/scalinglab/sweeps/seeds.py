"""A sweep report's exponents and seed noise as printable tables (notebook 02, section 5).

Everything here reads what :func:`scalinglab.sweeps.report` (a ``SweepReport``, or its
``to_dict()``) and :func:`~scalinglab.sweeps.exponent_differences` already computed, or a
sweep's isoFLOP points (:meth:`scalinglab.sweeps.SweepStore.points`): no
training, no database writes. Each function returns a DataFrame whose cells are
short strings or rounded numbers, so a table prints under 120 characters.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

# The estimators of the report, in the order notebook 02 shows them, and their exponent keys.
ESTIMATORS = (("spline", "spline optima"), ("parabola", "parabola, 5 sizes"), ("envelope", "Approach 1"),
              ("seeds", "seed bootstrap"), ("seeds_scatter", "seeds + scatter, GLS"))
# The differences add the spline exponent with each sweep's shapes resampled whole (``block``), first.
DIFFERENCES = (("block", "spline, shapes resampled"),) + ESTIMATORS


def _as_dicts(reports) -> dict[str, Mapping]:
    """{preset: report} with each ``SweepReport`` as its ``to_dict()``."""
    return {p: r.to_dict() if hasattr(r, "to_dict") else r for p, r in reports.items()}


def _estimate(report: Mapping, key: str) -> Mapping:
    boot = report.get("exponent_seed_bootstrap") or {}
    return {"spline": report.get("exponent") or {}, "parabola": report.get("exponent_parabola") or {},
            "envelope": report.get("exponent_envelope") or {}, "seeds": boot,
            "seeds_scatter": boot.get("scatter") or {}}[key]


def _with_ci(e: Mapping, places: int = 2, sign: bool = False) -> str:
    """``a [lo, hi]``, ``a`` alone without an interval, "—" without an estimate."""
    if e.get("a", e.get("difference")) is None:
        return "—"
    x = e.get("a", e.get("difference"))
    f = f"{{:{'+' if sign else ''}.{places}f}}"
    ci = e.get("ci")
    if not ci or None in ci or not np.all(np.isfinite(ci)):
        return f.format(x)
    return f"{f.format(x)} [{f.format(ci[0])}, {f.format(ci[1])}]"


def has_exponent(reports: Mapping[str, Mapping]) -> bool:
    """Whether any sweep placed enough optima inside its sizes for a spline exponent (a smoke sweep does not)."""
    return any((r.get("exponent") or {}).get("a") is not None for r in _as_dicts(reports).values())


def exponent_table(reports: Mapping[str, Mapping]) -> pd.DataFrame:
    """One row per preset: runs finished/planned, then a [95% interval] by each estimator of :data:`ESTIMATORS`
    ("—" where the report has none)."""
    rows = {p: {"runs": f"{r['finished']}/{r['planned']}",
                **{label: _with_ci(_estimate(r, key)) for key, label in ESTIMATORS}}
            for p, r in _as_dicts(reports).items()}
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis("preset")


def difference_table(diffs: Mapping[str, Mapping]) -> pd.DataFrame:
    """a_kaplan − a_hoffmann per estimator of :data:`DIFFERENCES` (``exponent_differences``' dict): the
    difference [95% interval], how the interval was made, whether it excludes 0, the interval with the smaller
    fit's degrees of freedom (Welch intervals only), and whether its independence assumption holds for both
    sweeps."""
    rows = {}
    for key, label in DIFFERENCES:
        d = diffs.get(key) or {}
        if d.get("difference") is None or not np.all(np.isfinite(d.get("ci", [np.nan]))):
            continue
        welch = d.get("method") == "welch_t"
        lo_df = d.get("ci_min_df")
        rows[label] = {"a_k − a_h": _with_ci(d, sign=True),
                       "interval": (f"Welch t, {d['df']:.1f} df" if welch else "shapes resampled"
                                    if d.get("method") == "block_bootstrap" else "bootstrap pairs"),
                       "excludes 0": bool(d["ci"][0] > 0 or d["ci"][1] < 0),
                       "smaller fit's df": _with_ci({"a": d["difference"], "ci": lo_df}, sign=True) if lo_df else "",
                       "independent optima": "yes" if d.get("assumption_holds", True) else "no"}
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis("estimator")


def noise_table(reports: Mapping[str, Mapping]) -> pd.DataFrame:
    """One row per preset from each report's ``replicates``: seeds, points with replicates, the typical
    (median) and pooled seed-to-seed sd, the noise model's floor and slope (nats of sd per nat of excess),
    the one-seed fallback (seed 0's parabola residual sd) and how many typical sds it is."""
    rows = {}
    for p, r in _as_dicts(reports).items():
        nz = r.get("replicates") or {}
        if nz.get("seed_sd") is None:
            continue
        median, fallback = nz.get("median_point_sd"), nz.get("parabola_sd")
        rows[p] = {"seeds": nz["seeds"], "points": nz["points_with_replicates"], "median sd": median,
                   "pooled sd": nz["seed_sd"], "floor": nz.get("noise_floor"), "slope": nz.get("noise_slope"),
                   "one-seed fallback": fallback,
                   "fallback / median": (fallback / median) if fallback and median else None}
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis("preset").round(4).round({"fallback / median": 1})


def seed_exponent_table(measured: Mapping[str, Sequence[Mapping]],
                        fallback: Mapping[str, Sequence[Mapping]] | None = None) -> pd.DataFrame:
    """Each seed's own exponent, one row per (preset, seed): with the noise measured on all seeds
    (``report["replicates"]["exponent_by_seed"]``) and, if given, analysed as a one-seed sweep with the
    fallback noise (``exponent_by_seed(db, noise="fallback")``). NaN where a seed has no fit."""
    rows = []
    for p, entries in measured.items():
        other = {e["replicate"]: e.get("a") for e in (fallback or {}).get(p, [])}
        for e in entries:
            row = {"preset": p, "seed": e["replicate"], "a, measured noise": e.get("a")}
            if fallback is not None:
                row["a, as a one-seed sweep"] = other.get(e["replicate"])
            rows.append(row)
    return pd.DataFrame(rows).set_index(["preset", "seed"]).astype(float).round(3)


def noisiest_points(points: pd.DataFrame, n: int = 2, floor: float | None = None) -> pd.DataFrame:
    """The ``n`` (budget, size) points whose seeds disagree most: flops, N, sd, sd in units of ``floor``
    (the noise model's floor) and the seeds' losses, lowest first."""
    from scalinglab.fitting.frontier.isoflop import replicate_cells

    cells = replicate_cells(points).nlargest(n, "sd")
    out = pd.DataFrame({"flops": [f"{c:.3g}" for c in cells["flops"]], "n": cells["n"].astype(int),
                        "sd": cells["sd"]}, index=cells.index)
    if floor:
        out["sd / floor"] = cells["sd"] / floor
    at = [(points.flops == r.flops) & (points.n == r.n) for r in cells.itertuples()]
    out["seeds"] = [", ".join(f"{v:.2f}" for v in sorted(points.loc[m, "loss"])) for m in at]
    return out.reset_index(drop=True).round({"sd": 3, "sd / floor": 1})


def sd_by_side(points: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Median seed-to-seed sd per preset on each side of its budgets' best size (smaller, best, larger)."""
    from scalinglab.fitting.frontier.isoflop import replicate_cells

    rows = {}
    for p, pts in points.items():
        cells = replicate_cells(pts)
        cells = cells[cells["runs"] > 1]
        rows[p] = cells.groupby("side")["sd"].median().reindex(["smaller", "best", "larger"])
    return pd.DataFrame(rows).T.rename_axis("preset").round(4)


def grid_table(points: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Per preset: the sizes of the grid, the smallest and largest N (the preset's count), every parameter
    of the largest, and the largest ratio between neighbouring sizes."""
    rows = {}
    for p, pts in points.items():
        sizes = pts.drop_duplicates("n").sort_values("n")
        n = sizes["n"].to_numpy(float)
        rows[p] = {"sizes": len(n), "N min": int(n.min()), "N max": int(n.max()),
                   "all parameters, max": int(sizes["n_total"].max()),
                   "neighbours apart (max)": round(float(np.max(n[1:] / n[:-1])), 1) if len(n) > 1 else np.nan}
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis("preset")
