"""The one reader of runs: a CSV or a registered dataset, with each row's line in the file kept for messages.

``load_runs(path)`` or ``load_runs(dataset="epoch-chinchilla")`` gives ``Runs``: the table, the dataset's roles
(which column holds N, D, the loss ...) and a label that errors and summaries name. ``Runs.select(where,
holdout)`` chooses the rows a fit sees (``rows``) and those it predicts instead (``held``), with conditions such
as ``"N>1e8"`` (``fitting.conditions``). ``read_table`` reads with
the csv module (fast, no pandas: `scalinglab fit` starts in well under a second); ``read_frame`` gives a pandas
DataFrame for the table commands. Both refuse what would otherwise be read silently wrong: a column named
twice, a row with a different number of fields, a file that is not a regular file (``files.regular_file``).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property

import numpy as np

from scalinglab.errors import OptionError, UserError
from scalinglab.files import regular_file

# The columns a plain CSV's runs are read from, unless flags or a dataset's roles say otherwise.
DEFAULT_ROLES = {"n": "N", "d": "D", "loss": "loss"}


@dataclass(frozen=True)
class Runs:
    """Runs as read: ``table`` (columns by name, ``lines``: each row's file line), ``roles`` (role -> column),
    ``label`` (the file or dataset named in messages), and the selection: ``where`` (conditions every used row
    matches) and ``holdout`` (conditions, any of which holds a used row out of the fit to be predicted)."""

    table: object
    label: str
    roles: dict[str, str] = field(default_factory=lambda: dict(DEFAULT_ROLES))
    where: tuple[str, ...] = ()
    holdout: tuple[str, ...] = ()

    def select(self, where=(), holdout=()) -> Runs:
        """These runs with rows chosen by ``where`` and ``holdout`` (each a condition or a sequence of them),
        checked now: a condition that matches no row, holds out none of the chosen rows or all of them is a
        one-line UserError."""
        pick = lambda c: (c,) if isinstance(c, str) else tuple(c or ())  # noqa: E731
        chosen = replace(self, where=pick(where), holdout=pick(holdout))
        chosen.rows  # noqa: B018  (the checks)
        return chosen

    @cached_property
    def _split(self) -> tuple[np.ndarray, np.ndarray]:
        from scalinglab.fitting.conditions import split_rows

        return split_rows(self.table, list(self.where), list(self.holdout))

    @property
    def rows(self) -> np.ndarray:
        """The indices of the rows a fit uses: every ``where`` condition met, no ``holdout`` condition."""
        return self._split[0]

    @property
    def held(self) -> np.ndarray:
        """The indices of the rows held out (chosen by ``where``, matching a ``holdout`` condition)."""
        return self._split[1]


def load_runs(path: str | None = None, *, dataset: str | None = None) -> Runs:
    """Runs from a CSV file or a registered dataset (exactly one of them)."""
    if (path is None) == (dataset is None):
        raise OptionError("give a CSV file or a registered dataset ({dataset} NAME), one of them", "dataset")
    if path is not None:
        return Runs(read_table(path), path)
    from scalinglab import data

    ds = data.get(dataset)
    table = read_table(str(data.locate(dataset))) if ds.format == "csv" and not ds.loader else data.load(dataset)
    return Runs(table, dataset, dict(ds.roles))


class Table(dict):
    """A CSV's columns (name -> cells), with ``lines``: each row's line in the file (header = line 1), which
    messages name rows by."""

    lines: list[int]

    def to_frame(self):
        """The table as pandas, as ``read_frame`` gives a CSV: a missing cell (read as "nan") NaN, rows named by
        their lines."""
        import numpy as np
        import pandas as pd

        cols = {k: [np.nan if c == "nan" else c for c in v] for k, v in self.items()}
        return pd.DataFrame(cols, index=pd.Index(self.lines, name="line"))


def read_table(path: str) -> Table:
    """A CSV's columns by name, read with the csv module (no pandas: `scalinglab fit` starts fast), each row's
    file line kept; a duplicated column name, a ragged row or an unreadable file is a one-line UserError."""
    import csv

    rows, lines = [], []
    regular_file(path)
    try:
        with open(path, newline="", encoding="utf-8-sig") as fh:
            reader = csv.reader(fh)
            for row in reader:
                rows.append(row)
                lines.append(reader.line_num)  # the record's last line (its only one unless a quoted field spans lines)
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise UserError(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}") from None
    if not rows or not any(rows[0]):
        raise UserError(f"{path} is empty: expected a header row and one row per run")
    # Names are stripped like the cells ("N, D, loss" names D, not " D"). The loops over rows below are
    # written to run in C (join, map, zip): a million-row file is read in seconds.
    keep = [i for i, r in enumerate(rows) if i and "".join(r).strip()]
    header, body = [h.strip() for h in rows[0]], [rows[i] for i in keep]
    dup = next((h for i, h in enumerate(header) if h in header[:i]), None)
    if dup is not None:  # the dict below would silently keep only the last such column
        raise UserError(f"{path}: the header names column {dup!r} twice")
    if set(map(len, body)) - {len(header)}:
        ragged = next(i for i, r in enumerate(body) if len(r) != len(header))
        raise UserError(f"{path}: line {lines[keep[ragged]]} has {len(body[ragged])} fields, the header has "
                        f"{len(header)}")
    # Empty cells are missing values, which the fit reports by column and line.
    columns = zip(*body) if body else ([] for _ in header)
    table = Table({name: _cells(col) for name, col in zip(header, columns)})
    table.lines = [lines[i] for i in keep]
    return table


def _cells(column) -> list[str]:
    """A column's cells stripped, an empty one read as "nan" (a missing value)."""
    cells = list(map(str.strip, column))
    return [c or "nan" for c in cells] if "" in cells else cells


def read_frame(path: str):
    """A CSV as a pandas DataFrame indexed by each row's line in the file (``with_file_lines``), with the same
    refusals as ``read_table``: the reader of the table commands (isoflop, envelope, trend, compare-laws)."""
    import pandas as pd

    regular_file(path)
    try:
        df = pd.read_csv(path, skip_blank_lines=False)
    except OSError as exc:
        raise UserError(f"cannot read {path}: {exc.strerror or exc}") from None
    except pd.errors.EmptyDataError:
        raise UserError(f"{path} is empty: expected a header row and one row per run") from None
    except (pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise UserError(f"{path}: not a readable CSV ({str(exc).splitlines()[0]})") from None
    # pandas renames a repeated name ("N", "N.1") and the first would be used unseen: refuse, as `fit` does.
    dup, ragged = _header_problems(path)
    if dup is not None:
        raise UserError(f"{path}: the header names column {dup!r} twice")
    if ragged is not None:   # pandas fills a short row with NaN, which would be reported as a missing value
        line, n, m = ragged
        raise UserError(f"{path}: line {line} has {n} fields, the header has {m}")
    return with_file_lines(df)


def _header_problems(path: str) -> tuple[str | None, tuple[int, int, int] | None]:
    """In one pass over the file: the first column name the header repeats (names stripped, as `fit` reads
    them), and (line, fields, header fields) of the first non-blank row whose field count differs from the
    header's; None for each that is not there."""
    import csv

    with open(path, newline="", encoding="utf-8-sig", errors="replace") as fh:
        reader = csv.reader(fh)
        header = [h.strip() for h in next(reader, [])]
        dup = next((h for i, h in enumerate(header) if h in header[:i]), None)
        for row in reader:
            if any(cell.strip() for cell in row) and len(row) != len(header):
                return dup, (reader.line_num, len(row), len(header))
    return dup, None


def with_file_lines(df):
    """``df`` (read with ``skip_blank_lines=False``) indexed by each row's line in the file (header = line 1;
    the index is named "line", which ``scalinglab.errors.row_name`` reads), rows without a single value
    (blank lines) dropped, as `fit`'s reader drops them. A quoted field spanning lines would shift the count."""
    df.index = df.index + 2
    df.index.name = "line"
    return df[~df.isna().all(axis=1)] if len(df.columns) else df
