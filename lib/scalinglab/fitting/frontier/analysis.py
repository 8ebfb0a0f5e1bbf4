"""What `scalinglab isoflop` (Approach 2) and `scalinglab envelope` (Approach 1) report for a table of runs:
one result per group, with the settings behind them; each prints (``summary()``) and saves (``to_dict()``).

An exponent has one JSON shape here and in the sweep report: ``{"a": ..., "ci": [lo, hi], ...}``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from scalinglab.serialization import to_jsonable


def group_text(labels: dict) -> str:
    """A group's labels as ``col=value, col=value``."""
    return ", ".join(f"{k}={v}" for k, v in labels.items())


# --- Approach 2 -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class IsoflopGroup:
    """One group's budgets (each budget's optimum, or why it was dropped) and its exponent fit."""

    group: dict
    n_runs: int
    n_flagged: int
    budgets: list = field(default_factory=list)   # dicts: flops, n_points, n_opt, n_opt_lo/hi, loss_opt, edge, used, note
    dropped: list = field(default_factory=list)   # dicts: flops, reason
    exponent: dict = field(default_factory=dict)  # IsoflopFit.to_dict()

    @classmethod
    def from_fit(cls, labels: dict, n_runs: int, n_flagged: int, optima, fit) -> IsoflopGroup:
        """From ``isoflop.budget_optima``'s table and ``isoflop.fit_exponent``'s fit."""
        used = set(fit.flops)
        budgets = []
        for r in optima.to_dict("records"):
            budgets.append(dict(flops=r["flops"], n_points=int(r["n_points"]), n_opt=r["n_opt"],
                                n_opt_lo=r.get("n_opt_lo", float("nan")), n_opt_hi=r.get("n_opt_hi", float("nan")),
                                loss_opt=r["loss_opt"], edge=bool(r["edge"]), used=r["flops"] in used,
                                note=r["note"]))
        return cls(group=labels, n_runs=n_runs, n_flagged=n_flagged, budgets=budgets,
                   dropped=[dict(flops=c, reason=why) for c, why in fit.dropped], exponent=fit.to_dict())

    @classmethod
    def all_flagged(cls, labels: dict, n_flagged: int) -> IsoflopGroup:
        """A group every row of which was flagged: listed, with nothing fitted."""
        nan = float("nan")
        return cls(group=labels, n_runs=0, n_flagged=n_flagged,
                   exponent=dict(a=nan, ci=[nan, nan], coef=nan, n_budgets=0, status="all_rows_flagged",
                                 weighted=False, r2=nan))

    def to_dict(self) -> dict[str, Any]:
        return to_jsonable(dict(group=self.group, n_runs=self.n_runs, n_flagged=self.n_flagged,
                                n_budgets=len(self.budgets), budgets=self.budgets, dropped=self.dropped,
                                exponent=self.exponent))

    def summary(self, level: float = 0.95) -> str:
        res, lines = self.to_dict(), []
        head = f"[{group_text(res['group'])}] " if res["group"] else ""
        flagged = f" ({res['n_flagged']} flagged runs left out)" if res["n_flagged"] else ""
        lines.append(f"{head}{res['n_runs']} runs{flagged}, {res['n_budgets']} budgets")
        if not res["n_runs"]:
            lines.append("  nothing to fit: every run is flagged")
            return "\n".join(lines)
        lines.append(f"  {'budget C':>10} {'sizes':>6} {'N_opt':>11}   {level:.0%} interval")
        for b in res["budgets"]:
            if b["used"]:
                iv = f"[{b['n_opt_lo']:.3g}, {b['n_opt_hi']:.3g}]" if b["n_opt_lo"] is not None else ""
                lines.append(f"  {b['flops']:>10.3g} {b['n_points']:>6} {b['n_opt']:>11.3g}   {iv}")
            else:
                lines.append(f"  {b['flops']:>10.3g} {b['n_points']:>6} {'-':>11}   dropped: {b['note']}")
        e = res["exponent"]
        if e["status"] != "converged":
            lines.append(f"  a: not fitted ({e['n_budgets']} usable budgets, needs 2); status {e['status']}")
            return "\n".join(lines)
        ci = (f"{level:.0%} interval [{e['ci'][0]:.3f}, {e['ci'][1]:.3f}]" if e["ci"][0] is not None
              else "no interval from 2 budgets")
        fit_kind = "WLS, weights 1/var(log N_opt)" if e["weighted"] else "unweighted least squares"
        lines.append(f"  a = {e['a']:.3f}, {ci}; N_opt = {e['coef']:.3g}·C^a; "
                     f"{e['n_budgets']} of {res['n_budgets']} budgets, {fit_kind}; status {e['status']}")
        return "\n".join(lines)


