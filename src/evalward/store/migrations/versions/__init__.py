"""Alembic revisions, oldest first: 0001 core tables, 0002 lookup indexes and the daemon's jobs table."""
