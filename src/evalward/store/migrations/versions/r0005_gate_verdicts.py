"""The verdicts that gated a run, so the dashboard shows what the pull request got.

Revision ID: 0005
Revises: 0004
Create Date: 2025-01-05
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
_UTC = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "gate_verdicts",
        sa.Column("id", _ID, autoincrement=True, nullable=False),
        sa.Column("run_id", sa.String(), nullable=False),
        sa.Column("baseline_run_id", sa.String(), nullable=True),
        sa.Column("outcome", sa.String(16), nullable=False),
        sa.Column("policy_digest", sa.String(64), nullable=True),
        sa.Column("source", sa.String(32), nullable=False),
        sa.Column("created_at", _UTC, nullable=False),
        sa.Column("verdict_json", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(["run_id"], ["runs.run_id"], name="fk_gate_verdicts_run_id_runs", ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name="pk_gate_verdicts"),
    )
    op.create_index("ix_gate_verdicts_run_id_created_at", "gate_verdicts", ["run_id", "created_at"])


def downgrade() -> None:
    op.drop_index("ix_gate_verdicts_run_id_created_at", table_name="gate_verdicts")
    op.drop_table("gate_verdicts")
