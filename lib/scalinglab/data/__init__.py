"""The data registry: every dataset the workbook reads, named and pinned.

Each dataset has a name, the public URL it comes from, its sha256, a licence
note and a column schema (``lib/scalinglab/data/registry/*.toml``, one file per
study). A file is found, in order:

0. for data this project made and commits (``repo = true``), in the checkout's
   ``data/`` folder (laid out like the mirror);
1. under ``$SCALINGLAB_DATA_MIRROR`` (a folder laid out like ``shared/data``),
   which is only ever read;
2. in the cache, ``$SCALINGLAB_CACHE`` or ``~/.cache/scalinglab``;
3. by downloading the public URL into the cache (when online).

Whatever the source, the bytes must match the registered sha256 before they
are parsed (pickles included), and every failure is one line naming the
dataset, the path and the expected hash.
"""

from __future__ import annotations

import hashlib
import importlib
import os
import tempfile
import tomllib
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from difflib import get_close_matches
from functools import cache
from pathlib import Path

from scalinglab.errors import DataError, UserError

REGISTRY_DIR = Path(__file__).with_name("registry")
REPO_DATA = Path(__file__).resolve().parents[3] / "data"  # the checkout's data/ (absent from an installed wheel)
MIRROR_ENV = "SCALINGLAB_DATA_MIRROR"
CACHE_ENV = "SCALINGLAB_CACHE"
FORMATS = ("csv", "jsonl", "json", "file")


@dataclass(frozen=True)
class Dataset:
    """One registered file. ``path`` is relative to the mirror's root."""

    name: str
    path: str
    sha256: str
    licence: str
    description: str
    url: str = ""  # the public source (required, except for repo data: the checkout is its source)
    source: str = ""
    format: str = "csv"
    columns: dict[str, str] = field(default_factory=dict)
    # Which column plays which part in a scaling law (n, d, c, loss, and run for
    # training curves), so that `scalinglab fit/isoflop/envelope --dataset NAME`
    # need no column flags.
    roles: dict[str, str] = field(default_factory=dict)
    # "module:function" taking (path, dataset) and returning a DataFrame, for
    # formats pandas cannot read directly (e.g. Porian et al.'s pickles).
    loader: str = ""
    # False for files the standard offline mirror does not carry (they load
    # when online, or from a mirror that has them); `data verify` then
    # reports them as absent instead of failing.
    mirrored: bool = True
    # True for data this project made and commits under the repository's data/ folder (same relative path).
    repo: bool = False
    group: str = ""


def _parse_entry(name: str, spec: dict, group: str) -> Dataset:
    # Data this project made and commits (repo = true) has no public URL of its own: the checkout is its source.
    required = ("path", "sha256", "licence", "description") if spec.get("repo") else (
        "path", "url", "sha256", "licence", "description")
    missing = [k for k in required if k not in spec]
    if missing:
        raise ValueError(f"registry/{group}.toml: dataset {name!r} lacks {', '.join(missing)}")
    fmt = spec.get("format", "csv")
    if fmt not in FORMATS:
        raise ValueError(f"registry/{group}.toml: dataset {name!r} has unknown format {fmt!r}")
    return Dataset(name=name, group=group, **spec)


@cache
def registry() -> dict[str, Dataset]:
    """All registered datasets, by name, in registry-file order."""
    out: dict[str, Dataset] = {}
    for toml_path in sorted(REGISTRY_DIR.glob("*.toml")):
        with open(toml_path, "rb") as fh:
            entries = tomllib.load(fh)
        for name, spec in entries.items():
            if name in out:
                raise ValueError(f"dataset {name!r} is registered twice ({toml_path.name})")
            out[name] = _parse_entry(name, spec, toml_path.stem)
    return out


