"""One CLI grammar: every flag has help, choices mirror the library, a broken subcommand is an error."""

import argparse

import pytest
from scalinglab import cli


def _subparsers(parser):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action.choices
    return {}


def test_every_flag_of_every_subcommand_has_help():
    missing = [f"{name} {'/'.join(a.option_strings) or a.dest}"
               for name, sub in _subparsers(cli.build_parser()).items()
               for a in sub._actions if not isinstance(a, argparse._HelpAction) and not a.help]
    assert not missing, f"flags without help: {missing}"


def test_one_flag_name_means_one_role():
    subs = _subparsers(cli.build_parser())
    flags = {name: {s for a in sub._actions for s in a.option_strings} for name, sub in subs.items()}
    assert "--c-col" not in flags["isoflop"] and "--budget-col" in flags["isoflop"]
    assert {"--d-col", "--c-col"} <= flags["envelope"] and not {"--tokens-col", "--flops-col"} & flags["envelope"]
    assert {"--count-col", "--group-by", "--dataset"} <= flags["trend"]
    assert not {"--n-col", "--group-col"} & flags["trend"]


def test_method_choices_mirror_the_library():
    from scalinglab.cli import envelope as cli_envelope
    from scalinglab.cli import isoflop as cli_isoflop
    from scalinglab.cli import trend as cli_trend
    from scalinglab.fitting.frontier import envelope, isoflop
    from scalinglab.inverse_scaling import trend

    assert cli_isoflop.METHODS == isoflop.METHODS and cli_envelope.METHODS == envelope.METHODS
    assert cli_trend.DISPERSIONS == trend.DISPERSIONS and cli_trend.ADJUSTMENTS == (*trend.ADJUSTMENTS, "none")


def test_a_subcommand_that_fails_to_import_is_an_error(monkeypatch):
    monkeypatch.setattr(cli, "COMMAND_MODULES", (*cli.COMMAND_MODULES, "no_such_command"))
    with pytest.raises(ModuleNotFoundError):
        cli.build_parser()


