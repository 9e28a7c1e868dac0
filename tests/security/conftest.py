"""Fixtures of the security corpus: the Action's test workspace (a git checkout, a fake GitHub), and the
running daemon with its fake GitHub for the webhook and API tests."""

from tests.server.conftest import daemon

from ci.conftest import fake, workspace

__all__ = ["daemon", "fake", "workspace"]
