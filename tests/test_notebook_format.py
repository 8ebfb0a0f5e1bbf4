"""Notebooks in JupyterLab's saved form, without the paths and times of the run (harness.notebook_format)."""

import json
import re
import sys
from pathlib import Path

import pytest
from scalinglab.harness import notebook_format as nf
from scalinglab.harness.workbook import project_root

NOTEBOOKS = sorted((project_root() / "notebooks").glob("[0-9][0-9]_*.ipynb"))
MACHINE_PATH = re.compile(r"(?<![\w.])/(tmp|work|root|home)/")


def papermill_output() -> dict:
    """A notebook as papermill writes it: its run's paths, times and kernel name, nbformat's layout."""
    return {
        "cells": [
            {"cell_type": "markdown", "id": "intro", "metadata": {}, "source": ["# Title é\n", "text"]},
            {"cell_type": "code", "execution_count": 1, "id": "fit",
             "metadata": {"execution": {"iopub.execute_input": "2026-12-02T07:02:03.1Z"}, "tags": ["parameters"],
                          "papermill": {"duration": 1.2, "end_time": "2026-12-02T07:02:04", "exception": False,
                                        "start_time": "2026-12-02T07:02:03", "status": "completed"}},
             "outputs": [{"name": "stdout", "output_type": "stream", "text": ["a\n", "b\n"]},
                         {"data": {"image/png": ["iVBOR\n", "w0KG\n"], "text/plain": "<Figure>\nsize"},
                          "metadata": {"scalinglab_figure": "fit"}, "output_type": "display_data"}],
             "source": "profile = 'full'\nx = 1"},
        ],
        "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
                     "language_info": {"name": "python", "version": "3.11.7"},
                     "papermill": {"input_path": "notebooks/x.ipynb", "output_path": "/tmp/r05full2.ipynb",
                                   "duration": 298.7, "start_time": "2026-12-02T04:30:16"},
                     "widgets": {"state": {"m": {"max": 22.0, "value": 0.5}}}},
        "nbformat": 4, "nbformat_minor": 5,
    }


def test_normalize_strips_the_runs_traces_and_writes_what_lab_writes():
    nb = nf.normalize(papermill_output())
    text = nf.dumps(nb)
    assert "papermill" not in text and "/tmp/" not in text and "iopub" not in text
    assert nb["metadata"]["kernelspec"]["display_name"] == "Python 3 (ipykernel)"
    assert nb["metadata"]["language_info"]["version"] == "3.11.7"  # the run's Python, kept: Lab would set its own
    assert nb["metadata"]["language_info"]["pygments_lexer"] == "ipython3"
    code = nb["cells"][1]
    assert code["metadata"] == {"tags": ["parameters"]}
    assert code["source"] == ["profile = 'full'\n", "x = 1"]
    assert code["outputs"][1]["data"] == {"image/png": "iVBOR\nw0KG\n", "text/plain": ["<Figure>\n", "size"]}
    assert nb["metadata"]["widgets"]["state"]["m"] == {"max": 22, "value": 0.5}  # JS has no 22.0
    assert text.endswith("}\n") and '\n "cells": [\n' in text and "é" in text


def test_normalize_is_a_fixed_point():
    once = nf.normalize(papermill_output())
    assert nf.normalize(once) == once
    if NOTEBOOKS:  # and on a real notebook, whatever state it is committed in
        real = nf.normalize(json.loads(NOTEBOOKS[0].read_text()))
        assert nf.normalize(real) == real


def test_missing_or_repeated_ids_get_stable_ones_and_old_notebooks_none():
    nb = papermill_output()
    nb["cells"][1]["id"] = "intro"
    nb["cells"].append({"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": ""})
    ids = [c["id"] for c in nf.normalize(nb)["cells"]]
    assert len(set(ids)) == 3 and ids == [c["id"] for c in nf.normalize(nb)["cells"]]
    nb = papermill_output()
    nb["nbformat_minor"] = 4
    for cell in nb["cells"]:
        del cell["id"]
    assert all("id" not in c for c in nf.normalize(nb)["cells"])  # Lab adds none to a 4.4 notebook either


