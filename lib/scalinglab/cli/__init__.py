"""The ``scalinglab`` command.

Each subcommand lives in its own module here and exposes
``register(subparsers)``, which adds its parser and sets ``func``. Modules
import only argparse at the top; heavy imports (pandas, scipy, torch) happen
inside the command's function, so ``scalinglab --help`` and the start of
``scalinglab fit`` stay fast. The library never imports this package.
"""

from __future__ import annotations

import argparse
import importlib
import sqlite3  # 2 ms: the one-line error for a damaged database needs its exception class
import sys
import warnings  # loaded at the interpreter's start already

from scalinglab.cli.flags import said
from scalinglab.errors import UserError
from scalinglab.files import MAX_COUNT, SIZES
from scalinglab.version import __version__

# One module per subcommand, in the order `--help` lists them.
COMMAND_MODULES = (
    "fit",
    "saved",
    "compare",
    "design",
    "compare_laws",
    "scoreboard",
    "isoflop",
    "envelope",
    "params",
    "data",
    "sweep",
    "inverse_eval",
    "trend",
    "chain",
    "curves",
    "hparams",
)


# Every count flag, by its argparse name: (smallest, largest, what it counts, what each costs). A count past
# the cap asks for more memory or time than any analysis here needs (`design --sims 10**9` asked for 37 GiB),
# so it is refused up front with the reason.
COUNTS = {
    "bootstrap": (0, MAX_COUNT, "resamples", "each refits the law"),
    "drop_highest": (0, MAX_COUNT, "rows", "dropped before the fit"),
    "k": (1, 1_000, "runs", "each is chosen by simulating every candidate"),
    "sims": (1, 10_000, "worlds", "each refits the law --resamples times per candidate"),
    "resamples": (1, 10_000, "resamples", "each refits the law in every simulated world"),
    "limit": (1, 10_000_000, "examples", "each is scored"),
    "batch_size": (1, 4_096, "examples", "held in memory per forward pass"),
    "max_runs": (1, MAX_COUNT, "runs", "each is trained"),
    "workers": (1, 256, "processes", "at once"),
    "seeds": (1, 100, "seeds", "each trains every run of the sweep again"),
}
# Sizes that a file or a schedule asks for rather than a flag (files.SIZES, checked where they are read): listed
# here so that every cap is in one table. check_counts skips them (no flag of that name).
COUNTS.update({key: (1, hi, unit, why) for key, (hi, unit, why) in SIZES.items()})


# Every flag that writes, by its argparse name, and every argument that names a file read. Before any command
# starts, each output is checked (files.check_outputs): not empty, not an existing FIFO, device, socket or
# folder (a rename would replace it), and not the same file as any input, through links. A new writing flag
# is named here or tests/test_hostile_round4.py fails.
OUTPUT_FLAGS = {"save": "--save", "out": "--out", "plot": "--plot", "export": "--export"}
FOLDER_OUTPUTS = ("--export",)
INPUT_ARGS = ("csv", "fit", "predict", "proposal", "targets", "schedule", "db", "model")


def check_files(args: argparse.Namespace) -> None:
    """Every input file named that exists is a regular file under the size cap (checked now, before any work:
    `fit runs.csv --predict huge.csv` fitted first), and every output flag given can be written without
    destroying a file or an input; a one-line UserError."""
    import os

    from scalinglab.files import check_outputs, regular_file

    inputs = []
    for dest in INPUT_ARGS:
        value = getattr(args, dest, None)
        inputs += [v for v in (value if isinstance(value, list) else [value]) if isinstance(v, str)]
    for path in inputs:   # a schedule written NAME:key=value, a database still to create, a model folder: skipped
        if path and os.path.exists(path) and not os.path.isdir(path):
            regular_file(path)
    outputs = {flag: getattr(args, dest) for dest, flag in OUTPUT_FLAGS.items()
               if getattr(args, dest, None) is not None}
    if outputs:
        check_outputs(outputs, inputs, folders=FOLDER_OUTPUTS)


