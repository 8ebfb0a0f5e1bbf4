"""The package version, in a module of its own so that modules the front door reaches can name it without
importing the package itself (saved fits record it)."""

__version__ = "0.1.0"
