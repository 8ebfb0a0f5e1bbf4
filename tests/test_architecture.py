"""The package's layering, read from the source with ast (nothing is imported).

Rules (DEVELOPING.md, "Layout"):
- the engine (fitting, accounting, data) never imports training or torch, nor a paper module;
- registry loaders (the TOMLs' ``loader = "module:function"``) never reach training or torch, so loading
  a dataset cannot start torch;
- nothing in the library imports the CLI;
- no import cycles between modules, counting imports inside functions too;
- no import cycles between packages (the top-level parts: data, fitting, training, sweeps, harness, ...);
- the reader of sweep results (``scalinglab.sweeps``) never reaches torch, the model or the training loop.
Imports inside functions count everywhere: a lazy import is still a dependency.
"""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

import pytest

LIB = Path(__file__).resolve().parents[1] / "lib"
PKG = LIB / "scalinglab"
ENGINE = ("scalinglab.fitting", "scalinglab.accounting", "scalinglab.data")
FORBIDDEN_FOR_ENGINE = ("scalinglab.training", "scalinglab.papers", "scalinglab.cli", "torch")
FORBIDDEN_FOR_SWEEPS = ("torch", "scalinglab.training.model", "scalinglab.training.loop")


def module_name(path: Path) -> str:
    parts = path.relative_to(LIB).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in PKG.rglob("*.py")}


def imports_of(source: str, name: str, known: set[str]) -> set[str]:
    """Every module ``source`` imports, anywhere in it: ``from a.b import c`` counts a.b.c when that is a
    module, else a.b; relative imports are resolved against ``name``."""
    out = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                pkg = name.split(".")[: -node.level] if not name.endswith("__init__") else name.split(".")
                base = ".".join(pkg + ([base] if base else []))
            for a in node.names:
                full = f"{base}.{a.name}"
                out.add(full if full in known else base)
    return out


def graph(mods: dict[str, Path] | None = None) -> dict[str, set[str]]:
    mods = mods or modules()
    known = set(mods)
    return {m: imports_of(p.read_text(), m, known) for m, p in mods.items()}


def under(module: str, prefixes) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


