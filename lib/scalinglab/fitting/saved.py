"""Saved fits (``.slfit``): an Approach-3 fit written once and reloaded bit for bit, never refitted.

The format (version 2) is a zip archive holding one member, ``fit.json``, a JSON object:

- ``format``: ``"scalinglab-fit"``; ``version``: 2 (1 without ``content_sha256``); ``written_by``: the scalinglab
  version;
- ``law``: E, A, B, alpha, beta; ``fit``: objective, status, at_bound, unidentified, n_rows, n_starts, grad_norm;
- ``options``: one flat record, ``FitOptions``' own fields (Huber δ, fixed parameters, tied exponents, start, and
  objective and solver where set) with the Newton solver's ``NewtonSettings`` (box, grid sizes, tolerances);
- ``bootstrap``: null, or samples (converged replicates × E, A, B, alpha, beta), converged (one bool per
  resample), n_boot, n_failed, level, seed, free, constant, unit, n_units;
- ``data``: the fitted runs (N, D, loss), the column names they came from (``columns``), the source, the
  highest losses dropped, and ``sha256``, the hash of the runs (``data_hash``), checked on loading;
- ``content_sha256`` (version 2): the hash of everything else in the object (canonical JSON), so an edit to the law,
  the options or the bootstrap is refused like an edit to the runs.

A file is trusted only as far as it agrees with itself. On loading, the objective is recomputed from the stored
runs and law and must match the stored one; the law and every bootstrap replicate must lie inside the fit's box;
the options must lie in their ranges; and the status must be the one the parameters imply (a law on its bound is
not "converged"). Version 1 files (no content hash) get every check but the hash.

Floats are written with Python's shortest round-tripping repr, so they read back to the same bits.
Loading is JSON parsing and checks only: nothing in the file is executed (no pickle), the archive's
size is bounded, and anything malformed, corrupt or from a newer format is a one-line ``UserError``.
"""

from __future__ import annotations

import hashlib
import json
import math
import zipfile
import zlib
from dataclasses import dataclass, fields
from functools import cached_property
from typing import Any

import numpy as np

from scalinglab.errors import OptionError, UserError, printable
from scalinglab.fitting.chinchilla.approach3 import CHINCHILLA, chinchilla_fit
from scalinglab.fitting.chinchilla.law import PARAMS
from scalinglab.fitting.chinchilla.settings import NewtonSettings, chinchilla_options
from scalinglab.fitting.options import FitOptions
from scalinglab.fitting.prediction.domain import Domain
from scalinglab.fitting.results import STATUSES, Bootstrap, LawFit

FORMAT = "scalinglab-fit"
VERSION = 2
MEMBER = "fit.json"
MAX_BYTES = 256 * 2**20  # fit.json uncompressed: 4,000 replicates and 10,000 runs need under 2 MB
SUFFIX = ".slfit"


@dataclass(frozen=True)
class SavedFit:
    """A fit with the runs it was fitted on: enough to predict, allocate and measure extrapolation."""

    result: LawFit
    N: np.ndarray
    D: np.ndarray
    L: np.ndarray
    columns: dict[str, str | None]  # n_col, d_col, c_col, loss_col as given to the fit
    source: str = ""
    n_dropped: int = 0
    calibration: dict[str, Any] | None = None   # prediction.run_calibration.calibration_note of the fit, if made

    @cached_property
    def domain(self) -> Domain:
        return Domain.from_runs(self.N, self.D)

    @cached_property
    def residual_sd(self) -> float:
        from scalinglab.fitting.prediction.forecast import residual_sd

        return residual_sd(self.result, self.N, self.D, self.L)

    @property
    def data_hash(self) -> str:
        return data_hash(self.N, self.D, self.L)


def data_hash(N, D, L) -> str:
    """sha256 of the runs as float64 little-endian bytes, N then D then loss."""
    h = hashlib.sha256()
    for x in (N, D, L):
        h.update(np.ascontiguousarray(np.asarray(x, dtype="<f8")).tobytes())
    return h.hexdigest()


