"""evalward: regression gating for AI agents in CI."""

__version__ = "0.1.0"
