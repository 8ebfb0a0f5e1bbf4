"""Errors that are the user's to fix, and how their messages name a row.

A UserError carries a one-line message naming the file, column or value at
fault; the CLI prints it without a traceback and exits with code 2.

Rows: the CLI names a row of a CSV by its line in the file (header = line 1). A
``RowError`` names a row by its 0-based position in the table a library function
was given ("row 3"), and keeps that position so that the CLI, which knows each
row's line, can rename it (``renamed``). A pandas table the CLI read from a file
carries its lines as its index, named "line", and ``row_name`` names its rows
by them.

Options: an ``OptionError`` names a bad option by the keyword a library call takes, and the CLI renames it by
its flag, in the same way.
"""


class UserError(Exception):
    """Bad input: a missing column, a corrupt file, an unknown name."""


class DataError(UserError):
    """A dataset file is missing, unreadable or fails its checksum."""


class RowError(UserError):
    """Bad input in one row: ``template`` holds the text ``{row}`` (replaced, not formatted, so values with
    braces are safe), ``row`` is the 0-based position in the table given."""

    def __init__(self, template: str, row: int):
        self.template, self.row = template, int(row)
        super().__init__(self.renamed(f"row {self.row}"))

    def renamed(self, name: str) -> str:
        """The message with the row called ``name`` (e.g. "line 7")."""
        return self.template.replace("{row}", name, 1)


class OptionError(UserError):
    """A bad option, in the library's own terms: ``template`` names each option as ``{name}`` (the keyword a
    library call takes, e.g. ``{drop_highest}``), replaced rather than formatted so values with braces are safe.
    ``str()`` names them as keywords ("drop_highest must be >= 0"); the CLI, which knows each keyword's flag,
    names them by their flags (``flagged``: "--drop-highest must be >= 0")."""

    def __init__(self, template: str, *options: str):
        if not options:
            raise TypeError("OptionError needs the option(s) its template names")
        self.template, self.options = template, tuple(options)
        super().__init__(self.flagged(lambda name: name))

    def prefixed(self, text: str) -> "OptionError":
        """The same error with ``text`` (a file, a group) before its message."""
        return OptionError(text + self.template, *self.options)

    def flagged(self, flag_of) -> str:
        """The message with each option called ``flag_of(name)``."""
        text = self.template
        for name in self.options:
            text = text.replace("{" + name + "}", flag_of(name))
        return text


def row_name(index, i: int) -> str:
    """How a message names the row at position ``i`` of a table with row labels ``index`` (a pandas
    Index): "line L" when the labels are a CSV file's lines (an index named "line", as the CLI reads
    files), else "row LABEL"."""
    label = index[i]
    label = label.item() if hasattr(label, "item") else label
    return f"line {label}" if getattr(index, "name", None) == "line" else f"row {label!r}"


def shown(value, limit: int = 40) -> str:
    """A value read from a file, as a message or a printed line may show it: its repr (control characters such
    as ESC escaped, so file contents cannot clear a screen or forge a line), cut to ``limit`` characters."""
    text = value if isinstance(value, str) else str(value)
    cut = text[:limit] + ("..." if len(text) > limit else "")
    return repr(cut)


def printable(text, limit: int | None = None) -> str:
    """A string read from a file for printing inside a line (a fit's source, a run id): control characters
    escaped as in a repr, nothing else changed; cut to ``limit`` characters when given."""
    text = str(text)
    if limit is not None and len(text) > limit:
        text = text[:limit] + "..."
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