def to_json(saved: SavedFit) -> dict[str, Any]:
    res, bs = saved.result, saved.result.bootstrap
    # The bootstrap's own record (below) says how it resampled; the options keep the solver's settings.
    # Chinchilla's solver takes one tie, beta = alpha: saved as tie_exponents, the key older files hold.
    # The file keeps one flat "options" record: FitOptions' own fields, then the Newton solver's settings, in the
    # order files have always had (delta, the settings bar start, fixed, tie_exponents, start, objective, solver).
    s = res.options.settings_for(NewtonSettings)
    own = {f.name: getattr(res.options, f.name) for f in fields(FitOptions)
           if f.name not in ("resampling", "tied", "settings")}
    newton = {f.name: getattr(s, f.name) for f in fields(NewtonSettings)}
    opts = {"delta": own.pop("delta"), **{k: v for k, v in newton.items() if k != "start"},
            "fixed": own.pop("fixed"), "tie_exponents": bool(res.options.tied), "start": newton["start"], **own}
    for name in ("objective", "solver"):   # the law's own unless set; a file names them only when they are not
        if opts[name] is None:
            del opts[name]
    opts["fixed"] = [list(p) for p in opts["fixed"]]
    opts["lower"], opts["upper"] = list(opts["lower"]), list(opts["upper"])
    boot = None
    if bs is not None:
        boot = {"samples": bs.samples.tolist(), "converged": bs.converged.astype(bool).tolist(), "n_boot": bs.n_boot,
                "n_failed": bs.n_failed, "level": bs.level, "seed": bs.seed, "free": list(bs.free),
                "constant": list(bs.constant), "unit": bs.unit, "n_units": bs.n_units}
    from scalinglab.version import __version__

    cal = {} if saved.calibration is None else {"calibration": saved.calibration}
    return {"format": FORMAT, "version": VERSION, "written_by": f"scalinglab {__version__}", **cal,
            "law": res.params,
            "fit": {"objective": res.objective, "status": res.status, "at_bound": list(res.at_bound),
                    "unidentified": list(res.unidentified), "n_rows": res.n_rows, "n_starts": res.n_starts,
                    "grad_norm": res.grad_norm},
            "options": opts, "bootstrap": boot,
            "data": {"source": saved.source, "n_dropped": saved.n_dropped, "columns": saved.columns,
                     "N": np.asarray(saved.N, float).tolist(), "D": np.asarray(saved.D, float).tolist(),
                     "loss": np.asarray(saved.L, float).tolist(), "sha256": saved.data_hash}}


def content_hash(obj: dict[str, Any]) -> str:
    """sha256 of ``obj`` without its ``content_sha256`` key, as canonical JSON (sorted keys, no spaces; floats by
    their shortest repr, which JSON parsing reads back to the same bits, so a loaded object hashes the same)."""
    body = {k: v for k, v in obj.items() if k != "content_sha256"}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), allow_nan=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def check_save_path(path) -> None:
    """A UserError now, before a long fit, when ``path`` cannot be written: no such folder, or a folder."""
    from pathlib import Path

    p = Path(path)
    if p.is_dir():
        raise OptionError(f"{{save}} {path}: is a folder; give a file name, e.g. {p / 'fit.slfit'}", "save")
    if not p.parent.is_dir():
        raise OptionError(f"{{save}} {path}: no folder {str(p.parent)!r} to write it in", "save")


def save(path, saved: SavedFit) -> None:
    """Write ``saved`` to ``path`` (a zip holding fit.json), or a UserError naming the path. The file is written
    beside ``path``, loaded back with every check ``load`` makes, and only then renamed into place: a fit that
    would not load is never written, and an interrupted write leaves the old file whole."""
    from scalinglab.files import atomic_write

    obj = to_json(saved)
    obj["content_sha256"] = content_hash(json.loads(json.dumps(obj, allow_nan=True)))
    text = json.dumps(obj, allow_nan=True)  # grad_norm/objective may be NaN: JSON's NaN extension
    with atomic_write(path, f"--save {path}") as tmp:
        with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as zf:
            zf.writestr(MEMBER, text)
        try:
            load(tmp)
        except UserError as exc:
            reason = str(exc).split(": ", 1)[-1]
            raise OptionError(f"{{save}} {path}: not written, as the fit would not load back ({reason})",
                              "save") from None


