"""Curves to fit: Luo et al.'s released curves, our own schedule sweep, a table of (run, step, lr, loss) rows, and
schedules named with parameters (``wsd:peak=3e-4,cooldown=0.2,steps=24000``, Luo et al.'s names) or given step by
step in a (run, step, lr) table. Every input check is here, each a
one-line :class:`UserError`.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from scalinglab.curves.laws import Curve
from scalinglab.errors import OptionError, UserError
from scalinglab.files import check_size

# Luo et al. 2025's split (their src/config.py, transcribed in the mirror's PROVENANCE.md)
LUO_TRAIN = ("cosine_24000", "constant_24000", "wsdcon_9")
LUO_TEST = ("constant_72000", "cosine_72000", "wsd_20000_24000", "wsdld_20000_24000", "wsdcon_3", "wsdcon_18")
LUO_SIZES = ("25M", "100M", "400M")
LUO_WARMUP, LUO_PEAK, LUO_FLOOR = 2160, 3e-4, 3e-5


def luo_lrs(name: str) -> np.ndarray:
    """Every step's rate of one of Luo et al.'s schedules, as the mirror's PROVENANCE.md defines them: a linear
    warmup ``linspace(0, 3e-4, 2160)``, then the schedule (index = 0-based step)."""
    kind, *rest = name.split("_")
    W, hi, lo = LUO_WARMUP, LUO_PEAK, LUO_FLOOR
    total = 16000 if kind == "wsdcon" else int(rest[-1])
    s = np.arange(total, dtype=float)
    if kind == "constant":
        lr = np.full(total, hi)
    elif kind == "cosine":
        lr = lo + 0.5 * (hi - lo) * (1 + np.cos(np.pi * (s - W) / (total - W)))
    elif kind == "wsdcon":
        lr = np.where(s < 8000, hi, int(rest[0]) * 1e-5)
    elif kind in ("wsd", "wsdld"):
        start = int(rest[0])
        f = np.clip((s - start) / (total - start), 0, 1)
        lr = hi ** (1 - f) * lo ** f if kind == "wsd" else hi * (1 - f) + lo * f
    else:
        raise UserError(f"unknown Luo et al. schedule {name!r}")
    lr[:W] = np.linspace(0, hi, W)
    return lr


def luo_curves(size: str) -> dict[str, Curve]:
    """The nine curves of one model size ('25M', '100M', '400M'), read through the registry. A row at 0-based step
    s is the loss after s+1 steps' rates (the authors' S1 = cumsum(lrs)[s])."""
    from scalinglab import data

    if size not in LUO_SIZES:
        raise UserError(f"size must be one of {', '.join(LUO_SIZES)}, not {size!r}")
    out = {}
    for name in LUO_TRAIN + LUO_TEST:
        df = data.load(f"mpl-{size.lower()}-{name.replace('_', '-')}")
        lrs = luo_lrs(name)
        at = df["step"].to_numpy(int) + 1
        keep = at <= len(lrs)
        out[name] = Curve(name, lrs, at[keep], df["loss"].to_numpy(float)[keep], {"size": size})
    return out


def own_curves(db_path, schedules=None) -> list[Curve]:
    """Our schedule sweep (``data/sweeps/schedules/schedules.db``): each run's rates rebuilt from its spec with
    :mod:`scalinglab.schedules` (the function the training loop applied), its validation losses."""
    from scalinglab.schedules import Schedule
    from scalinglab.sweeps import SweepStore

    store = SweepStore(db_path)
    dense = store.dense_curves()
    out = []
    for run in sorted(store.runs(finished_only=True), key=lambda r: r["run_id"]):
        tr = run["spec"]["train"]
        if schedules and tr["schedule"] not in schedules:
            continue
        tps = tr["batch_size"] * run["spec"]["model"]["seq_len"]
        sch = Schedule(tr["schedule"], peak=tr["lr"], total=tr["total_tokens"], warmup=tr["warmup_tokens"],
                       step_size=tps, min_lr_ratio=tr["min_lr_ratio"], cooldown=tr["cooldown"],
                       drop_at=tr["drop_at"], drop_factor=tr["drop_factor"])
        rows = dense[dense["run_id"] == run["run_id"]].sort_values("step")
        lrs = sch.lrs()
        at = rows["step"].to_numpy(int)
        if not np.allclose(lrs[at - 1], rows["lr"].to_numpy(float), rtol=1e-9, atol=0):
            raise UserError(f"{db_path}: run {run['run_id']}: recorded rates differ from its schedule")
        out.append(Curve(run["run_id"], lrs, at, rows["loss"].to_numpy(float),
                         {"schedule": tr["schedule"], "width": run["width"], "seed": tr["seed"],
                          "tokens_per_step": tps, "n": run["spec"]["n_standard"]}))
    return out


def _row(g, j: int) -> str:
    """Where row j of a run's rows is: its line in the file when the table was read by the CLI."""
    return f"line {g.index[j]}" if g.index.name == "line" else f"row {g.index[j]}"


