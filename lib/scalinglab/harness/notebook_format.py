"""Notebooks in the form JupyterLab writes, without the traces of the machine that ran them.

    python -m scalinglab.harness.notebook_format [--check] FILES...

A committed notebook must not change when someone opens it in JupyterLab and saves it (or autosave does), and must
not name folders of the machine that ran it. What JupyterLab 4.6 changes on open and save, as `make lab-check`
measured it (it saves through jupyter_server, i.e. nbformat's writer):
- ``metadata.kernelspec`` becomes the running kernel's: ``{"display_name": "Python 3 (ipykernel)", "language":
  "python", "name": "python3"}`` (papermill writes "Python 3");
- ``metadata.language_info`` becomes the kernel's whole ``language_info`` (version: the kernel's Python);
- cell metadata ``trusted`` is dropped; ``collapsed: true`` gains ``jupyter.outputs_hidden: true``;
- every number passes through JavaScript: a float with an integral value (widget state's ``"max": 22.0``) is
  written as an integer, and NaN or infinity as null;
- the JSON is nbformat's: indent 1, sorted keys, non-ASCII characters as themselves, a trailing newline;
  sources, stream texts and text/* outputs split into lines, image/png and other binary data as one string.
It keeps everything else: ``nbformat_minor``, cell ids (it adds none to a 4.4 notebook), other cell metadata
(papermill's and the kernel's ``execution`` timings included), stream outputs as stored, ``transient``.

``normalize`` does the same and also strips what papermill records about the run: the notebook's ``papermill``
block (input and output paths, which may be a temporary folder, times, duration, environment) and each cell's
``papermill`` and ``execution`` metadata (times and durations), and papermill's ``injected-parameters`` cell when it
only repeats the ``parameters`` cell's values (a run with other values keeps it: the outputs are that run's).
A 4.5 notebook's cell without an id gets one
derived from its position and source (the server would otherwise invent a random one on every open).
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import json
import math
import platform
import sys
from pathlib import Path
from typing import Any

# What the venv's ipykernel (pinned in pyproject.toml) announces; tests/test_notebook_format.py checks both.
KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
LANGUAGE_INFO = {"codemirror_mode": {"name": "ipython", "version": 3}, "file_extension": ".py",
                 "mimetype": "text/x-python", "name": "python", "nbconvert_exporter": "python",
                 "pygments_lexer": "ipython3"}
RUN_METADATA = ("papermill",)             # notebook level: paths, times, duration, environment of the run
CELL_RUN_METADATA = ("papermill", "execution", "trusted")   # times and durations; trusted: the server drops it
SPLIT_MIMES = ("application/javascript", "image/svg+xml")   # split into lines besides text/* (as nbformat does)


def _is_json_mime(mime: str) -> bool:
    return mime == "application/json" or (mime.startswith("application/") and mime.endswith("+json"))


def _lines(value: Any) -> Any:
    return value.splitlines(True) if isinstance(value, str) else value


def _mimebundle(data: dict) -> None:
    """nbformat's rejoin (what the server reads) then split (what it writes)."""
    for key, value in list(data.items()):
        if not _is_json_mime(key) and isinstance(value, list) and all(isinstance(v, str) for v in value):
            value = data[key] = "".join(value)
        if isinstance(value, str) and (key.startswith("text/") or key in SPLIT_MIMES):
            data[key] = value.splitlines(True)


def _js_numbers(value: Any) -> Any:
    """Numbers as they come back from the browser's JSON.parse/JSON.stringify (JS has one number type)."""
    if isinstance(value, dict):
        return {k: _js_numbers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_js_numbers(v) for v in value]
    if isinstance(value, float):
        if not math.isfinite(value):
            return None
        if value.is_integer() and abs(value) < 1e21:  # from 1e21 on, JS writes exponents: Python reads a float
            return int(value)
    return value


def _cell_id(index: int, cell: dict) -> str:
    source = cell.get("source", "")
    text = f"{index}:{''.join(source) if isinstance(source, list) else source}"
    return hashlib.sha1(text.encode()).hexdigest()[:8]


