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
- ``check_count``: a count flag is refused above a cap, with the reason, rather than asking for gigabytes.
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


def regular_file(path: str | os.PathLike, label: str | None = None) -> Path:
    """``path`` as a Path when it names a regular file (links followed), else a one-line UserError that names
    it and says what it is. ``label`` prefixes the message (e.g. a flag); by default the path itself."""
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


def check_count(value: int | None, flag: str, why: str, lo: int = 0, hi: int = MAX_COUNT, unit: str = "") -> None:
    """A count flag between ``lo`` and ``hi`` (``unit`` names what is counted); ``why`` says what one more costs,
    for the message."""
    if value is None:
        return
    if value < lo:
        raise UserError(f"{flag} must be >= {lo}, not {value}")
    if value > hi:
        raise UserError(f"{flag} {value}: at most {hi:,}{' ' + unit if unit else ''} ({why})")
