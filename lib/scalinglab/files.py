"""Files the command line reads and writes, handled so that nothing hangs, no input is overwritten, and a crash
leaves the old file whole.

- ``regular_file``: an input is opened only after ``stat`` says it is a regular file. A FIFO would block the read
  forever, and ``/dev/zero`` or ``/dev/urandom`` never end; both are refused in one line instead.
- ``check_outputs``: an output path that is the same file as an input (``fit X.csv --save X.csv``, through links
  too), an empty path, or an existing FIFO, device, socket or folder is refused before any work, so a typo never
  turns the runs into a zip and a rename never replaces a device node. The CLI runs it for every writing flag of
  every command (``scalinglab.cli.OUTPUT_FLAGS``) before the command starts.
- ``atomic_write``: every output is written to a temporary file beside it and renamed into place, so an
  interrupted write leaves the previous file as it was.
- ``regular_file`` also refuses a file over the input cap (1 GB, ``$SCALINGLAB_MAX_INPUT_BYTES``) from its size,
  before it is read.
- ``check_count``: a count flag is refused above a cap, with the reason, rather than asking for gigabytes;
  ``check_size`` does the same for an array size that a file asks for (``SIZES``: a schedule's steps, the rows
  the variable-projection grid profiles).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

from scalinglab.errors import UserError

# What stat calls a file that is not a regular one, for the message.
_KINDS = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


# The largest input any command reads (1 GB; SCALINGLAB_MAX_INPUT_BYTES overrides): a table of a million runs
# is 100 MB, and pandas holds about twice a file's size, so a file past this is a mistake (`truncate -s 2G`
# was read whole at 4.2 GB and ended in a bare MemoryError). Checked from stat, before the file is opened.
MAX_INPUT_BYTES = 1_000_000_000
MAX_INPUT_ENV = "SCALINGLAB_MAX_INPUT_BYTES"


def max_input_bytes() -> int:
    """The input size cap: $SCALINGLAB_MAX_INPUT_BYTES (a whole number of bytes) when set, else 1 GB."""
    text = os.environ.get(MAX_INPUT_ENV, "").strip()
    if not text:
        return MAX_INPUT_BYTES
    try:
        value = int(float(text)) if "e" in text.lower() else int(text)
    except (ValueError, OverflowError):
        raise UserError(f"${MAX_INPUT_ENV}={text[:40]!r}: not a whole number of bytes") from None
    if value < 1:
        raise UserError(f"${MAX_INPUT_ENV}={text[:40]!r}: must be at least 1 byte")
    return value


def regular_file(path: str | os.PathLike, label: str | None = None) -> Path:
    """``path`` as a Path when it names a regular file (links followed) no larger than ``max_input_bytes()``,
    else a one-line UserError that names it and says what it is. ``label`` prefixes the message (e.g. a flag);
    by default the path itself. Every reader of a user's file starts here."""
    if isinstance(path, (bool, int)):   # os.stat(5) would stat file descriptor 5
        raise UserError(f"{path!r}: not a file name; give a path")
    if isinstance(path, str) and not path.strip():
        raise UserError(f"{label or 'the input'}: an empty path; give a file")
    where = label or str(path)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise UserError(f"{where}: no such file") from None
    except OSError as exc:
        raise UserError(f"{where}: cannot read it ({exc.strerror or exc})") from None
    if stat.S_ISDIR(st.st_mode):
        raise UserError(f"{where}: is a folder, not a file")
    for test, kind in _KINDS:
        if test(st.st_mode):
            raise UserError(f"{where}: is {kind}, not a regular file; give a file")
    if not stat.S_ISREG(st.st_mode):
        raise UserError(f"{where}: not a regular file; give a file")
    cap = max_input_bytes()
    if st.st_size > cap:
        raise UserError(f"{where}: {st.st_size:,} bytes, over the {cap:,} an input may hold (a table of a "
                        f"million runs is 100 MB); ${MAX_INPUT_ENV} raises the cap")
    return Path(path)


def sweep_database(path: str | os.PathLike) -> Path:
    """A sweep's SQLite database to read: a regular file, or a one-line UserError saying what it is instead."""
    if not os.path.lexists(path):
        raise UserError(f"{path}: no such sweep database")
    return regular_file(path)


def _same(a: str | os.PathLike, b: str | os.PathLike) -> bool:
    """The same file: one (st_dev, st_ino) through any links, hard or symbolic; a path that does not exist yet
    is compared by where it would be."""
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):   # one of them does not exist (yet), or holds a NUL: compare where they would be
        try:
            return Path(a).resolve() == Path(b).resolve()
        except (OSError, ValueError, RuntimeError):
            return False


