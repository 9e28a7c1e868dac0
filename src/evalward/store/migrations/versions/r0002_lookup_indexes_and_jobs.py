"""Indexes for baseline, resume and history lookups; the daemon's jobs table.

Revision ID: 0002
Revises: 0001
Create Date: 2025-01-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

_UTC = sa.DateTime(timezone=True)
_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    # Baseline selection: runs at a commit (merge-base, ancestors) with a status and comparability key.
    op.create_index("ix_runs_commit_sha_status", "runs", ["commit_sha", "status"])
    op.create_index("ix_runs_comparability_key_commit_sha", "runs", ["comparability_key", "commit_sha"])
    # Resume offers: unfinished runs by fingerprint and commit.
    op.create_index("ix_runs_fingerprint_commit_sha", "runs", ["fingerprint", "commit_sha"])
    # `evalward runs --branch`, history and flip rates: newest runs on a branch.
    op.create_index("ix_runs_branch_started_at", "runs", ["branch", "started_at"])
    # `evalward merge --group`.
    op.create_index("ix_runs_group_id", "runs", ["group_id"])
    # `evalward history --case`.
    op.create_index("ix_case_results_case_id_run_id", "case_results", ["case_id", "run_id"])
    op.create_index("ix_metric_scores_case_id_metric", "metric_scores", ["case_id", "metric"])
    # Flip rates and run counts read only these columns: an index-only scan skips the case JSON.
    op.create_index(
        "ix_case_results_outcome", "case_results", ["run_id", "eval_set_id", "case_id", "status", "content_hash"]
    )

    op.create_table(
        "jobs",
        sa.Column("id", _ID, autoincrement=True, nullable=False),
        sa.Column("kind", sa.String(64), nullable=False),
        sa.Column("payload", sa.JSON(), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("lease_until", _UTC, nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("repo", sa.String(), nullable=True),
        sa.Column("head_sha", sa.String(64), nullable=True),
        sa.Column("dedupe_key", sa.String(), nullable=False),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("created_at", _UTC, nullable=False),
        sa.Column("updated_at", _UTC, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_jobs"),
        sa.UniqueConstraint("dedupe_key", name="uq_jobs_dedupe_key"),
    )
    op.create_index("ix_jobs_status_lease_until", "jobs", ["status", "lease_until"])


def downgrade() -> None:
    op.drop_index("ix_jobs_status_lease_until", table_name="jobs")
    op.drop_table("jobs")
    op.drop_index("ix_case_results_outcome", table_name="case_results")
    op.drop_index("ix_metric_scores_case_id_metric", table_name="metric_scores")
    op.drop_index("ix_case_results_case_id_run_id", table_name="case_results")
    op.drop_index("ix_runs_group_id", table_name="runs")
    op.drop_index("ix_runs_branch_started_at", table_name="runs")
    op.drop_index("ix_runs_fingerprint_commit_sha", table_name="runs")
    op.drop_index("ix_runs_comparability_key_commit_sha", table_name="runs")
    op.drop_index("ix_runs_commit_sha_status", table_name="runs")
