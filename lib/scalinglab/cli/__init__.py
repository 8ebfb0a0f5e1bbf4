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
import sys

from scalinglab import __version__
from scalinglab.errors import UserError

# One module per subcommand, in the order `--help` lists them.
COMMAND_MODULES = (
    "fit",
    "saved",
    "compare",
    "design",
    "compare_laws",
    "isoflop",
    "envelope",
    "params",
    "data",
    "sweep",
    "inverse_eval",
    "trend",
)


class _Parser(argparse.ArgumentParser):
    """argparse, except that a usage mistake is one line like every other error: what is wrong, and
    where the usage is (argparse would print the whole usage block first)."""

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


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except UserError as exc:
        print(f"scalinglab {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"scalinglab {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # `scalinglab ... | head` closed the pipe: not an error. Point stdout at
        # devnull so the interpreter's final flush does not raise again.
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