def load(path) -> SavedFit:
    """Read a saved fit, or a one-line UserError: not a zip, no fit.json, too large, not JSON, another
    format, a newer version, a missing or mistyped field, or runs that do not match their hash."""
    from scalinglab.files import regular_file

    where = str(path)
    regular_file(path)
    try:
        with zipfile.ZipFile(path) as zf:
            names = zf.namelist()
            if MEMBER not in names:
                raise UserError(f"{where}: not a scalinglab fit file (no {MEMBER} in the archive)")
            # One member, once: a second fit.json (zipfile reads the last) or any other member is an edit.
            if names != [MEMBER]:
                extra = sorted(set(names) - {MEMBER})
                what = f"{MEMBER} {names.count(MEMBER)} times" if not extra else f"an unexpected member {extra[0]!r}"
                raise UserError(f"{where}: a corrupt scalinglab fit file (the archive holds {what}; it holds "
                                f"{MEMBER} alone)")
            info = zf.getinfo(MEMBER)
            if info.file_size > MAX_BYTES:
                raise UserError(f"{where}: {MEMBER} would unpack to {info.file_size} bytes, over the "
                                f"{MAX_BYTES} allowed")
            with zf.open(info) as fh:
                raw = fh.read(MAX_BYTES + 1)
    except UserError:
        raise
    except FileNotFoundError:
        raise UserError(f"{where}: no such file") from None
    except (zipfile.BadZipFile, zipfile.LargeZipFile, zlib.error, OSError, EOFError, NotImplementedError,
            RuntimeError, ValueError) as exc:   # zlib.error: a flipped byte in the compressed member
        raise UserError(f"{where}: not a scalinglab fit file (not a readable zip archive: {exc})") from None
    if len(raw) > MAX_BYTES:
        raise UserError(f"{where}: {MEMBER} unpacks to more than {MAX_BYTES} bytes")
    try:
        obj = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise UserError(f"{where}: {MEMBER} is not valid JSON ({str(exc).splitlines()[0][:80]})") from None
    try:
        return from_json(obj)
    except UserError as exc:
        raise UserError(f"{where}: {exc}") from None
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
        what = f"missing field {exc}" if isinstance(exc, KeyError) else str(exc).splitlines()[0][:120]
        raise UserError(f"{where}: a corrupt scalinglab fit file ({what})") from None


def _float(x, name: str, finite: bool = True) -> float:
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        raise ValueError(f"{name} must be a number, not {type(x).__name__}")
    x = float(x)
    if finite and not math.isfinite(x):
        raise ValueError(f"{name} must be finite")
    return x


def _int(x, name: str, lo: int = 0) -> int:
    if isinstance(x, bool) or not isinstance(x, int) or x < lo:
        raise ValueError(f"{name} must be an integer >= {lo}")
    return x


def _strs(x, name: str) -> tuple[str, ...]:
    if not isinstance(x, list) or not all(isinstance(s, str) for s in x):
        raise ValueError(f"{name} must be a list of strings")
    return tuple(x)


def _array(x, name: str, shape_tail: tuple[int, ...] = (), positive: bool = False) -> np.ndarray:
    if not isinstance(x, list):
        raise ValueError(f"{name} must be a list")
    a = np.array(x, dtype=object)
    if a.shape[1:] != shape_tail or a.ndim != 1 + len(shape_tail):
        raise ValueError(f"{name} has shape {a.shape}, expected (n, {', '.join(map(str, shape_tail))})"
                         if shape_tail else f"{name} must be a flat list of numbers")
    flat = [_float(v, name) for v in a.ravel()]
    out = np.array(flat, dtype=float).reshape(a.shape)
    if positive and (out <= 0).any():
        raise ValueError(f"{name} must be positive")
    return out


def _check_law(law: dict[str, float], what: str) -> None:
    """A fitted law has E, A, B, alpha, beta >= 0 (the fit's bounds keep it there; exponents of 0 are a fit at
    its bound, which `allocate` declines); a file that says otherwise was edited, and would answer with a
    negative loss or a complex number."""
    for k, v in law.items():
        if v < 0:
            raise ValueError(f"{what} {k} = {v:g} is negative; a fitted law has E, A, B, alpha, beta >= 0")


