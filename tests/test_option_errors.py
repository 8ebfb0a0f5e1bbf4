"""The library names a bad option by the keyword it takes; the CLI names the same option by its flag."""

import ast
import re
from pathlib import Path

import numpy as np
import pytest
import scalinglab as sl
from conftest import refused
from scalinglab.cli.flags import flag_of, said
from scalinglab.errors import OptionError, UserError

LIB = Path(__file__).resolve().parents[1] / "lib" / "scalinglab"
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]+")
COMMAND = re.compile(r"`scalinglab [^`]*`")   # a quoted command (where a file comes from) is not a flag given


def _raised_texts(path: Path):
    """The string pieces of every ``raise SomethingError(...)`` in a module (f-strings included)."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call):
            for sub in ast.walk(node.exc):
                if isinstance(sub, ast.Constant) and isinstance(sub.value, str):
                    yield node.lineno, sub.value


def test_no_library_error_outside_the_cli_names_a_flag():
    offenders = [f"{p.relative_to(LIB)}:{line}: {text!r}"
                 for p in sorted(LIB.rglob("*.py")) if "cli" not in p.relative_to(LIB).parts
                 for line, text in _raised_texts(p) if FLAG.search(COMMAND.sub("", text))]
    assert not offenders, "\n".join(offenders)


def test_an_option_error_says_the_keyword_and_the_cli_the_flag():
    exc = OptionError("{drop_highest} must be >= 0, not -1; {n_boot} {k}", "drop_highest", "n_boot", "k")
    assert str(exc) == "drop_highest must be >= 0, not -1; n_boot k"
    assert said(exc) == "--drop-highest must be >= 0, not -1; --bootstrap --k"
    assert said(UserError("plain {x}")) == "plain {x}"      # other errors are left as they are
    assert flag_of("loss_col") == "--loss-col"
    with pytest.raises(TypeError):
        OptionError("no option named")


def test_braces_in_a_value_are_kept():
    exc = OptionError("{save} a{b}c.slfit: no folder", "save")
    assert str(exc) == "save a{b}c.slfit: no folder" and said(exc) == "--save a{b}c.slfit: no folder"


def _runs(tmp_path):
    N = np.repeat([1e7, 3e7, 1e8, 3e8], 4)
    D = np.tile([1e9, 3e9, 1e10, 3e10], 4)
    L = 1.7 + 400 / N ** 0.34 + 400 / D ** 0.28
    path = tmp_path / "runs.csv"
    path.write_text("N,D,loss\n" + "".join(f"{n},{d},{loss}\n" for n, d, loss in zip(N, D, L)))
    return path


def test_the_same_bad_option_from_the_front_door_and_the_command(tmp_path, capsys):
    path = _runs(tmp_path)
    with pytest.raises(UserError, match=r"^drop_highest must be >= 0, not -1$"):
        sl.fit(path, drop_highest=-1)
    refused(capsys, ["fit", path, "--drop-highest", "-1"], "--drop-highest must be >= 0, not -1")