def test_the_writer_is_nbformats():
    """jupyter_server saves through nbformat.write: our bytes must be its bytes."""
    nbformat = pytest.importorskip("nbformat")
    nb = nf.normalize(papermill_output())
    node = nbformat.from_dict(nb)
    assert nf.dumps(nb) == nbformat.writes(node, version=nbformat.NO_CONVERT) + "\n"


def test_kernel_metadata_is_what_the_installed_ipykernel_announces():
    kernelspec = pytest.importorskip("ipykernel.kernelspec")
    ipkernel = pytest.importorskip("ipykernel.ipkernel")
    spec = kernelspec.get_kernel_dict()
    assert nf.KERNELSPEC == {"display_name": spec["display_name"], "language": spec["language"], "name": "python3"}
    announced = dict(ipkernel.IPythonKernel.language_info)
    assert announced.pop("version") == sys.version.split()[0]
    assert nf.LANGUAGE_INFO == announced


def test_cli_rewrites_in_place_and_check_reports(tmp_path, capsys):
    path = tmp_path / "nb.ipynb"
    path.write_text(json.dumps(papermill_output(), indent=1))
    assert nf.main(["--check", str(path)]) == 1
    assert nf.main([str(path)]) == 0
    assert path.read_text() == nf.dumps(nf.normalize(papermill_output()))
    assert nf.main(["--check", str(path)]) == 0
    assert "normalized" in capsys.readouterr().out


# Every committed notebook is in the form JupyterLab saves (python -m scalinglab.harness.notebook_format), so opening
# one in Lab does not mark it modified, and holds no folder of the machine that ran it.
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_committed_notebook_is_in_lab_form(path):
    text, problems = path.read_text(encoding="utf-8"), []
    if nf.normal_text(path) != text:
        problems.append(f"not in Lab's form: python -m scalinglab.harness.notebook_format notebooks/{path.name}")
    normal = nf.normal_text(path)
    found = sorted({normal[m.start():m.start() + 40].split('"')[0] for m in MACHINE_PATH.finditer(normal)})
    if found:  # looked for after normalizing: what papermill records goes then, a path printed by a cell stays
        problems.append(f"names folders of the machine that ran it: {found}")
    assert not problems, problems


def test_reproduce_normalizes_what_papermill_wrote(tmp_path, monkeypatch):
    """`make reproduce` leaves each executed notebook in Lab's form, without papermill's paths (papermill faked)."""
    import types

    from scalinglab.harness import reproduce

    def execute_notebook(src, out, **kwargs):
        Path(out).write_text(json.dumps(papermill_output()))

    fake = types.SimpleNamespace(inspect_notebook=lambda path: {"profile": {}}, execute_notebook=execute_notebook)
    monkeypatch.setitem(sys.modules, "papermill", fake)
    nb = tmp_path / "notebooks" / "09_demo.ipynb"
    nb.parent.mkdir()
    nb.write_text("{}")
    reproduce.run_notebooks("smoke", tmp_path / "results", notebooks=[nb], progress=False)
    written = (tmp_path / "results" / "09_demo" / "09_demo.ipynb").read_text()
    assert written == nf.dumps(nf.normalize(papermill_output())) and "/tmp/" not in written


def _param_cell(tag: str, source: str) -> dict:
    return {"cell_type": "code", "metadata": {"tags": [tag]}, "source": source, "outputs": [],
            "execution_count": None}


def test_papermills_injected_copy_of_the_defaults_is_dropped_and_other_values_kept():
    same = {"cells": [_param_cell("parameters", 'profile = "full"\n'),
                      _param_cell("injected-parameters", '# Parameters\nprofile = "full"\n')], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    assert [c["metadata"]["tags"] for c in nf.normalize(same)["cells"]] == [["parameters"]]
    other = {"cells": [_param_cell("parameters", 'profile = "full"\n'),
                       _param_cell("injected-parameters", '# Parameters\nprofile = "smoke"\n')], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    assert len(nf.normalize(other)["cells"]) == 2