def check_counts(args: argparse.Namespace) -> None:
    """Each count flag given within its bounds (COUNTS), or a one-line UserError naming the flag and value."""
    from scalinglab.files import check_count

    for dest, (lo, hi, unit, why) in COUNTS.items():
        value = getattr(args, dest, None)
        if isinstance(value, int) and not isinstance(value, bool):
            check_count(value, "--" + dest.replace("_", "-"), why, lo=lo, hi=hi, unit=unit)


class _Parser(argparse.ArgumentParser):
    """argparse, except that a usage mistake is one line like every other error: what is wrong, and
    where the usage is (argparse would print the whole usage block first)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # argparse reads "-1e12" as a flag (its negative-number pattern has no exponent), so `--compute -1e12` said
        # "expected one argument"; with exponents the value reaches the command, which says what is wrong with it.
        import re

        self._negative_number_matcher = re.compile(r"^-(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$")

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="scalinglab",
        description="Fit and reason about scaling laws; reproduce the classic results.",
    )
    parser.add_argument("--version", action="version", version=f"scalinglab {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        # A module that fails to import is an error, never a silently missing command.
        importlib.import_module(f"scalinglab.cli.{name}").register(sub)
    return parser


# An error names a file, column, row or value; past this many characters it is quoting a file's contents
# (`scoreboard /proc/self/environ` printed the whole environment as its column names).
MAX_MESSAGE = 400


def _one_line(exc: Exception) -> str:
    """An error's message as one printable line: control characters read from a file (an ESC sequence that
    clears the screen, a newline that forges a second line) escaped, and the whole cut to MAX_MESSAGE."""
    import re

    from scalinglab.errors import printable

    # numpy 2's scalar repr inside a message (np.float64(nan)) reads as the number itself.
    text = re.sub(r"np\.(?:float|int|uint|bool|str)\w*\(([^()]*)\)", r"\1", printable(str(exc)))
    if len(text) <= MAX_MESSAGE:
        return text
    return f"{text[:MAX_MESSAGE]}... ({len(text) - MAX_MESSAGE:,} more characters)"


def _one_line_warnings(command: str):
    """Print every warning as one line naming the command, never the source line behind it (numpy's
    RuntimeWarnings showed code); returns the formatter it replaced, for main to restore."""
    def one_line(message, category, filename, lineno, line=None) -> str:
        text = str(message).strip().splitlines()[0] if str(message).strip() else category.__name__
        return f"scalinglab {command}: warning: {_one_line(text)}\n"

    previous, warnings.formatwarning = warnings.formatwarning, one_line
    return previous


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    formatwarning = _one_line_warnings(args.command)
    try:
        check_counts(args)
        check_files(args)
        return int(args.func(args) or 0)
    except UserError as exc:
        exc = UserError(said(exc))   # an OptionError names its option by the keyword; the user gave a flag
        print(f"scalinglab {args.command}: error: {_one_line(exc)}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # `scalinglab ... | head` closed the pipe: not an error. Point stdout at
        # devnull so the interpreter's final flush does not raise again.
        import os

        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):   # no real file behind stdout (io.UnsupportedOperation is a ValueError)
            pass
        return 0
    except OSError as exc:
        # Anything the commands did not word themselves (a permission, a full disk): the file and the reason.
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"scalinglab {args.command}: error: {where}{exc.strerror or exc}", file=sys.stderr)
        return 2
    except sqlite3.Error as exc:
        db = getattr(args, "db", None) or getattr(args, "dir", None) or "the database"
        print(f"scalinglab {args.command}: error: {db}: {exc} (a damaged, locked, read-only or edited sweep "
              "database)", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"scalinglab {args.command}: interrupted", file=sys.stderr)
        return 130
    finally:
        warnings.formatwarning = formatwarning


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