# The stored objective is the solver's sum; a fresh evaluation adds the same terms in another order, so the two
# agree to rounding (1e-12 relative on Epoch's 240 runs). 1e-8 leaves room for any BLAS, and an edit to a
# parameter moves the objective far more: a change of 1e-6 in alpha moves it by ~1e-5 relative.
OBJECTIVE_RTOL = 1e-8
# A relative tolerance alone fails an exact fit: there the objective is a sum of squared rounding errors
# (1e-30), and another BLAS kernel's exp/log rounds each residual differently, changing it by 20%. Each residual
# (a log of order 10) is good to OBJECTIVE_RESIDUAL_ULP; a change dr in every residual moves the Huber sum by at
# most sum|psi(r)| dr + n dr^2 <= sqrt(2 n f) dr + n dr^2 (psi^2/2 <= huber). An edit of 1e-9 to any parameter
# still moves every residual a thousand times more than that.
OBJECTIVE_RESIDUAL_ULP = 1e-12


def objective_tolerance(stored: float, n_rows: int) -> float:
    """How far a fresh evaluation of the objective may lie from the stored one on any BLAS kernel."""
    dr = OBJECTIVE_RESIDUAL_ULP
    return OBJECTIVE_RTOL * abs(stored) + math.sqrt(2 * n_rows * abs(stored)) * dr + n_rows * dr * dr


def _check_options(o: FitOptions) -> None:
    """Each option in the range a fit can have been made with; an edited file can say anything."""
    _check_settings(o.settings_for(NewtonSettings), o.delta)


def _check_settings(s: NewtonSettings, delta: float) -> None:
    for name in ("delta", "gtol", "status_gtol", "batch_tol"):
        v = getattr(s, name) if name != "delta" else delta
        if not (math.isfinite(v) and v > 0):
            raise ValueError(f"option {name} = {v:g}; it must be a positive number")
    for name in ("n_refine", "grid_iters", "n_polish", "screen_rows", "block", "batch_iters"):
        v = getattr(s, name)
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"option {name} = {v!r}; it must be a whole number >= 1")
    lo, hi = np.asarray(s.lower, float), np.asarray(s.upper, float)
    if not (np.all(np.isfinite(lo)) and np.all(np.isfinite(hi)) and np.all(lo < hi)):
        raise ValueError("options lower and upper must be finite with lower < upper")


def _outside_box(params: np.ndarray, o: FitOptions) -> list[str]:
    """The free parameters of ``params`` (E, A, B, alpha, beta) outside the fit's box (in log E, A, B)."""
    from scalinglab.fitting.chinchilla.law import to_theta

    with np.errstate(divide="ignore", invalid="ignore"):
        theta = to_theta(np.asarray(params, float))
    fixed = dict(o.fixed)
    s = o.settings_for(NewtonSettings)
    lo, hi = np.asarray(s.lower), np.asarray(s.upper)
    tol = 1e-9 * (hi - lo)
    return [k for i, k in enumerate(PARAMS) if k not in fixed
            and not (lo[i] - tol[i] <= theta[i] <= hi[i] + tol[i])]