def _flag_table():
    """docs/cli.md's flag table: {flag: (default cell, commands)}."""
    import re
    from pathlib import Path

    text = Path(__file__).resolve().parents[1].joinpath("docs", "cli.md").read_text()
    start = text.index("| flag | means | default | in |")
    table = {}
    for line in text[start:].splitlines()[2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        for flag in re.findall(r"`(--[a-z-]+)", cells[0]):
            table[flag] = (cells[2], {c.strip() for c in cells[3].split(",")})
    return table


def _flags_by_command():
    out = {}
    for name, sub in _subparsers(cli.build_parser()).items():
        for a in sub._actions:
            for s in a.option_strings:
                if s != "--help" and s != "-h":
                    out.setdefault(s, {})[name] = a
    return out


def test_every_shared_flag_is_in_the_documented_grammar_with_its_commands():
    table, flags = _flag_table(), _flags_by_command()
    shared = {f for f, cmds in flags.items() if len(cmds) > 1}
    assert shared <= set(table), f"flags used by several commands but not in docs/cli.md's table: {shared - set(table)}"
    for flag, (_, commands) in table.items():
        actual = set(flags.get(flag, {}))
        assert commands == actual, f"{flag}: docs/cli.md lists {sorted(commands)}, the parser has it in {sorted(actual)}"


def test_one_default_per_flag_meaning():
    # A flag whose choices are the same everywhere has one default; --bootstrap has the two the table states:
    # 0 where an interval is optional, 1000 where it is the answer. A required flag has no default.
    from scalinglab.cli import flags as grammar

    table, flags = _flag_table(), _flags_by_command()
    for flag, actions in flags.items():
        if flag not in table or len(actions) < 2:
            continue
        by_choices = {}
        for name, a in actions.items():
            if not a.required:
                by_choices.setdefault(tuple(sorted(a.choices or ())), set()).add(repr(a.default))
        for choices, defaults in by_choices.items():
            allowed = 2 if flag == "--bootstrap" else 1
            assert len(defaults) <= allowed, f"{flag} {choices or ''}: defaults {defaults} differ between commands"
    optional = {n for n, a in flags["--bootstrap"].items() if a.default == grammar.BOOTSTRAP_ON_REQUEST}
    assert optional == {"fit", "compare-laws", "chain", "fit-curve"}
    assert {a.default for a in flags["--level"].values()} == {grammar.LEVEL}


def test_compare_design_and_predict_read_datasets_and_select_rows():
    flags = _flags_by_command()
    for flag in ("--dataset", "--where"):
        assert {"compare", "design", "predict"} <= set(flags[flag]), flag
    assert "--group-by" not in flags or "compare-laws" not in flags["--group-by"]
    assert "--leave-out-by" in {s for a in _subparsers(cli.build_parser())["compare-laws"]._actions
                                for s in a.option_strings}


def test_every_cli_function_is_short():
    # The CLI parses flags, calls one library function and prints: a command's function longer than about 40
    # lines is doing the library's work.
    import ast
    from pathlib import Path

    long = []
    for path in sorted(Path(cli.__file__).parent.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef) and node.end_lineno - node.lineno + 1 > 40:
                long.append(f"{path.name}:{node.name} ({node.end_lineno - node.lineno + 1} lines)")
    assert not long, f"CLI functions over 40 lines: {long}"


# The flags whose meaning is the same in every command that has them: declared only through cli/flags.py, so
# a command cannot give one its own default or wording. (Column, --method, --at, --law, --holdout, --compute and
# --targets name a different thing per command and keep their own declarations.)
GRAMMAR_FLAGS = ("--dataset", "--bootstrap", "--bootstrap-by", "--seed", "--level", "--json", "--plot", "--save",
                 "--group-by", "--db", "--where", "--delta")


def _declared_outside_flags(source: str, name: str) -> list[str]:
    import ast

    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "add_argument":
            out += [f"{name}:{node.lineno} {a.value}" for a in node.args
                    if isinstance(a, ast.Constant) and a.value in GRAMMAR_FLAGS]
    return out


def test_the_shared_flags_are_declared_only_in_the_grammar():
    from pathlib import Path

    flags = _flags_by_command()
    assert all(len(flags.get(f, {})) >= 2 for f in GRAMMAR_FLAGS), "a grammar flag used by one command only"
    found = [hit for path in sorted(Path(cli.__file__).parent.glob("*.py")) if path.name != "flags.py"
             for hit in _declared_outside_flags(path.read_text(), path.name)]
    assert found == [], f"shared flags declared by hand: {found}"


def test_the_grammar_check_catches_a_hand_declared_flag():
    src = 'def register(sub):\n    p = sub.add_parser("x")\n    p.add_argument("--seed", type=int, default=1)\n'
    assert _declared_outside_flags(src, "x.py") == ["x.py:3 --seed"]


def test_the_column_flags_of_one_role_come_from_the_grammar():
    # A role's column flag (--n-col parameters N, --d-col tokens, --c-col compute, --loss-col, --x-col, --y-col, ...)
    # means one role in every command, so it is declared through flags.add_columns, whose help starts with the
    # role's meaning. chain's --x-col, --y-col (two datasets' losses) and --loss-col (a target's actual losses)
    # name other things, and are its own.
    import ast
    from pathlib import Path

    from scalinglab.cli.flags import COLUMN_HELP

    role_flags = {flag: meaning for flag, meaning in COLUMN_HELP.values()}
    by_hand = []
    for path in sorted(Path(cli.__file__).parent.glob("*.py")):
        if path.name in ("flags.py", "chain.py"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "add_argument":
                by_hand += [f"{path.name}:{node.lineno} {a.value}" for a in node.args
                            if isinstance(a, ast.Constant) and a.value in role_flags]
    assert by_hand == []
    seen = set()
    for name, sub in _subparsers(cli.build_parser()).items():
        if name in ("chain", "translate"):
            continue
        for a in sub._actions:
            flag = a.option_strings[0] if a.option_strings else None
            if flag in role_flags:
                assert a.help.startswith(role_flags[flag]), (name, flag, a.help)
                seen.add((name, flag))
    assert {("envelope", "--d-col"), ("envelope", "--c-col"), ("scoreboard", "--c-col"), ("trend", "--x-col"),
            ("fit", "--n-col"), ("isoflop", "--loss-col")} <= seen
