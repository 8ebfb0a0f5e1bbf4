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
    from scalinglab.fitting import envelope, isoflop
    from scalinglab.inverse_scaling import trend

    assert cli_isoflop.METHODS == isoflop.METHODS and cli_envelope.METHODS == envelope.METHODS
    assert cli_trend.DISPERSIONS == trend.DISPERSIONS and cli_trend.ADJUSTMENTS == (*trend.ADJUSTMENTS, "none")


def test_a_subcommand_that_fails_to_import_is_an_error(monkeypatch):
    monkeypatch.setattr(cli, "COMMAND_MODULES", (*cli.COMMAND_MODULES, "no_such_command"))
    with pytest.raises(ModuleNotFoundError):
        cli.build_parser()
