"""The CLI starts fast: no torch (or other heavy modules) on its import path."""

import subprocess
import sys

HEAVY = ("torch", "matplotlib", "seaborn", "statsmodels", "transformers")


def test_cli_import_path_is_light():
    code = (
        "import sys; from scalinglab.cli import build_parser; build_parser(); "
        f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"heavy modules imported at CLI start: {out.stdout.strip()}"


def test_library_never_imports_the_cli():
    code = (
        "import sys, pkgutil, importlib, scalinglab\n"
        "for m in pkgutil.iter_modules(scalinglab.__path__):\n"
        "    if m.name not in ('cli', '__main__'):\n"
        "        importlib.import_module('scalinglab.' + m.name)\n"
        "print(any(k.startswith('scalinglab.cli') for k in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_help_lists_commands_and_exits_zero():
    out = subprocess.run([sys.executable, "-m", "scalinglab", "--help"], capture_output=True, text=True)
    assert out.returncode == 0 and "data" in out.stdout
