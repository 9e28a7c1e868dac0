"""Alembic migrations of the history database (run programmatically by `evalward.store.migrate`)."""