def _numbers(g, col: str, source: str, run, blank_ok: bool = False) -> np.ndarray:
    """A column of one run's rows as floats; an empty cell is NaN when ``blank_ok``, anything else not a finite
    number is refused."""
    v = pd.to_numeric(g[col], errors="coerce").to_numpy(float)
    bad = ~np.isfinite(v) & ~(g[col].isna().to_numpy() if blank_ok else False)
    if bad.any():
        j = int(np.argmax(bad))
        raise UserError(f"{source}: run {run}: {_row(g, j)}: column {col} is not a finite number: {g[col].iloc[j]!r}")
    return v


def curves_from_table(df: pd.DataFrame, source: str = "table", need_loss: bool = True,
                      schedules: dict | None = None, schedule_source: str = "--schedule") -> list[Curve]:
    """Curves from rows (run, step, lr[, loss]): ``step`` counts steps done (1 = after the first), ``lr`` is that
    step's rate, ``loss`` the loss after it. A row with an empty loss carries only the schedule (a table may give
    every step's rate and losses only where they were logged). Rates between rows are interpolated linearly;
    before the first row they ramp linearly from 0 (a linear warmup), unless the first row is step 1.

    ``schedules`` ({run: every step's rate}, key None for every run) gives a run's exact schedule instead: its
    rows then need no lr, and an lr they carry must be the schedule's rate at that step; a run without one reads
    its lr column."""
    schedules = schedules or {}
    cols = ["run", "step"] + (["loss"] if need_loss else [])
    if not schedules:
        cols.insert(2, "lr")
    missing = [c for c in cols if c not in df.columns]
    if missing:
        raise UserError(f"{source}: lacks column(s) {', '.join(missing)} (needs {', '.join(cols)})")
    out = []
    for run, g in df.groupby("run", sort=False):
        exact = schedules.get(str(run), schedules.get(None))
        if exact is None and "lr" not in g.columns:
            raise UserError(f"{source}: run {run}: no lr column and no schedule in {schedule_source} (it gives "
                            f"run(s) {', '.join(sorted(map(str, schedules)))})")
        step = _numbers(g, "step", source, run)
        has_lr = "lr" in g.columns
        lr = _numbers(g, "lr", source, run, blank_ok=exact is not None) if has_lr else np.full(len(g), np.nan)
        loss = _numbers(g, "loss", source, run, blank_ok=True) if need_loss else None
        if (step < 1).any() or (step != np.round(step)).any():
            j = int(np.argmax((step < 1) | (step != np.round(step))))
            raise UserError(f"{source}: run {run}: {_row(g, j)}: step {step[j]:g} is not a whole number of "
                            "steps >= 1")
        if (np.diff(step) <= 0).any():
            j = int(np.argmax(np.diff(step) <= 0)) + 1
            raise UserError(f"{source}: run {run}: {_row(g, j)}: steps not increasing "
                            f"({step[j - 1]:g} then {step[j]:g})")
        if (lr < 0).any():
            j = int(np.argmax(lr < 0))
            raise UserError(f"{source}: run {run}: {_row(g, j)}: negative lr {lr[j]:g}")
        if lr.max() > MAX_LR:
            j = int(np.argmax(lr))
            raise UserError(f"{source}: run {run}: {_row(g, j)}: lr {lr[j]:g} is not a learning rate (at most "
                            f"{MAX_LR:g})")
        check_size("schedule_steps", step[-1], f"{source}: run {run}: {_row(g, len(step) - 1)}: step")
        at = step.astype(int)
        if exact is not None:
            lrs = np.asarray(exact, float)
            if at[-1] > len(lrs):
                raise UserError(f"{source}: run {run}: {_row(g, len(at) - 1)}: step {at[-1]} is past the end of "
                                f"its schedule in {schedule_source} ({len(lrs)} steps)")
            given = np.isfinite(lr)
            off = given & ~np.isclose(lr, lrs[at - 1], rtol=1e-6, atol=0)
            if off.any():
                j = int(np.argmax(off))
                raise UserError(f"{source}: run {run}: {_row(g, j)}: lr {lr[j]:g} differs from the rate of step "
                                f"{at[j]} in {schedule_source} ({lrs[at[j] - 1]:g})")
        else:
            xs = np.concatenate([[0], at]) if at[0] > 1 else at
            ys = np.concatenate([[0.0], lr]) if at[0] > 1 else lr
            lrs = np.interp(np.arange(1, at[-1] + 1), xs, ys)
        if (lrs <= 0).all():
            raise UserError(f"{source}: run {run}: every lr is 0")
        if need_loss:
            logged = np.isfinite(loss)
            if not logged.any():
                raise UserError(f"{source}: run {run}: no row has a loss")
            if (loss[logged] <= 0).any():
                j = int(np.flatnonzero(logged)[np.argmax(loss[logged] <= 0)])
                raise UserError(f"{source}: run {run}: {_row(g, j)}: loss must be positive")
            out.append(Curve(str(run), lrs, at[logged], loss[logged]))
        else:
            out.append(Curve(str(run), lrs, at))
    if not out:
        raise UserError(f"{source}: no rows")
    return out


