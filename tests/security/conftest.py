"""The Action's test workspace (a git checkout, a fake GitHub) for the security corpus."""

from ci.conftest import fake, workspace

__all__ = ["fake", "workspace"]
