"""The one grammar of the ``scalinglab`` command: every shared flag's meaning and default, in one place.

Commands add their shared flags through these functions (argparse's parent parsers, as functions so that a
command can put a flag in its own mutually exclusive group), so a flag name means one thing and has one
default wherever it appears. docs/cli.md's flag table is this grammar written down, and
``tests/test_cli_grammar.py`` holds every command's parser to that table. Only argparse is imported here: the
CLI's start stays fast.
"""

from __future__ import annotations

# Resamples behind an interval. A command whose answer is an interval (compare, design, isoflop, envelope,
# ladder-report) resamples by default; one whose answer is a fit (fit, compare-laws) only when asked.
BOOTSTRAP_FOR_INTERVALS = 1000
BOOTSTRAP_ON_REQUEST = 0
LEVEL = 0.95

# A library keyword whose flag is not its name with dashes (OptionError messages are renamed by these).
FLAG_OF_KEYWORD = {"n_boot": "--bootstrap", "boot": "--bootstrap"}


def said(exc: Exception) -> str:
    """An error's message as the CLI says it: an ``OptionError``'s options named by their flags."""
    from scalinglab.errors import OptionError

    return exc.flagged(flag_of) if isinstance(exc, OptionError) else str(exc)


def flag_of(keyword: str) -> str:
    """The flag a library keyword is given by: ``drop_highest`` → ``--drop-highest``, ``n_boot`` → ``--bootstrap``."""
    return FLAG_OF_KEYWORD.get(keyword, "--" + keyword.replace("_", "-"))

COLUMN_HELP = {
    "n": ("--n-col", "parameters N"),
    "d": ("--d-col", "training tokens D"),
    "c": ("--c-col", "compute C in FLOP at which the row's loss was measured (a run's training compute; "
                     "D = C/(6N))"),
    "loss": ("--loss-col", "the loss"),
    "u": ("--u-col", "unique tokens U (law data_constrained)"),
    "x": ("--x-col", "the one variable x of a one-variable law or trend"),
    "y": ("--y-col", "the downstream metric (an error rate or accuracy)"),
    "lr": ("--lr-col", "the peak learning rate"),
    "batch": ("--batch-col", "the batch size"),
}


def add_source(p, what: str = "one row per run", dataset: bool = True) -> None:
    """The runs: a CSV file, or ``--dataset NAME`` (a registered dataset), exactly one of them."""
    if not dataset:
        p.add_argument("csv", help=f"a CSV file with {what}")
        return
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("csv", nargs="?", help=f"a CSV file with {what}")
    src.add_argument("--dataset", metavar="NAME", help="a registered dataset (`scalinglab data list`)")


def add_columns(p, *roles: str, default: str = "the dataset's role, else the usual name", detail=None,
                defaults=None, alternatives: bool = True) -> None:
    """``--n-col`` ... for each role: the column holding it (default None: the dataset's role, else the usual
    name). D and C are alternatives (a mutually exclusive pair) unless ``alternatives`` is False (a command that
    reads both, e.g. the tokens and the compute at a checkpoint). ``detail``: role -> a command's extra words;
    ``defaults``: role -> what a command takes without the flag, where not ``default``."""
    detail, defaults = detail or {}, defaults or {}
    exclusive = p.add_mutually_exclusive_group() if alternatives and {"d", "c"} <= set(roles) else None
    for role in roles:
        flag, meaning = COLUMN_HELP[role]
        target = exclusive if exclusive is not None and role in ("d", "c") else p
        extra = f"; {detail[role]}" if role in detail else ""
        target.add_argument(flag, metavar="COL", default=None,
                            help=f"{meaning}{extra} (default: {defaults.get(role, default)})")


def add_where(p) -> None:
    p.add_argument("--where", action="append", default=None, metavar="COND",
                   help="use only rows matching COND, written COL OP VALUE with OP one of == != < <= > >= ~ "
                        "(~: contains), e.g. 'dataset==rpj'; repeat to require several")


def add_resampling(p, default: int, what: str, by: bool = False) -> None:
    """``--bootstrap K`` (the resamples behind the intervals; ``what``: what this command resamples),
    ``--seed``, ``--level`` and, with ``by``, ``--bootstrap-by COL``."""
    add_bootstrap(p, default, f"resamples behind the intervals: {what} (default {default})")
    if by:
        p.add_argument("--bootstrap-by", metavar="COL",
                       help="resample whole groups of rows named by COL (e.g. a model id) instead of rows: when "
                            "one model gives several rows (checkpoints, cooldowns, eval sets) the model is the "
                            "independent unit and row resampling makes the intervals too narrow")
    add_seed(p)
    add_level(p)


def add_bootstrap(p, default: int, help: str) -> None:
    """``--bootstrap K`` alone, for a command whose resamples are of its own kind (``help`` says which)."""
    p.add_argument("--bootstrap", type=int, default=default, metavar="K", help=help)


def add_seed(p) -> None:
    p.add_argument("--seed", type=int, default=0, help="the resampling's seed (default 0)")


def add_level(p, detail: str = "") -> None:
    """``--level L``: every interval's level, one default everywhere; ``detail``: a command's extra words."""
    p.add_argument("--level", type=float, default=LEVEL, metavar="L",
                   help=f"interval level (default {LEVEL:g}{'; ' + detail if detail else ''})")


def add_dataset(p, help: str = "a registered dataset (`scalinglab data list`)", repeatable: bool = False) -> None:
    """``--dataset NAME``: a registered dataset instead of a file (``p`` may be a mutually exclusive group)."""
    if repeatable:
        p.add_argument("--dataset", action="append", metavar="NAME", help=help)
    else:
        p.add_argument("--dataset", metavar="NAME", help=help)


def add_group_by(p, help: str, metavar: str = "COL,...") -> None:
    """``--group-by``: fit or classify each group of rows separately (``help`` says by what)."""
    p.add_argument("--group-by", metavar=metavar, default=None, help=help)


def add_plot(p, help: str, metavar: str = "FILE") -> None:
    """``--plot FILE``: also draw the command's figure to FILE (an output: checked by ``cli.OUTPUT_FLAGS``)."""
    p.add_argument("--plot", metavar=metavar, help=help)


def add_save(p, help: str, metavar: str = "FILE") -> None:
    """``--save FILE``: also save the fit for a later command (an output, checked like ``--plot``)."""
    p.add_argument("--save", metavar=metavar, help=help)


def add_db(p, help: str) -> None:
    """``--db FILE``: a sweep's SQLite results database."""
    p.add_argument("--db", required=True, help=help)


def add_delta(p) -> None:
    p.add_argument("--delta", type=float, default=None, metavar="DELTA",
                   help="the Huber threshold on log residuals (default 1e-3, Hoffmann et al.'s); smaller is closer "
                        "to least absolute deviations, larger to least squares")


def add_json(p, what: str = "print one JSON object") -> None:
    p.add_argument("--json", action="store_true", help=what)
