"""Small helpers the commands share for printing and for ending the process."""

from __future__ import annotations

import sys
from collections.abc import Iterable

import click


def stderr_is_terminal() -> bool:
    return sys.stderr.isatty()


def echo_warnings(warnings: Iterable[str]) -> None:
    """Print `warning: …` lines to stderr. Warnings quote file names and ids from outside: each stays on one
    line (control characters escaped) and cannot start a workflow command in a CI log."""
    from evalward.errors import printable  # start-up: `evalward --help` imports this module
    from evalward.report.escape import workflow_command_safe  # start-up: `evalward --help` imports this module

    for warning in warnings:
        click.echo(workflow_command_safe(f"warning: {printable(warning)}"), err=True)


class _ProcessEnd:
    """Whether the command that ran has closed every resource it opened (`mark_resources_closed`)."""

    resources_closed = False


def mark_resources_closed() -> None:
    """Say that the command has closed everything it opened whose closing matters (the history database's
    connections above all): `main` may then end the process without the interpreter's final garbage
    collections."""
    _ProcessEnd.resources_closed = True


def resources_closed(reset: bool = False) -> bool:
    """Whether `mark_resources_closed` was called (since the last `reset`)."""
    closed = _ProcessEnd.resources_closed
    if reset:
        _ProcessEnd.resources_closed = False
    return closed
