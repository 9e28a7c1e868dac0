"""`evalward db`: create or upgrade the history database schema, and show its revision."""

from __future__ import annotations

import click

from evalward._cli.click_options import db_option
from evalward.redact import mask_url
from evalward.store import HEAD_REVISION, current_revision, resolve_db_url, upgrade_database


@click.group("db")
def db_group() -> None:
    """Manage the history database (migrations run automatically on first use too)."""


@db_group.command("upgrade")
@db_option
def upgrade_command(db_url: str | None) -> None:
    """Migrate the database to the newest schema revision."""

    url = resolve_db_url(db_url)
    upgrade_database(url)

    click.echo(f"database at head revision: {mask_url(url)}")


@db_group.command("current")
@db_option
def current_command(db_url: str | None) -> None:
    """Print the database's schema revision (empty for a new database)."""

    revision = current_revision(resolve_db_url(db_url))
    click.echo(f"{revision or '(none)'} (head: {HEAD_REVISION})")