def schedule_specs(specs, read=None) -> dict:
    """``fit-curve --schedule`` values as {run: every step's rate} (key None: every run without its own). Each is
    ``[RUN=]NAME:key=value,...`` (:func:`parse_schedule`) or a CSV of (run, step, lr) rows, one run or several,
    read by ``read(path)`` (rates between rows interpolated, as in :func:`curves_from_table`)."""
    out: dict = {}
    for spec in specs:
        run, eq, rest = spec.partition("=")
        if eq and ":" in rest and ":" not in run and "," not in run:
            parts = {run: parse_schedule(rest)}
        elif ":" in spec and "=" in spec.partition(":")[2]:
            parts = {None: parse_schedule(spec)}
        else:
            if read is None:
                raise OptionError(f"{{schedule}} {spec!r}: not NAME:key=value,...", "schedule")
            parts = {c.name: c.lrs for c in curves_from_table(read(spec), spec, need_loss=False)}
        twice = sorted(str(k) for k in parts if k in out)
        if twice:
            raise OptionError(f"{{schedule}} {spec}: gives run(s) {', '.join(twice)} a second schedule", "schedule")
        out.update(parts)
    return out


SCHEDULE_KEYS = {"peak", "steps", "warmup", "cooldown", "floor", "drop_at", "drop_factor"}
# No optimiser here trains at a rate above 10 (AdamW's are below 1e-2): a larger lr is a typo or a unit mistake,
# and the curve laws' sums of it overflow.
MAX_LR = 10.0