@dataclass(frozen=True)
class IsoflopAnalysis:
    """Approach 2 on a table: the settings (source, columns, method, bootstrap, row selection) and one
    ``IsoflopGroup`` per group."""

    source: str
    columns: dict                   # role (n, c, loss) -> column
    method: str
    bootstrap: int
    seed: int
    noise: Any                      # the bootstrap's loss sd: a number, a description, or None
    level: float = 0.95
    where: list = field(default_factory=list)
    drop_flagged: list = field(default_factory=list)
    group_by: list = field(default_factory=list)
    groups: list = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return to_jsonable(dict(source=self.source, columns=self.columns, method=self.method,
                                bootstrap=self.bootstrap, seed=self.seed, noise=self.noise, level=self.level,
                                where=self.where, drop_flagged=self.drop_flagged, group_by=self.group_by,
                                groups=[g.to_dict() for g in self.groups]))

    def summary(self) -> str:
        boot = (f"{self.bootstrap}-draw noise bootstrap (seed {self.seed}, loss sd: "
                f"{self.noise if isinstance(self.noise, str) else format(self.noise, 'g')})"
                if self.bootstrap else "no bootstrap")
        lines = [f"{self.source}: {self.method} optima, {boot}; N = {self.columns['n']}, "
                 f"C = {self.columns['c']}, loss = {self.columns['loss']}"]
        if self.where or self.drop_flagged:
            lines.append("rows: " + "; ".join([f"where {s}" for s in self.where]
                                              + [f"without rows flagged in {c}" for c in self.drop_flagged]))
        for g in self.groups:
            lines += ["", g.summary(self.level)]
        return "\n".join(lines)


# --- Approach 1 -------------------------------------------------------------------------------------


def isoflop_analysis(groups, label: str, cols: dict[str, str], *, method: str, n_boot: int, seed: int,
                     noise: float | None, level: float, min_points: int = 3,
                     progress: bool = False) -> tuple[IsoflopAnalysis, list[str]]:
    """Approach 2 on each group of runs (``groups``: (labels, rows, rows flagged and dropped)), as
    `scalinglab isoflop` reports it, and the warnings it has for stderr (a default noise that is mostly the
    parabola's misfit)."""
    from scalinglab.errors import OptionError, UserError
    from scalinglab.fitting.frontier import isoflop

    def named(exc: UserError, labels: dict) -> UserError:
        where = label + (f" [{group_text(labels)}]" if labels else "")
        return exc.prefixed(f"{where}: ") if isinstance(exc, OptionError) else UserError(f"{where}: {exc}")

    # A first pass without the bootstrap is cheap and checks every value; a table in which no budget has
    # ``min_points`` sizes almost always means the budget column is a per-run compute (e.g. 6ND) rather than the
    # nominal budget, so say that instead of letting the bootstrap complain about its noise.
    opt_kw = dict(n_col=cols["n"], c_col=cols["c"], loss_col=cols["loss"], method=method, min_points=min_points)
    most = {}  # group number -> the most sizes any of its budgets has
    for i, (labels, g, _) in enumerate(groups):
        if g.empty:
            continue
        try:
            most[i] = int(isoflop.budget_optima(g, **opt_kw)["n_points"].max())
        except UserError as exc:
            raise named(exc, labels) from None
    if max(most.values()) < min_points:
        raise OptionError(f"{label}: no budget in column {cols['c']!r} has {min_points} or more sizes "
                          f"(at most {max(most.values())}); {{budget_col}} must be the nominal budget that the runs "
                          "of one isoFLOP curve share", "budget_col")
    results, warnings = [], []
    for i, (labels, g, n_flagged) in enumerate(groups):
        if g.empty:
            results.append(IsoflopGroup.all_flagged(labels, n_flagged))
            continue
        if n_boot and noise is None and most[i] <= min_points:
            # budget_optima's default noise is the residual sd of per-budget parabolas,
            # which a budget of 3 sizes (a parabola's 3 coefficients) cannot give.
            raise named(OptionError(f"no budget has more than {min_points} sizes to estimate the bootstrap's noise "
                                    "from; give {noise} SD (the sd of the loss between seeds) or {n_boot} 0",
                                    "noise", "n_boot"), labels)
        optima = isoflop.budget_optima(g, **opt_kw, n_boot=n_boot, seed=seed, noise=noise, level=level,
                                       progress=progress)
        if n_boot and noise is None:
            warnings += _misfit_warning(g, cols, labels)
        fit = isoflop.fit_exponent(optima, weighted=True, level=level)
        results.append(IsoflopGroup.from_fit(labels, len(g), n_flagged, optima, fit))
    analysis = IsoflopAnalysis(source=label, columns=cols, method=method, bootstrap=n_boot, seed=seed, level=level,
                               noise=noise, where=[], drop_flagged=[], group_by=[], groups=results)
    return analysis, warnings