def _check_consistent(result: LawFit, N, D, L) -> None:
    """The file agrees with itself: parameters inside the box, the objective the runs and law give, the status
    the parameters imply. ValueError (worded as a corrupt file by ``load``) otherwise."""
    from scalinglab.fitting.chinchilla.approach3 import bound_flags
    from scalinglab.fitting.chinchilla.law import to_theta
    from scalinglab.fitting.chinchilla.newton import objective

    o = result.options
    _check_options(o)
    params = np.array([getattr(result, k) for k in PARAMS])
    out = _outside_box(params, o)
    if out:
        raise ValueError(f"law {out[0]} = {getattr(result, out[0]):g} lies outside the fit's bounds")
    bs = result.bootstrap
    if bs is not None:
        for row in bs.samples:
            if _outside_box(row, o):
                raise ValueError("a bootstrap replicate lies outside the fit's bounds")
    theta = to_theta(params)
    f = objective(theta, np.log(N), np.log(D), np.log(L), o.delta, block=o.settings_for(NewtonSettings).block)
    tol = objective_tolerance(result.objective, len(L))
    if not (math.isfinite(result.objective) and abs(f - result.objective) <= tol):
        raise ValueError(f"its objective {result.objective:.6g} is not what its law gives on its runs ({f:.6g}); "
                         "the law or the runs were edited")
    flags = bound_flags(theta, o)
    at_bound = tuple(k for k, b in zip(PARAMS, flags) if b)
    if set(at_bound) != set(result.at_bound):
        raise ValueError(f"its at_bound list {list(result.at_bound)} is not what its law implies {list(at_bound)}")
    for name in result.unidentified:
        if name not in PARAMS:
            raise ValueError(f"unknown parameter {name!r} in unidentified")
    implied = "at_bound" if at_bound else "unidentified" if result.unidentified else None
    if implied and result.status != implied or not implied and result.status not in ("converged", "failed", "max_iter"):
        raise ValueError(f"status {result.status!r} does not match its parameters (expected "
                         f"{implied or 'converged or failed'})")
    if result.status == "converged":
        # A forged file that recomputes the documented hash could call any law converged; the fit called it so
        # only where the projected gradient was below status_gtol. Recomputed from the stored parameters (17
        # digits) it agrees to rounding; 10x leaves room for any BLAS kernel.
        grad = _projected_grad_norm(theta, N, D, L, o)
        gtol = o.settings_for(NewtonSettings).status_gtol
        if not grad <= 10 * gtol:
            raise ValueError(f"status 'converged', but the gradient at its law is {grad:.3g} (a converged fit's "
                             f"is below {gtol:g}); the law was edited")
    if bs is not None and len(bs.samples) >= 2 and np.all(bs.samples == bs.samples[0]) and \
            result.objective > 1e-12:
        # Resampled rows of runs that do not lie exactly on the law move the fit: replicates that all agree give
        # intervals of zero width that no resampling made.
        raise ValueError(f"its {len(bs.samples)} bootstrap replicates are all identical, though its runs do not "
                         "lie on its law; the bootstrap was edited")


def _projected_grad_norm(theta, N, D, L, o: FitOptions) -> float:
    """The fit's convergence measure (as approach3.fit_arrays computes it): the largest projected gradient of
    the Huber objective in the free coordinates."""
    from scalinglab.fitting.chinchilla.newton import projected_grad, value_and_grad
    from scalinglab.fitting.chinchilla.settings import parametrisation

    P = parametrisation(o)
    s = o.settings_for(NewtonSettings)
    lo, hi = np.asarray(s.lower), np.asarray(s.upper)
    g = value_and_grad(theta, np.log(N), np.log(D), np.log(L), o.delta)[1]
    return float(np.max(np.abs(projected_grad(P.phi(theta), P.grad(g), *P.box(lo, hi)))))