def parse_schedule(text: str) -> np.ndarray:
    """Every step's rate of a named schedule: ``NAME:key=value,...`` with NAME one of Luo et al. 2025's names
    (:data:`scalinglab.schedules.NAMED`): constant, cosine, wsd (a geometric cooldown, peak^(1−f)·floor^f),
    wsdld (a linear one), step; keys peak, steps (required), warmup (steps, default 0), cooldown (the WSD's last
    fraction, 0.2), floor (cosine/WSD end as a fraction of peak, 0.1), drop_at, drop_factor (step)."""
    from scalinglab.schedules import NAMED, Schedule

    name, _, args = text.partition(":")
    if name not in NAMED:
        raise UserError(f"schedule {text!r}: name must be one of {', '.join(NAMED)}")
    kv = {}
    for part in filter(None, args.split(",")):
        k, eq, v = part.partition("=")
        if not eq or k not in SCHEDULE_KEYS:
            raise UserError(f"schedule {text!r}: {part!r} is not key=value with key one of "
                            f"{', '.join(sorted(SCHEDULE_KEYS))}")
        if k in kv:
            raise UserError(f"schedule {text!r}: {k}= is given twice")
        try:
            kv[k] = float(v)
        except ValueError:
            raise UserError(f"schedule {text!r}: {k}={v!r} is not a number") from None
        if not math.isfinite(kv[k]):
            raise UserError(f"schedule {text!r}: {k}={v!r} is not a finite number")
    for k in ("peak", "steps"):
        if k not in kv:
            raise UserError(f"schedule {text!r}: needs {k}=")
    if kv["peak"] < 0:
        raise UserError(f"schedule {text!r}: negative lr peak={kv['peak']:g}")
    if not 0 < kv["peak"] <= MAX_LR:   # a peak of 0 trains nothing: every loss was printed as inf
        raise UserError(f"schedule {text!r}: peak={kv['peak']:g} is not a learning rate (above 0, at most "
                        f"{MAX_LR:g})")
    steps = kv["steps"]
    check_size("schedule_steps", steps, f"schedule {text!r}: steps")
    if steps < 2 or steps != round(steps):
        raise UserError(f"schedule {text!r}: steps={steps:g} is not a whole number >= 2")
    if not 0 <= kv.get("floor", 0.1) <= 1:
        raise UserError(f"schedule {text!r}: floor={kv['floor']:g} is a fraction of the peak, between 0 and 1")
    if not 0 <= kv.get("warmup", 0.0) < steps:
        raise UserError(f"schedule {text!r}: warmup={kv['warmup']:g} is not between 0 and the run's {steps:g} "
                        "steps")
    kind, decay = NAMED[name]
    sch = Schedule(kind, peak=kv["peak"], total=steps, warmup=kv.get("warmup", 0.0),
                   min_lr_ratio=kv.get("floor", 0.1), cooldown=kv.get("cooldown", 0.2),
                   drop_at=kv.get("drop_at", 0.5), drop_factor=kv.get("drop_factor", 0.1), decay=decay)
    return sch.lrs()


def luo_dataset_schedule(name: str) -> str | None:
    """The Luo et al. schedule of a registered ``mpl-*`` dataset (``mpl-400m-wsd-20000-24000`` ->
    ``wsd_20000_24000``); None for any other dataset."""
    parts = name.split("-")
    if len(parts) < 3 or parts[0] != "mpl" or parts[1].upper() not in LUO_SIZES:
        return None
    sched = "_".join(parts[2:])
    return sched if sched in LUO_TRAIN + LUO_TEST else None


def registered_table(names) -> tuple[pd.DataFrame, dict]:
    """Registered curves as one (run, step, lr, loss) table, each dataset one run, and the exact schedules known
    for them ({run: every step's rate}): Luo et al.'s ``mpl-*`` curves log the rate every 128 steps only, so their
    schedules are rebuilt step by step (:func:`luo_lrs`), as :func:`luo_curves` does. Their rows count steps
    from 0 (their evaluation reads the area through that step's rate), so their step + 1 is the steps done."""
    from scalinglab import data

    parts, schedules = [], {}
    for name in names:
        df = data.load(name)
        missing = [c for c in ("step", "lr", "loss") if c not in df.columns]
        if missing:
            raise UserError(f"dataset {name}: not a curve (lacks {', '.join(missing)})")
        df = df[["step", "lr", "loss"]].copy()
        sched = luo_dataset_schedule(name)
        if name.startswith("mpl-"):
            df["step"] = df["step"] + 1
        if sched is not None:
            schedules[name] = luo_lrs(sched)
        df.insert(0, "run", name)
        parts.append(df)
    return pd.concat(parts, ignore_index=True), schedules
