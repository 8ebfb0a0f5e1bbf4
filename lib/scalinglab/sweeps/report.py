"""A sweep database's report (what `scalinglab sweep-report` prints): planned and finished runs, the
throughput (computed here from the runs' specs), and the compute-optimal exponent by every estimator
(:mod:`scalinglab.sweeps.analysis`), as :class:`SweepReport`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from scalinglab.errors import UserError
from scalinglab.serialization import to_jsonable
from scalinglab.sweeps.analysis import budget_sharing, envelope_exponent, exponent, replicate_noise, seed_bootstrap
from scalinglab.sweeps.store import SweepStore


@dataclass(frozen=True)
class SweepReport:
    """What :func:`report` finds in a sweep database: its runs, the training they took, and the compute-optimal
    exponent by every estimator, each shaped ``{"a": ..., "ci": [lo, hi], ...}`` (or ``{"a": None, "reason"}``).

    ``flops_per_s`` is there when a run finished; ``wall_seconds`` and ``utilisation`` when all ran on one GPU
    of known peak."""

    db: str
    preset: str
    profile: str
    planned: int
    finished: int
    train_seconds: float
    train_flops: float
    budget_sharing: dict
    exponent: dict
    exponent_parabola: dict
    exponent_envelope: dict
    replicates: dict
    exponent_seed_bootstrap: dict
    flops_per_s: float | None = None
    wall_seconds: float | None = None
    utilisation: float | None = None

    def _fields(self) -> dict[str, Any]:
        """The report as `sweep-report --json` orders it, the throughput keys a sweep lacks left out."""
        head = ("db", "preset", "profile", "planned", "finished", "train_seconds", "train_flops")
        optional = ("flops_per_s", "wall_seconds", "utilisation")
        tail = ("budget_sharing", "exponent", "exponent_parabola", "exponent_envelope", "replicates",
                "exponent_seed_bootstrap")
        out = {k: getattr(self, k) for k in head}
        out.update({k: getattr(self, k) for k in optional if getattr(self, k) is not None})
        out.update({k: getattr(self, k) for k in tail})
        return out

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (NaN and inf: None)."""
        return to_jsonable(self._fields())

    def summary(self) -> str:
        """The text `scalinglab sweep-report` prints."""
        rep = self._fields()
        lines: list[str] = []
        lines.append(f"{rep['preset']}/{rep['profile']}: {rep['finished']}/{rep['planned']} runs finished "
              f"({rep['train_seconds']:.0f} s of training, {rep['train_flops']:.3g} FLOPs)")
        if "utilisation" in rep:
            lines.append(f"GPU utilisation over the sweep: {rep['utilisation']:.1%} of dense bf16 peak")
        e = rep["exponent"]
        if e.get("a") is None:
            lines.append(f"exponent: not available ({e.get('reason')})")
        else:
            ci = e["ci"]
            interval = f" [{ci[0]:.3f}, {ci[1]:.3f}]" if ci and None not in ci else ""
            lines.append(f"exponent a (N* ∝ C^a): {e['a']:.3f}{interval} from {e['n_budgets']} budgets (spline optima)")
            p = rep.get("exponent_parabola") or {}
            if p.get("a") is not None and p.get("ci") and None not in p["ci"]:
                lines.append(f"  with parabola optima (5 sizes around each minimum): {p['a']:.3f} "
                      f"[{p['ci'][0]:.3f}, {p['ci'][1]:.3f}]")
        boot = rep.get("exponent_seed_bootstrap") or {}
        if boot.get("a") is not None and boot.get("ci"):
            failed = f"; {boot['n_boot_failed']} left fewer than 2 budgets" if boot.get("n_boot_failed") else ""
            lines.append(f"  spline optima of the seed means, resampling each run's {boot['seeds']} seeds: {boot['a']:.3f} "
                  f"[{boot['ci'][0]:.3f}, {boot['ci'][1]:.3f}] ({boot['n_boot']} resamples{failed}; seed noise only)")
            sc = boot.get("scatter") or {}
            if sc.get("a") is not None:
                lines.append(f"  the same optima, with the budgets' scatter about the line added (GLS, seed covariance + "
                      f"τ = {sc['tau']:.3f}): {sc['a']:.3f} [{sc['ci'][0]:.3f}, {sc['ci'][1]:.3f}] (t, {sc['df']:.0f} df)")
        env = rep.get("exponent_envelope") or {}
        if env.get("a") is not None and env.get("ci") and None not in env["ci"]:
            dropped = (f"; {env['n_boot_failed']} of {env['n_boot']} resamples left fewer than 2 sizes and were dropped"
                       if env.get("n_boot_failed") else "")
            lines.append(f"  Approach 1, the envelope of the runs' curves: {env['a']:.3f} [{env['ci'][0]:.3f}, "
                  f"{env['ci'][1]:.3f}] ({env['n_sizes']} sizes on it{dropped})")
        noise = rep.get("replicates") or {}
        if noise.get("seed_sd") is not None:
            lines.append(f"  seeds: up to {noise['seeds']} per point; seed-to-seed sd of one run's loss {noise['seed_sd']:.4f} "
                  f"pooled over {noise['points_with_replicates']} points from {noise['runs_per_seed']} runs per seed "
                  f"(median point {noise['median_point_sd']:.4f})")
            if noise.get("noise_floor") is not None:
                lines.append(f"  the isoFLOP bootstrap's noise, fitted to them: sd = √({noise['noise_floor']:.4f}² + "
                      f"({noise['noise_slope']:.3f}·Δ)²), Δ the loss above its budget's lowest; /√k for a mean of k seeds")
            each = [e["a"] for e in noise.get("exponent_by_seed", [])]
            if each:
                lines.append("  each seed's runs alone (spline optima): a = "
                      + ", ".join("n/a" if a is None else f"{a:.3f}" for a in each))
        elif noise.get("parabola_sd") is not None:
            lines.append(f"  one seed per point: the isoFLOP bootstrap's noise is the parabola residual sd "
                  f"{noise['parabola_sd']:.4f}, misfit included (--seeds K measures it)")
        shared = rep.get("budget_sharing") or {}
        if shared.get("shared_runs"):
            # The isoFLOP intervals are WLS intervals across budgets; with runs shared between budgets the
            # optima are correlated (positively: one run's luck moves all its points), which such intervals
            # ignore. Approach 1 resamples whole runs, so it carries the sharing.
            lines.append(f"  note: {shared['shared_runs']} of {shared['runs']} runs give a point at more than one budget, so the "
                  "budget optima are correlated: the spline and parabola intervals assume independent budgets and are "
                  "likely too narrow; Approach 1's bootstrap resamples whole runs, and the seed bootstrap (with --seeds) "
                  "a run's seeds at all its budgets")
        return "\n".join(lines)


