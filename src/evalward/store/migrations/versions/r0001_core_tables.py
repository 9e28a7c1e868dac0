"""Core tables: runs, run_plan, case_results, metric_scores.

Revision ID: 0001
Revises:
Create Date: 2025-01-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

# The types as they were at this revision (not imported from schema.py, which moves on).
_UTC = sa.DateTime(timezone=True)
_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "runs",
        sa.Column("run_id", sa.String(), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("repository", sa.String(), nullable=True),
        sa.Column("commit_sha", sa.String(64), nullable=True),
        sa.Column("branch", sa.String(), nullable=True),
        sa.Column("base_branch", sa.String(), nullable=True),
        sa.Column("base_sha", sa.String(64), nullable=True),
        sa.Column("pr_number", sa.Integer(), nullable=True),
        sa.Column("merge_base", sa.String(64), nullable=True),
        sa.Column("shard_index", sa.Integer(), nullable=True),
        sa.Column("shard_count", sa.Integer(), nullable=True),
        sa.Column("group_id", sa.String(), nullable=True),
        sa.Column("fingerprint", sa.String(64), nullable=False),
        sa.Column("comparability_key", sa.String(64), nullable=False),
        sa.Column("evalward_version", sa.String(64), nullable=False),
        sa.Column("agent_kind", sa.String(64), nullable=True),
        sa.Column("agent_target", sa.Text(), nullable=True),
        sa.Column("agent_config_hash", sa.String(64), nullable=True),
        sa.Column("passed", sa.Boolean(), nullable=True),
        sa.Column("repetitions", sa.Integer(), nullable=False),
        sa.Column("planned_count", sa.Integer(), nullable=False),
        sa.Column("started_at", _UTC, nullable=True),
        sa.Column("finished_at", _UTC, nullable=True),
        sa.Column("created_at", _UTC, nullable=False),
        sa.Column("run_json", sa.JSON(), nullable=False),
        sa.Column("case_order", sa.JSON(), nullable=True),
        sa.PrimaryKeyConstraint("run_id", name="pk_runs"),
    )
    op.create_table(
        "run_plan",
        sa.Column("run_id", sa.String(), nullable=False),
        sa.Column("eval_set_id", sa.String(), nullable=False),
        sa.Column("case_id", sa.String(), nullable=False),
        sa.Column("repetition", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("run_id", "eval_set_id", "case_id", "repetition", name="pk_run_plan"),
        sa.ForeignKeyConstraint(["run_id"], ["runs.run_id"], name="fk_run_plan_run_id_runs", ondelete="CASCADE"),
    )
    op.create_table(
        "case_results",
        sa.Column("id", _ID, autoincrement=True, nullable=False),
        sa.Column("run_id", sa.String(), nullable=False),
        sa.Column("eval_set_id", sa.String(), nullable=False),
        sa.Column("case_id", sa.String(), nullable=False),
        sa.Column("repetition", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("content_hash", sa.String(64), nullable=False),
        sa.Column("must_pass", sa.Boolean(), nullable=False),
        sa.Column("latency_s", sa.Float(), nullable=True),
        sa.Column("input_tokens", sa.BigInteger(), nullable=True),
        sa.Column("output_tokens", sa.BigInteger(), nullable=True),
        sa.Column("cost_usd", sa.Float(), nullable=True),
        sa.Column("error_kind", sa.String(32), nullable=True),
        sa.Column("started_at", _UTC, nullable=True),
        sa.Column("finished_at", _UTC, nullable=True),
        sa.Column("recorded_at", _UTC, nullable=False),
        sa.Column("case_json", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_case_results"),
        sa.ForeignKeyConstraint(["run_id"], ["runs.run_id"], name="fk_case_results_run_id_runs", ondelete="CASCADE"),
        # Exactly one result per (run, case, repetition), whatever writers retry or resume.
        sa.UniqueConstraint(
            "run_id",
            "eval_set_id",
            "case_id",
            "repetition",
            name="uq_case_results_run_id_eval_set_id_case_id_repetition",
        ),
    )
    op.create_table(
        "metric_scores",
        sa.Column("run_id", sa.String(), nullable=False),
        sa.Column("eval_set_id", sa.String(), nullable=False),
        sa.Column("case_id", sa.String(), nullable=False),
        sa.Column("repetition", sa.Integer(), nullable=False),
        sa.Column("metric", sa.String(), nullable=False),
        sa.Column("score", sa.Float(), nullable=True),
        sa.Column("status", sa.String(16), nullable=False),
        sa.PrimaryKeyConstraint("run_id", "eval_set_id", "case_id", "repetition", "metric", name="pk_metric_scores"),
        sa.ForeignKeyConstraint(
            ["run_id", "eval_set_id", "case_id", "repetition"],
            ["case_results.run_id", "case_results.eval_set_id", "case_results.case_id", "case_results.repetition"],
            name="fk_metric_scores_run_id_case_results",
            ondelete="CASCADE",
        ),
    )


def downgrade() -> None:
    op.drop_table("metric_scores")
    op.drop_table("case_results")
    op.drop_table("run_plan")
    op.drop_table("runs")
