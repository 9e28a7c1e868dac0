"""The check run each daemon job opened, so the run is completed whatever ends the job.

Revision ID: 0006
Revises: 0005
Create Date: 2025-01-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # batch mode: SQLite cannot ALTER TABLE ADD COLUMN with every constraint; alembic copies the table there.
    with op.batch_alter_table("jobs") as batch:
        batch.add_column(sa.Column("check_run_id", sa.BigInteger(), nullable=True))
        batch.add_column(sa.Column("check_run_state", sa.String(16), nullable=True))
    op.create_index("ix_jobs_check_run_state", "jobs", ["check_run_state"])


def downgrade() -> None:
    op.drop_index("ix_jobs_check_run_state", table_name="jobs")
    with op.batch_alter_table("jobs") as batch:
        batch.drop_column("check_run_state")
        batch.drop_column("check_run_id")
