"""Fixtures of the security corpus: the Action's test workspace (a git checkout, a fake GitHub), and the
running daemon with its fake GitHub and the PostgreSQL schemas for the webhook and API tests."""

from tests.server.conftest import daemon, pg_database, pg_url

from ci.conftest import fake, workspace

__all__ = ["daemon", "fake", "pg_database", "pg_url", "workspace"]