def _misfit_warning(g, cols, labels) -> list[str]:
    """A warning when the bootstrap's default noise (one parabola's residual per budget) is mostly the
    parabola's misfit, not noise: then the parabola's vertex is biased by the curve's asymmetry, the interval
    does not include that bias, and the bootstrap medians move by noise the data do not have."""
    from scalinglab.errors import UserError
    from scalinglab.fitting.frontier import isoflop

    try:
        whole = isoflop.pooled_parabola_sd(isoflop.budget_groups(g, cols["n"], cols["c"], cols["loss"]), cols["loss"],
                                            cols["n"])
    except UserError:  # no budget with more than 3 sizes: the bootstrap already refused
        return []
    local = isoflop.local_parabola_sd(g, cols["n"], cols["c"], cols["loss"])
    if local >= isoflop.MISFIT_RATIO * whole:
        return []
    where = f" [{group_text(labels)}]" if labels else ""
    return [f"warning{where}: the bootstrap's default noise ({whole:.3g}, the per-budget parabola residual) is "
            f"mostly the parabola's misfit (residual of 5-size quadratics: {local:.3g}); the parabola's optima are "
            "then biased by the curve's asymmetry, which the intervals do not include. Give --noise SD (the "
            "seed-to-seed sd), narrow the sizes, or fit the law (scalinglab fit)"]


def _segments(points) -> list[dict]:
    """Stretches of C over which one run holds the envelope, from low C to high."""
    import numpy as np

    run = points["run"].to_numpy()
    starts = np.flatnonzero(np.r_[True, run[1:] != run[:-1]])
    ends = np.r_[starts[1:], len(run)]
    out = []
    for i, j in zip(starts, ends, strict=True):
        seg = points.iloc[i:j]
        out.append(dict(run=str(run[i]), n=float(seg["n"].iloc[0]), c_from=float(seg["flops"].iloc[0]),
                        c_to=float(seg["flops"].iloc[-1]), n_points=int(j - i), n_used=int(seg["used"].sum()),
                        n_edge=int(seg["edge"].sum())))
    return out


def _interval(ci: list, level: float) -> str:
    if ci[0] is None:
        return "no interval"
    return f"{level:.0%} interval [{ci[0]:.3f}, {ci[1]:.3f}]"


@dataclass(frozen=True)
class EnvelopeGroup:
    """One group's training curves: what the envelope held, its fit (``EnvelopeFit.to_dict()``) and which
    run holds the envelope over which range of C."""

    group: dict
    n_sizes_trained: int
    n_checkpoints: int
    n_envelope_points: int
    fit: dict
    segments: list = field(default_factory=list)

    @classmethod
    def from_fit(cls, labels: dict, curves, fit) -> EnvelopeGroup:
        """From ``envelope.curves_table``'s table and ``envelope.fit_envelope``'s fit on it."""
        return cls(group=labels, n_sizes_trained=int(curves["n"].nunique()), n_checkpoints=len(curves),
                   n_envelope_points=len(fit.points), fit=fit.to_dict(), segments=_segments(fit.points))

    def to_dict(self) -> dict[str, Any]:
        f = self.fit
        return to_jsonable(dict(group=self.group, n_runs=f["n_runs"], n_sizes_trained=self.n_sizes_trained,
                                n_checkpoints=self.n_checkpoints, n_envelope_points=self.n_envelope_points,
                                n_points=f["n_points"], n_edge=f["n_edge"], n_sizes=f["n_sizes"],
                                n_boot_failed=f["n_boot_failed"], status=f["status"], exponent=f["exponent"],
                                d_exponent=f["d_exponent"], segments=self.segments))

    def summary(self, keep_edges: bool, bootstrap: int, level: float, derived: bool) -> str:
        """``derived``: D = C/(6N) on every curve (no compute or no tokens column), so b = 1 - a."""
        res, lines = self.to_dict(), []
        head = f"[{group_text(res['group'])}] " if res["group"] else ""
        dropped = "" if keep_edges else f", {res['n_edge']} at an edge dropped"
        failed = f", {res['n_boot_failed']} of {bootstrap} resamples failed" if bootstrap else ""
        lines.append(f"{head}{res['n_runs']} runs of {res['n_sizes_trained']} sizes, {res['n_checkpoints']} "
                     f"checkpoints; {res['n_points']} of {res['n_envelope_points']} envelope points fitted"
                     f"{dropped}, {res['n_sizes']} sizes among them{failed}")
        a, b = res["exponent"], res["d_exponent"]
        if res["status"] != "converged":
            lines.append(f"  a, b: not fitted; status {res['status']}")
        else:
            lines.append(f"  a = {a['a']:.3f}, {_interval(a['ci'], level)}; "
                         f"N_opt = {a['coef']:.3g}·C^a; status {res['status']}")
            # With D = C/(6N) along every curve, log D_opt = log C - log 6 - log N_opt.
            why = " (= 1 - a: D = C/(6N) on every curve)" if derived else ""
            lines.append(f"  b = {b['b']:.3f}, {_interval(b['ci'], level)}; "
                         f"D_opt = {b['coef']:.3g}·C^b{why}")
        w = max([3] + [len(s["run"]) for s in res["segments"]])
        lines.append(f"  {'N_opt':>9}  {'run':<{w}} {'C from':>9} {'C to':>9} {'points':>7} {'edge':>5} {'fitted':>7}")
        for s in res["segments"]:
            lines.append(f"  {s['n']:>9.3g}  {s['run']:<{w}} {s['c_from']:>9.3g} {s['c_to']:>9.3g} "
                         f"{s['n_points']:>7} {s['n_edge']:>5} {s['n_used']:>7}")
        return "\n".join(lines)