def get(name: str) -> Dataset:
    """The registered dataset called ``name``, or a UserError with suggestions."""
    reg = registry()
    if name not in reg:
        close = get_close_matches(name, reg, n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else "; `scalinglab data list` shows them"
        raise UserError(f"unknown dataset {name!r}{hint}")
    return reg[name]


def mirror_root() -> Path | None:
    """``$SCALINGLAB_DATA_MIRROR`` as a folder. A relative setting means relative to where it was set, which
    the README says is the checkout's root; a kernel or test that runs elsewhere (``notebooks/``, a temporary
    folder) still finds it there. ``make`` and the test suite make it absolute before anything moves."""
    root = os.environ.get(MIRROR_ENV)
    if not root:
        return None
    path = Path(root).expanduser()
    if path.is_absolute() or path.is_dir():
        return path.resolve() if path.is_dir() else path
    checkout = REPO_DATA.parent
    return (checkout / path).resolve() if (checkout / path).is_dir() else path


def cache_root() -> Path:
    root = os.environ.get(CACHE_ENV)
    return Path(root).expanduser() if root else Path.home() / ".cache" / "scalinglab"


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


# Hashing a file once per process is enough: keyed by (path, size, mtime).
_verified: set[tuple[str, int, int]] = set()


def _check_hash(ds: Dataset, path: Path) -> None:
    st = path.stat()
    key = (str(path), st.st_size, st.st_mtime_ns)
    if key in _verified:
        return
    got = sha256_of(path)
    if got != ds.sha256:
        raise DataError(
            f"dataset {ds.name}: {path} has sha256 {got[:12]}…, expected {ds.sha256} "
            "(corrupt or a different version; delete it to re-download)"
        )
    _verified.add(key)


def _download(ds: Dataset, dest: Path) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=dest.name + ".", suffix=".part")
    try:
        with os.fdopen(fd, "wb") as out, urllib.request.urlopen(ds.url, timeout=30) as resp:
            for chunk in iter(lambda: resp.read(1 << 20), b""):
                out.write(chunk)
        got = sha256_of(Path(tmp))
        if got != ds.sha256:
            raise DataError(
                f"dataset {ds.name}: download from {ds.url} has sha256 {got[:12]}…, expected {ds.sha256}"
            )
        os.replace(tmp, dest)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def locate(name: str, *, download: bool = True) -> Path:
    """A local path to the dataset's file, verified against its sha256."""
    ds = get(name)
    mirror = mirror_root()
    candidates = [REPO_DATA / ds.path] if ds.repo else []
    if mirror is not None:
        candidates.append(mirror / ds.path)
    cached = cache_root() / ds.path
    candidates.append(cached)
    for cand in candidates:
        if cand.is_file():
            _check_hash(ds, cand)
            return cand
    if download and ds.url:
        try:
            _download(ds, cached)
            _verified.add((str(cached), cached.stat().st_size, cached.stat().st_mtime_ns))
            return cached
        except (urllib.error.URLError, OSError, TimeoutError) as exc:
            reason = getattr(exc, "reason", exc)
            where = " or ".join(str(c) for c in candidates)
            raise DataError(
                f"dataset {ds.name}: no file at {where} and download from {ds.url} failed ({reason}); "
                f"expected sha256 {ds.sha256} (set ${MIRROR_ENV} to a mirror folder to work offline)"
            ) from None
    where = " or ".join(str(c) for c in candidates)
    raise DataError(f"dataset {ds.name}: no file at {where}; expected sha256 {ds.sha256}")


def _read(ds: Dataset, path: Path):
    import pandas as pd

    if ds.loader:
        module, _, func = ds.loader.partition(":")
        return getattr(importlib.import_module(module), func)(path, ds)
    if ds.format == "csv":
        return pd.read_csv(path)
    if ds.format == "jsonl":
        return pd.read_json(path, lines=True)
    if ds.format == "json":
        return pd.read_json(path)
    raise UserError(f"dataset {ds.name} is a {ds.format!r} file, not a table: use scalinglab.data.locate({ds.name!r})")


def load(name: str):
    """The dataset as a pandas DataFrame, after its checksum is verified."""
    ds = get(name)
    path = locate(name)
    try:
        df = _read(ds, path)
    except UserError:
        raise
    except Exception as exc:  # a file that passed its hash but will not parse is our bug, but say where
        raise DataError(f"dataset {ds.name}: could not read {path}: {exc}") from exc
    absent = [c for c in ds.columns if c not in df.columns]
    if absent:
        raise DataError(f"dataset {ds.name}: {path} lacks the registered column(s) {', '.join(map(repr, absent))}")
    return df


def _failure_state(ds: Dataset, exc: DataError) -> str:
    if "has sha256" in str(exc):
        return "corrupt"
    return "missing" if ds.mirrored else "absent"


def status(name: str) -> tuple[str, str]:
    """(state, where) without downloading.

    state is ok, corrupt, missing (a file the mirror should carry), or absent
    (a file no offline mirror is expected to carry: not an error).
    """
    ds = get(name)
    try:
        return "ok", str(locate(name, download=False))
    except DataError as exc:
        return _failure_state(ds, exc), str(exc)


def verify(names: list[str] | None = None, *, download: bool = False) -> list[tuple[str, str, str]]:
    """Check every (or the named) dataset; rows of (name, state, detail)."""
    rows = []
    for name in names or list(registry()):
        if download:
            try:
                rows.append((name, "ok", str(locate(name, download=True))))
            except DataError as exc:
                rows.append((name, _failure_state(get(name), exc), str(exc)))
        else:
            rows.append((name, *status(name)))
    return rows
