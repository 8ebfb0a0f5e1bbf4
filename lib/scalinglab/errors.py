"""Errors that are the user's to fix.

A UserError carries a one-line message naming the file, column or value at
fault; the CLI prints it without a traceback and exits with code 2.
"""


class UserError(Exception):
    """Bad input: a missing column, a corrupt file, an unknown name."""


class DataError(UserError):
    """A dataset file is missing, unreadable or fails its checksum."""