@dataclass(frozen=True)
class EnvelopeAnalysis:
    """Approach 1 on a table of training curves: the settings and one ``EnvelopeGroup`` per group."""

    source: str
    columns: dict                   # role (run, n, tokens, flops, loss) -> column, or None when derived
    method: str
    keep_edges: bool
    bootstrap: int
    seed: int
    level: float
    where: list = field(default_factory=list)
    group_by: list = field(default_factory=list)
    groups: list = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        c = self.columns
        return to_jsonable(dict(source=self.source, columns=c,
                                compute_from=f"column {c['flops']}" if c["flops"] else "6·N·tokens",
                                tokens_from=f"column {c['tokens']}" if c["tokens"] else "C/(6N)",
                                method=self.method, keep_edges=self.keep_edges, bootstrap=self.bootstrap,
                                seed=self.seed, level=self.level, where=self.where, group_by=self.group_by,
                                groups=[g.to_dict() for g in self.groups]))

    def summary(self) -> str:
        c = self.columns
        boot = (f"{self.bootstrap}-resample bootstrap over runs (seed {self.seed})" if self.bootstrap
                else "no bootstrap")
        edges = "edges kept" if self.keep_edges else "edges dropped"
        lines = [f"{self.source}: {self.method} envelope, {edges}, {boot}",
                 f"columns: run = {c['run']}, N = {c['n']}, loss = {c['loss']}, "
                 + (f"C = {c['flops']}, " if c["flops"] else "C = 6·N·tokens (no compute column), ")
                 + (f"tokens = {c['tokens']}" if c["tokens"] else "tokens = C/(6N) (no tokens column)")]
        if self.where:
            lines.append("rows: " + "; ".join(f"where {s}" for s in self.where))
        derived = not (c["flops"] and c["tokens"])
        for g in self.groups:
            lines += ["", g.summary(self.keep_edges, self.bootstrap, self.level, derived)]
        return "\n".join(lines)


def envelope_analysis(groups, label: str, cols: dict[str, str], options) -> EnvelopeAnalysis:
    """Approach 1 on each group of training curves (``groups``: (labels, rows)), as `scalinglab envelope`
    reports it. Every group's table is checked before any bootstrap runs, so that a bad value in the last group
    does not cost the time of the first groups' fits."""
    from scalinglab.errors import UserError
    from scalinglab.fitting.frontier import envelope

    tables = []
    for labels, g in groups:
        try:
            curves = envelope.curves_table(g, cols["run"], cols["n"], cols["loss"], flops_col=cols["flops"],
                                           tokens_col=cols["tokens"])
        except UserError as exc:
            where = label + (f" [{group_text(labels)}]" if labels else "")
            raise UserError(f"{where}: {exc}") from None
        tables.append((labels, curves))
    # curves_table's output has fit_envelope's default column names, and taking it again is the identity, so
    # this is fit_envelope on the table as read.
    results = [EnvelopeGroup.from_fit(labels, curves, envelope.fit_envelope(curves, options))
               for labels, curves in tables]
    return EnvelopeAnalysis(source=label, columns=cols, method=options.method, keep_edges=not options.drop_edges,
                            bootstrap=options.n_boot, seed=options.seed, level=options.level, where=[], group_by=[],
                            groups=results)