def _assignments(cell: dict) -> dict | None:
    """A parameters cell's simple assignments (name -> literal), or None when it holds anything else."""
    import ast

    source = cell.get("source", "")
    try:
        tree = ast.parse("".join(source) if isinstance(source, list) else source)
        return {t.id: ast.literal_eval(node.value) for node in tree.body for t in node.targets}
    except (SyntaxError, ValueError, AttributeError):
        return None


def _drop_repeated_injection(cells: list) -> list:
    tags = [set(c.get("metadata", {}).get("tags", [])) for c in cells]
    params = [c for c, t in zip(cells, tags) if "parameters" in t]
    if len(params) != 1:
        return cells
    defaults = _assignments(params[0])
    return [c for c, t in zip(cells, tags)
            if not ("injected-parameters" in t and defaults is not None and _assignments(c) == defaults)]


def normalize(nb: dict) -> dict:
    """The notebook as JupyterLab would save it, less papermill's record of the run (a new dict)."""
    nb = _js_numbers(nb)
    if "cells" in nb:
        nb["cells"] = _drop_repeated_injection(nb["cells"])
    meta = nb.setdefault("metadata", {})
    for key in (*RUN_METADATA, "orig_nbformat", "orig_nbformat_minor", "signature"):
        meta.pop(key, None)
    meta["kernelspec"] = dict(KERNELSPEC)
    version = (meta.get("language_info") or {}).get("version") or platform.python_version()
    meta["language_info"] = copy.deepcopy(LANGUAGE_INFO) | {"version": version}
    with_ids = (nb.get("nbformat"), nb.get("nbformat_minor", 0)) >= (4, 5)
    seen: set[str] = set()
    for index, cell in enumerate(nb.get("cells", [])):
        cmeta = cell.setdefault("metadata", {})
        for key in CELL_RUN_METADATA:
            cmeta.pop(key, None)
        if cmeta.get("collapsed") is True:
            cmeta.setdefault("jupyter", {})["outputs_hidden"] = True
        if with_ids and (not cell.get("id") or cell["id"] in seen):
            cell["id"] = _cell_id(index, cell)
        if with_ids:
            seen.add(cell["id"])
        if isinstance(cell.get("source"), list):
            cell["source"] = "".join(cell["source"])
        cell["source"] = _lines(cell.get("source", ""))
        for attachment in cell.get("attachments", {}).values():
            _mimebundle(attachment)
        for output in cell.get("outputs", []):
            if output.get("output_type") in ("execute_result", "display_data"):
                _mimebundle(output.get("data", {}))
            elif output.get("output_type") == "stream":
                text = output.get("text", "")
                output["text"] = _lines("".join(text) if isinstance(text, list) else text)
    return nb


def dumps(nb: dict) -> str:
    """The bytes jupyter_server writes for ``nb`` (nbformat.write: indent 1, sorted keys, trailing newline)."""
    return json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False, separators=(",", ": ")) + "\n"


def normal_text(path: Path) -> str:
    return dumps(normalize(json.loads(Path(path).read_text(encoding="utf-8"))))


def rewrite(path: Path) -> bool:
    """Rewrite ``path`` in normal form; True when that changed the file."""
    path = Path(path)
    before = path.read_text(encoding="utf-8")
    after = normal_text(path)
    if after != before:
        path.write_text(after, encoding="utf-8")
    return after != before


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m scalinglab.harness.notebook_format",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+", type=Path)
    ap.add_argument("--check", action="store_true", help="change nothing; exit 1 if a file is not in normal form")
    args = ap.parse_args(argv)
    changed = []
    for path in args.files:
        if args.check:
            if normal_text(path) != path.read_text(encoding="utf-8"):
                changed.append(path)
        elif rewrite(path):
            changed.append(path)
    for path in changed:
        print(f"{path}: {'not in normal form' if args.check else 'normalized'}")
    return 1 if args.check and changed else 0


if __name__ == "__main__":
    sys.exit(main())
