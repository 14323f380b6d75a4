"""What every subcommand is: a :class:`Command`, parsed by a :class:`Parser`."""

from __future__ import annotations

import argparse


class UsageError(Exception):
    """A mistake in the command line or its input files: one line, exit status 2."""


class Parser(argparse.ArgumentParser):
    """argparse, with usage mistakes raised as :class:`UsageError` (one line, exit status 2)."""

    def error(self, message):
        raise UsageError(f"{message} (see `{self.prog} --help`)")


class Command:
    """One subcommand: the arguments it takes and what it does with them.

    A subclass lives in its own module of :mod:`clkit.cli` with a row in
    :data:`clkit.cli.COMMANDS`.  ``run`` returns the exit status (None for
    0); bad input raises :class:`UsageError`, :class:`clkit.ClkitError` or
    ``OSError``, which ``clkit`` reports as one line with exit status 2.
    """

    def arguments(self, parser: argparse.ArgumentParser) -> None:
        """Add this command's arguments to ``parser``."""

    def run(self, args: argparse.Namespace) -> int | None:
        raise NotImplementedError