def from_json(obj: Any) -> SavedFit:
    """A SavedFit from fit.json's object; ValueError/KeyError/TypeError on a malformed one (``load`` words it)."""
    if not isinstance(obj, dict) or obj.get("format") != FORMAT:
        raise UserError(f"not a scalinglab fit file (format {obj.get('format') if isinstance(obj, dict) else None!r}, "
                        f"expected {FORMAT!r})")
    version = obj.get("version")
    if isinstance(version, bool) or not isinstance(version, int):
        raise UserError(f"a corrupt scalinglab fit file (version {version!r})")
    if version > VERSION:
        by = printable(obj.get("written_by", "a newer scalinglab"), 40)   # ESC sequences escaped
        raise UserError(f"written in fit format version {version} by {by}; "
                        f"this scalinglab reads version {VERSION} and older: upgrade scalinglab")
    if version < 1:
        raise UserError(f"a corrupt scalinglab fit file (version {version})")
    if version >= 2 and obj.get("content_sha256") != content_hash(obj):
        raise UserError("its contents do not match their sha256 (the file was altered or damaged)")
    law = {k: _float(obj["law"][k], k) for k in PARAMS}
    _check_law(law, "law")
    o = dict(obj["options"])
    if "start" not in o and "solver" in o:   # files that name the Newton solver's start "solver"
        old = o.pop("solver")                  # (grid, varpro-start or varpro)
        o["start"] = {"varpro-start": "varpro"}.get(old, old)
    # FitOptions' own fields (bar its ties, written as tie_exponents, and the settings), the Newton settings'.
    known = ({f.name for f in fields(FitOptions) if f.name not in ("settings", "tied")}
             | {f.name for f in fields(NewtonSettings)} | {"tie_exponents"})
    unknown = sorted(set(o) - known)
    if unknown:
        raise ValueError(f"unknown option {unknown[0]!r}")
    o["fixed"] = tuple((str(name), _float(v, f"fixed {name}")) for name, v in o.get("fixed", []))
    for k in ("lower", "upper"):
        o[k] = tuple(float(v) for v in _array(o[k], k))
        if len(o[k]) != 5:
            raise ValueError(f"options {k} must hold 5 numbers")
    d = o.get("delta")
    if isinstance(d, (int, float)) and not isinstance(d, bool) and not (math.isfinite(d) and 0 < d <= 100):
        raise ValueError(f"option delta = {d:g}; it must be a positive number at most 100")
    try:
        newton = NewtonSettings(**{f.name: o.pop(f.name) for f in fields(NewtonSettings) if f.name in o})
        _check_settings(newton, 1.0)   # a whole count written 50.0 equals the default, but no fit wrote it
        tie = o.pop("tie_exponents", False)
        if not isinstance(tie, bool):
            raise UserError(f"tie_exponents {tie!r} is not true or false")
        # Chinchilla's rules on what it holds and ties (``chinchilla_options``), as the fit applied them.
        options = chinchilla_options(FitOptions(**o, tied=(("beta", "alpha"),) if tie else (), settings=newton))
    except UserError as exc:   # FitOptions' own checks: worded by load as a corrupt file
        raise ValueError(f"options: {exc}") from None
    fit = obj["fit"]
    status = fit["status"]
    if status not in (*STATUSES, "max_iter"):   # max_iter: files saved before "failed"
        raise ValueError(f"unknown status {status!r}")
    bs = None
    b = obj["bootstrap"]
    if b is not None:
        samples = (np.empty((0, 5)) if b["samples"] == [] else _array(b["samples"], "bootstrap samples", (5,)))
        for row in samples:
            _check_law(dict(zip(PARAMS, row)), "a bootstrap sample's")
        conv = b["converged"]
        if not isinstance(conv, list) or not all(isinstance(v, bool) for v in conv):
            raise ValueError("bootstrap converged must be a list of booleans")
        if len(conv) != _int(b["n_boot"], "n_boot") or sum(conv) != len(samples):
            raise ValueError("bootstrap sizes disagree (n_boot, converged, samples)")
        level = _float(b["level"], "level")
        if not 0 < level < 1:
            raise ValueError("bootstrap level must lie between 0 and 1")
        n_units = b["n_units"]
        bs = Bootstrap(samples, PARAMS, b["n_boot"], _int(b["n_failed"], "n_failed"), level, _int(b["seed"], "seed"),
                       constant=_strs(b["constant"], "constant"), unit=str(b["unit"]),
                       n_units=None if n_units is None else _int(n_units, "n_units"), converged=np.array(conv, bool),
                       free=_strs(b["free"], "free"), derived=CHINCHILLA.derived, scale=CHINCHILLA.scale_params)
    result = chinchilla_fit([law[k] for k in PARAMS], objective=_float(fit["objective"], "objective", finite=False),
                            status=status, at_bound=_strs(fit["at_bound"], "at_bound"),
                            unidentified=_strs(fit["unidentified"], "unidentified"),
                            n_rows=_int(fit["n_rows"], "n_rows"), n_starts=_int(fit["n_starts"], "n_starts"),
                            grad_norm=_float(fit["grad_norm"], "grad_norm", finite=False), options=options,
                            bootstrap=bs)
    d = obj["data"]
    N, D, L = (_array(d[k], k, positive=True) for k in ("N", "D", "loss"))
    if not len(N) == len(D) == len(L) == result.n_rows or len(N) < 2:
        raise ValueError(f"the runs' columns hold {len(N)}, {len(D)}, {len(L)} values for n_rows {result.n_rows}")
    cols = d["columns"]
    if not isinstance(cols, dict) or not all(isinstance(v, (str, type(None))) for v in cols.values()):
        raise ValueError("data columns must map names to strings")
    if data_hash(N, D, L) != d["sha256"]:
        raise UserError("its runs do not match their sha256 (the file was altered or damaged)")
    _check_consistent(result, N, D, L)
    from scalinglab.fitting.prediction.run_calibration import check_saved

    return SavedFit(result=result, N=N, D=D, L=L, columns=dict(cols), source=str(d["source"]),
                    n_dropped=_int(d["n_dropped"], "n_dropped"), calibration=check_saved(obj.get("calibration")))
