"""The pull request of each daemon job and when GitHub last changed it, so a late delivery of an older push
supersedes nothing (the newest push wins, whatever order its deliveries arrive in: `job_supersede.py`).

Both columns stay NULL on the rows already there: a row without a time counts as "time unknown", for which the
queue keeps its old rule (the newest delivery wins), so no backfill is needed. The index finds one PR's jobs
without reading the repository's other rows.

Revision ID: 0007
Revises: 0006
Create Date: 2025-01-07
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # batch mode: SQLite cannot ALTER TABLE ADD COLUMN with every constraint; alembic copies the table there.
    with op.batch_alter_table("jobs") as batch:
        batch.add_column(sa.Column("pr_number", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("pr_updated_at", sa.DateTime(timezone=True), nullable=True))
    op.create_index("ix_jobs_repo_pr_number", "jobs", ["repo", "pr_number"])


def downgrade() -> None:
    op.drop_index("ix_jobs_repo_pr_number", table_name="jobs")
    with op.batch_alter_table("jobs") as batch:
        batch.drop_column("pr_updated_at")
        batch.drop_column("pr_number")