def reachable(g: dict[str, set[str]], start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        m = todo.pop()
        for dep in g.get(m, ()):
            # a package's import runs its __init__: "scalinglab.x.y" reaches "scalinglab.x" too
            for cand in {dep, *(".".join(dep.split(".")[:i]) for i in range(2, dep.count(".") + 1))}:
                if cand not in seen:
                    seen.add(cand)
                    todo.append(cand)
    return seen


def violations(g: dict[str, set[str]]) -> list[str]:
    out = []
    for mod, deps in g.items():
        if under(mod, ENGINE):
            out += [f"{mod} imports {d}" for d in deps if under(d, FORBIDDEN_FOR_ENGINE)]
        if not under(mod, ("scalinglab.cli",)) and mod != "scalinglab.__main__":
            out += [f"{mod} imports the CLI ({d})" for d in deps if under(d, ("scalinglab.cli",))]
    return out


def cycles(g: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in g.get(v, ()):
            if w not in g:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in g:
        if v not in index:
            visit(v)
    return out


def package_of(module: str) -> str | None:
    """The top-level part a module belongs to (``scalinglab.sweeps.store``: ``scalinglab.sweeps``); None for the
    root package and ``__main__``, which sit above every part (the front door re-exports them), and for
    modules outside the library."""
    parts = module.split(".")
    if parts[0] != "scalinglab" or len(parts) < 2 or parts[1] == "__main__":
        return None
    return ".".join(parts[:2])


def package_graph(g: dict[str, set[str]]) -> dict[str, set[str]]:
    """Imports between packages: part A imports part B when any module of A imports any module of B."""
    out: dict[str, set[str]] = {}
    for mod, deps in g.items():
        src = package_of(mod)
        if src is None:
            continue
        out.setdefault(src, set())
        out[src] |= {p for d in deps if (p := package_of(d)) not in (None, src)}
    return out


def loaders() -> dict[str, str]:
    out = {}
    for toml in (PKG / "data" / "registry").glob("*.toml"):
        for name, entry in tomllib.loads(toml.read_text()).items():
            if isinstance(entry, dict) and "loader" in entry:
                out[f"{toml.name}:{name}"] = entry["loader"].split(":")[0]
    return out


def test_the_layers_hold():
    assert violations(graph()) == []


def test_no_import_cycles():
    assert cycles(graph()) == []


def test_no_import_cycles_between_packages():
    g = package_graph(graph())
    assert {"scalinglab.training", "scalinglab.sweeps", "scalinglab.harness"} <= set(g)  # not vacuous
    assert cycles(g) == []


# The generic engine: what every law's fit goes through. Chinchilla's law and solver (fitting.chinchilla.approach3) plug into
# it through the registry of forms (fitting.laws.forms); the engine itself never reaches for them.
ENGINE_CORE = ("scalinglab.fitting.laws.base", "scalinglab.fitting.laws.table", "scalinglab.fitting.laws.compare",
               "scalinglab.fitting.workflow", "scalinglab.fitting.options", "scalinglab.fitting.results",
               "scalinglab.fitting.solvers", "scalinglab.fitting.form", "scalinglab.fitting.rows",
               "scalinglab.fitting.huber", "scalinglab.fitting.prediction.calibration", "scalinglab.fitting.columns",
               "scalinglab.fitting.conditions", "scalinglab.fitting.protocol", "scalinglab.fitting.expressions")


def engine_reaching_approach3(g: dict[str, set[str]]) -> list[str]:
    """Engine modules that import any module of Chinchilla's plug-in (``fitting.chinchilla``: its law, settings,
    solver): it reaches them only through the registry of forms and the solver table's names."""
    return sorted(m for m in ENGINE_CORE if any(under(r, ("scalinglab.fitting.chinchilla",)) for r in g.get(m, set())))


def test_the_engine_does_not_import_chinchillas_plug_in():
    assert engine_reaching_approach3(graph()) == []


def test_the_engine_checker_catches_an_import_of_approach3():
    mods = modules()
    g = graph(mods)
    g["scalinglab.fitting.workflow"] = g["scalinglab.fitting.workflow"] | imports_of(
        "def f():\n    from scalinglab.fitting.chinchilla.approach3 import CHINCHILLA", "scalinglab.fitting.workflow", set(mods))
    assert engine_reaching_approach3(g) == ["scalinglab.fitting.workflow"]


def test_the_sweep_reader_never_reaches_torch_or_the_training_loop():
    g = graph()
    readers = [m for m in g if under(m, ("scalinglab.sweeps",))]
    assert "scalinglab.sweeps.store" in readers
    bad = {m: sorted(r for r in reachable(g, m) if under(r, FORBIDDEN_FOR_SWEEPS)) for m in readers}
    assert {m: r for m, r in bad.items() if r} == {}


def test_registry_loaders_never_reach_training_or_torch():
    g = graph()
    found = loaders()
    assert found, "the registry names no loaders: the check would pass vacuously"
    bad = {}
    for entry, mod in found.items():
        assert mod in g, f"{entry}: loader module {mod} does not exist"
        reach = reachable(g, mod) | {mod}
        hits = sorted(m for m in reach if under(m, ("scalinglab.training", "torch")))
        if hits:
            bad[entry] = hits
    assert bad == {}


def test_every_module_says_what_it_is_for():
    missing = [m for m, p in modules().items() if not ast.get_docstring(ast.parse(p.read_text()))]
    assert missing == []


def test_long_modules_state_why():
    # "No module over about 500 lines without a reason stated at its top": the reason is a docstring line
    # starting "Long:" (checked so that a module grows past the budget only on purpose).
    long = [m for m, p in modules().items()
            if len(p.read_text().splitlines()) > 500 and "Long:" not in (ast.get_docstring(ast.parse(p.read_text())) or "")]
    assert long == []


# --- the checker itself: it must fail on the imports it exists to forbid ---------------------------------

@pytest.mark.parametrize("module, source, expected", [
    ("scalinglab.fitting.chinchilla.approach3", "import torch", "imports torch"),
    ("scalinglab.fitting.frontier.isoflop", "def f():\n    from scalinglab.training import sweep", "scalinglab.training"),
    ("scalinglab.data", "from scalinglab.papers import porian", "scalinglab.papers"),
    ("scalinglab.accounting.decoder", "from scalinglab.training.model import GPT", "scalinglab.training"),
    ("scalinglab.sweeps.report", "from scalinglab.cli import main", "imports the CLI"),
])
def test_the_checker_catches_a_forbidden_import(module, source, expected):
    mods = modules()
    g = graph(mods)
    g[module] = g[module] | imports_of(source, module, set(mods))
    assert any(expected in v for v in violations(g))


def test_the_checker_catches_a_cycle():
    g = graph()
    g["scalinglab.training.corpus"] = g["scalinglab.training.corpus"] | {"scalinglab.training.tokenizer"}
    assert ["scalinglab.training.corpus", "scalinglab.training.tokenizer"] in cycles(g)


def test_the_checker_catches_a_package_cycle_through_a_function_import():
    # harness <-> training, the cycle a notebook policy in training once made: harness.reproduce runs sweeps,
    # and a training module importing harness inside a function closes the loop.
    mods = modules()
    g = graph(mods)
    g["scalinglab.training.sweep.launch"] = g["scalinglab.training.sweep.launch"] | imports_of(
        "def f():\n    from scalinglab.harness.workbook import project_root", "scalinglab.training.sweep.launch", set(mods))
    assert ["scalinglab.harness", "scalinglab.training"] in cycles(package_graph(g))
    assert cycles(package_graph(graph(mods))) == []


def test_the_checker_catches_the_sweep_reader_reaching_the_loop():
    mods = modules()
    g = graph(mods)
    g["scalinglab.sweeps.analysis"] = g["scalinglab.sweeps.analysis"] | imports_of(
        "def f():\n    from scalinglab.training.sweep import launch", "scalinglab.sweeps.analysis", set(mods))
    reach = reachable(g, "scalinglab.sweeps")
    assert any(under(r, FORBIDDEN_FOR_SWEEPS) for r in reach)  # launch imports the loop inside a function


def test_developing_md_maps_every_module():
    """DEVELOPING.md's library map has a line for every module (packages' __init__ aside, unless they hold code)."""
    text = (LIB.parent / "DEVELOPING.md").read_text()
    mapped = {line.split("`")[1] for line in text.splitlines() if line.startswith("| `")}
    missing = []
    for name, path in modules().items():
        short = name.removeprefix("scalinglab.")
        is_package = path.name == "__init__.py"
        if name in ("scalinglab", "scalinglab.__main__") or (is_package and len(path.read_text().splitlines()) < 10):
            continue
        if short not in mapped:
            missing.append(short)
    assert missing == []


def test_every_to_dict_goes_through_to_jsonable():
    # A result's dict is printed as JSON and written into summary.json: NaN and numpy values must become JSON
    # (to_jsonable), which one helper does, so every to_dict() calls it.
    import ast

    bad = []
    for path in sorted(PKG.rglob("*.py")):
        src = path.read_text()
        for node in ast.walk(ast.parse(src)):
            if isinstance(node, ast.FunctionDef) and node.name == "to_dict" \
                    and "to_jsonable" not in ast.get_source_segment(src, node):
                bad.append(f"{path.relative_to(PKG)}:{node.lineno}")
    assert not bad, f"to_dict() not through to_jsonable: {bad}"


def test_result_classes_print_and_save():
    # The results people compare print (summary) and save (to_dict) the same way everywhere; these were the
    # last without either.
    from scalinglab.fitting.laws.compare import LawScore
    from scalinglab.fitting.studies.subsets import SubsetFits
    from scalinglab.inverse_scaling.aggregate import FamilyTests
    from scalinglab.papers.chinchilla_robustness import TwoModes
    from scalinglab.papers.pearce_song import PearceSongResult
    from scalinglab.sweeps import SweepReport

    for cls in (SubsetFits, PearceSongResult, TwoModes, FamilyTests, LawScore, SweepReport):
        assert callable(getattr(cls, "summary", None)) and callable(getattr(cls, "to_dict", None)), cls.__name__