def _model_spec(spec: str) -> dict:
    """A run's model shape from its stored spec, or a UserError saying the database was edited."""
    try:
        m = json.loads(spec)["model"]
        return {k: m[k] for k in ("width", "depth", "vocab_size", "seq_len")}
    except (ValueError, KeyError, TypeError) as exc:
        raise UserError(f"a run's spec has no usable model shape ({type(exc).__name__}: {exc}); the sweep "
                        "database was edited or damaged") from None


def throughput(runs: list[tuple]) -> dict:
    """Training seconds, FLOPs (with attention) and, on a GPU of known peak, the sweep's overall utilisation
    (FLOPs over the wall-clock span of the runs, however many ran at once)."""
    from scalinglab.accounting.decoder import flops_per_token, gpu_peak

    if not runs:
        return dict(train_seconds=0.0, train_flops=0.0)
    flops = 0.0
    for spec, tokens, _, _, _ in runs:
        m = _model_spec(spec)
        flops += tokens * flops_per_token(m["width"], m["depth"], m["vocab_size"], seq_len=m["seq_len"]).with_attention
    seconds = sum(r[2] for r in runs)
    out = dict(train_seconds=round(seconds, 1), train_flops=flops, flops_per_s=flops / max(seconds, 1e-9))
    devices = {r[3] for r in runs}
    peak = gpu_peak(next(iter(devices))) if len(devices) == 1 and next(iter(devices)).startswith("cuda") else None
    if peak:
        first, last = (datetime.fromisoformat(runs[i][4]) for i in (0, -1))
        wall = (last - first).total_seconds() + runs[0][2]
        out.update(wall_seconds=round(wall, 1), utilisation=flops / (wall * peak))
    return out


def report(db_path: Path | str) -> SweepReport:
    """What the sweep at ``db_path`` holds and says."""
    store = SweepStore(db_path)
    meta = store.meta()
    counts = store.counts()
    runs = store.throughput_rows()
    if not meta.get("preset"):   # the tables, but no sweep was ever planned in them: "None/None: 0/0 runs" before
        raise UserError(f"{db_path}: no sweep in this database (its sweep table is empty); "
                        "`scalinglab sweep --db` plans one")
    return SweepReport(db=str(store.path), preset=meta.get("preset"), profile=meta.get("profile"), **counts,
                       **throughput(runs), budget_sharing=budget_sharing(db_path), exponent=exponent(db_path),
                       # the same fit with Hoffmann's parabolas over the 5 sizes nearest each minimum (a parabola
                       # only describes the curve near it): how much the estimator alone moves a
                       exponent_parabola=exponent(db_path, method="parabola", window=5),
                       exponent_envelope=envelope_exponent(db_path), replicates=replicate_noise(db_path),
                       # with several seeds: the spline estimator's intervals from resampling seeds (seed noise
                       # only) and with the budgets' scatter added (GLS)
                       exponent_seed_bootstrap={k: v for k, v in seed_bootstrap(db_path).items() if k != "boot"})
