"""The README's tour keeps its real output: every ``$ scalinglab ...`` (or ``$ python examples/...``) line in a
console block between ``<!-- tour -->`` and ``<!-- /tour -->`` is run, and the output under it replaced by what it
prints now.

    python -m scalinglab.harness.tour README.md           # rewrite the outputs
    python -m scalinglab.harness.tour --check README.md   # exit 1 if an output changed shape (numbers masked)

Commands run in a fresh process from the repository root, so paths in them are relative to it.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

from scalinglab.harness.workbook import project_root

TOUR = re.compile(r"(<!-- tour -->\n)(.*?)(<!-- /tour -->)", re.S)
BLOCK = re.compile(r"(```console\n)(.*?)(```)", re.S)


def run_command(line: str, cwd: Path | None = None) -> str:
    """What ``scalinglab ARGS`` prints (stdout, then stderr), run as a user would (a fresh process: the
    library never imports the CLI)."""
    argv = shlex.split(line)
    if argv[:1] == ["python"] and len(argv) == 2 and argv[1].startswith("examples/"):  # a library example
        cmd = [sys.executable, argv[1]]
    elif argv[:1] == ["scalinglab"]:
        cmd = [sys.executable, "-m", "scalinglab", *argv[1:]]
    else:
        raise ValueError(f"a tour command is 'scalinglab ...' or 'python examples/FILE', not {line!r}")
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd,
                          env={**os.environ, "MPLBACKEND": "Agg", "COLUMNS": "120"})
    text = proc.stdout + proc.stderr
    return text if proc.returncode == 0 else text + f"(exit {proc.returncode})\n"


def _render_block(body: str, cwd: Path | None) -> str:
    commands = [ln[2:] for ln in body.splitlines() if ln.startswith("$ ")]
    return "".join(f"$ {cmd}\n{run_command(cmd, cwd)}" for cmd in commands)


def refresh(text: str, cwd: Path | None = None) -> str:
    """``text`` with every tour block's outputs regenerated, the commands run in ``cwd``."""
    def tour(m: re.Match) -> str:
        return m.group(1) + BLOCK.sub(lambda b: b.group(1) + _render_block(b.group(2), cwd) + b.group(3), m.group(2)) \
            + m.group(3)

    return TOUR.sub(tour, text)


def masked(text: str) -> str:
    """``text`` with every number replaced by ``#`` and runs of spaces by one: what a check compares, since
    bootstrap digits move with the BLAS kernel and thread count while the commands' output must not
    change shape (flags, columns, messages)."""
    return re.sub(r" +", " ", re.sub(r"[-+]?\d[\d.]*(?:e[-+]?\d+)?%?", "#", text))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m scalinglab.harness.tour", description=__doc__.splitlines()[0])
    ap.add_argument("path", type=Path, help="the Markdown file (README.md)")
    ap.add_argument("--check", action="store_true", help="only check: exit 1 if an output differs")
    args = ap.parse_args(argv)
    path = args.path.resolve()
    os.environ.setdefault("MPLBACKEND", "Agg")
    old_cwd = Path.cwd()
    os.chdir(project_root(path.parent))
    try:
        text = path.read_text()
        new = refresh(text)
    finally:
        os.chdir(old_cwd)
    if not TOUR.search(text):
        print(f"{path}: no <!-- tour --> section", file=sys.stderr)
        return 1
    if args.check:
        if masked(new) != masked(text):
            print(f"{path}: the tour's outputs are stale; run python -m scalinglab.harness.tour {args.path}",
                  file=sys.stderr)
            return 1
        return 0
    path.write_text(new)
    return 0


if __name__ == "__main__":
    sys.exit(main())