def _kind(mode: int) -> str | None:
    """What a file that is not a regular one is, for a message; None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "a folder"
    return next((kind for test, kind in _KINDS if test(mode)), "not a regular file")


def check_output(path: str | os.PathLike | None, flag: str, folder: bool = False) -> None:
    """An output path that can be written without destroying anything: not empty, and, when it exists, a regular
    file (``folder``: a folder). A rename over a FIFO, a device or a socket replaces the node itself with a
    regular file (as root, ``--save /dev/null`` would), so such a target is refused in one line."""
    if path is None:
        return
    text = os.fspath(path)
    if not text.strip():
        raise UserError(f"{flag}: an empty path; give a {'folder' if folder else 'file'} name")
    if "\0" in text:
        raise UserError(f"{flag}: the path holds a NUL character")
    try:
        st = os.stat(text)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise UserError(f"{flag} {text}: cannot use it ({exc.strerror or exc})") from None
    kind = _kind(st.st_mode)
    where = flag if text in flag else f"{flag} {text}"   # atomic_write's label already names the path
    if folder:
        if kind != "a folder":
            raise UserError(f"{where}: is {kind or 'a file'}, not a folder; give a folder to write in")
    elif kind:
        raise UserError(f"{where}: is {kind}, not a regular file; give a file to write")


def check_outputs(outputs: Mapping[str, str | os.PathLike | None], inputs: Sequence[str | os.PathLike | None],
                  folders: Sequence[str] = ()) -> None:
    """Refuse an output (``{flag: path}``) that is empty, an existing file that is not a regular one (``folders``:
    the flags that write a folder), the same file as an input, or the same as another output."""
    for flag, p in outputs.items():
        check_output(p, flag, folder=flag in folders)
    outs = [(flag, p) for flag, p in outputs.items() if p]
    ins = [p for p in inputs if p]
    for flag, out in outs:
        for inp in ins:
            if _same(out, inp):
                raise UserError(f"{flag} {out}: is the input file {inp}; write the output to another file")
    for i, (flag, out) in enumerate(outs):
        for other_flag, other in outs[:i]:
            if _same(out, other):
                raise UserError(f"{flag} {out}: is also the {other_flag} file; give each output its own file")


@contextmanager
def atomic_write(path: str | os.PathLike, label: str | None = None) -> Iterator[Path]:
    """Yield a temporary path beside ``path`` (same folder and suffix, so a writer that reads the format from
    the suffix still works); on success it replaces ``path`` in one rename, on any error it is removed and
    ``path`` is left as it was. An OSError becomes a one-line UserError naming ``label`` or the path."""
    check_output(path, label or "the output")
    target = Path(path)
    tmp = target.with_name(f".{target.stem}.partial-{os.getpid()}{target.suffix}")
    try:
        yield tmp
        check_output(path, label or "the output")   # again: the target may have become a FIFO meanwhile
        os.replace(tmp, target)
    except OSError as exc:
        raise UserError(f"{label or target}: cannot write it ({exc.strerror or exc})") from None
    finally:
        if tmp.exists():
            tmp.unlink()


# Counts above this ask for more memory or time than any analysis here needs (the bootstrap's own cap).
MAX_COUNT = 100_000


# Sizes of arrays that follow from a value in a file rather than from a count flag: (largest, unit, why).
# The CLI's COUNTS table lists them beside the count flags.
SIZES = {
    "schedule_steps": (10_000_000, "steps", "every step's rate and its running sums are held in memory; a "
                                            "training run of 10 million steps is past any schedule studied here"),
    "varpro_rows": (500_000, "rows", "every (alpha, beta) of the 1,600-pair grid is profiled over every row: "
                                     "about 4 minutes on one core at the cap; the default solver takes more"),
}


def check_size(key: str, value: float, what: str) -> None:
    """``value`` (the size an input asks for, e.g. a schedule's steps) within SIZES[key], else a one-line
    UserError naming ``what`` (the file, column or schedule that asked)."""
    hi, unit, why = SIZES[key]
    if not value <= hi:   # NaN too
        raise UserError(f"{what}: {value:.4g} {unit}, at most {hi:,} ({why})")


def check_count(value: int | None, flag: str, why: str, lo: int = 0, hi: int = MAX_COUNT, unit: str = "") -> None:
    """A count flag between ``lo`` and ``hi`` (``unit`` names what is counted); ``why`` says what one more costs,
    for the message."""
    if value is None:
        return
    if value < lo:
        raise UserError(f"{flag} must be >= {lo}, not {value}")
    if value > hi:
        raise UserError(f"{flag} {value}: at most {hi:,}{' ' + unit if unit else ''} ({why})")
