"""The judge cache: LLM-judge replies by sha256 of (model, prompt messages, parameters).

Revision ID: 0003
Revises: 0002
Create Date: 2025-01-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

_UTC = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "judge_cache",
        sa.Column("key", sa.String(64), nullable=False),
        sa.Column("model", sa.String(), nullable=False),
        sa.Column("reply", sa.Text(), nullable=False),
        sa.Column("input_tokens", sa.Integer(), nullable=True),
        sa.Column("output_tokens", sa.Integer(), nullable=True),
        sa.Column("created_at", _UTC, nullable=False),
        sa.PrimaryKeyConstraint("key", name="pk_judge_cache"),
    )


def downgrade() -> None:
    op.drop_table("judge_cache")
