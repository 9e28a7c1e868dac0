"""The history database's tables, as they stand at the newest migration.

runs            one row per run (or shard): where it ran, its status, comparability and the run JSON
run_plan        the manifest a run declared: one row per (eval set, case, repetition) it must produce
case_results    one row per (run, eval set, case, repetition) that finished; UNIQUE, so a resumed or
                retried writer can never store a second copy; holds the case JSON for re-rendering
metric_scores   one row per (case result, metric): the queryable scores history and the gate read
jobs            work items of the `evalward serve` daemon (claimed with row locks)
webhook_deliveries  GUIDs of the webhook deliveries the daemon accepted, so start-up redelivery skips them
gate_verdicts   the verdicts that gated a run (by `evalward gate`, `evalward ci` or the daemon), with the policy
                digest, so the dashboard shows the verdict the pull request got, not a recomputation
judge_cache     LLM-judge replies by sha256 of (model, prompt messages, parameters), so a re-run makes no calls

The migrations in `migrations/versions/` create exactly these tables; a test compares the two.
Every timestamp is timezone-aware UTC (`UTCDateTime`), every JSON column holds `model_dump(mode="json")`.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Column,
    DateTime,
    Float,
    ForeignKey,
    ForeignKeyConstraint,
    Index,
    Integer,
    MetaData,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
    UniqueConstraint,
)
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeDecorator

NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class UTCDateTime(TypeDecorator[datetime]):
    """A timestamp stored in UTC and always read back timezone-aware.

    SQLite has no time zones: values are stored as naive UTC and get `tzinfo=UTC` back on read. Naive
    values handed in are taken to be UTC already.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        value = value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


# Integer primary keys autoincrement as ROWID on SQLite only when declared INTEGER, not BIGINT.
BigId = BigInteger().with_variant(Integer(), "sqlite")


# Core tables, not ORM classes: evalward reads and writes with SQL expressions only, and `sqlalchemy.orm` would
# add ~0.05 s to every run's start-up.
metadata = MetaData(naming_convention=NAMING_CONVENTION)


def _required(name: str, kind: Any, *args: Any, **kwargs: Any) -> Column[Any]:
    return Column(name, kind, *args, nullable=False, **kwargs)


def _optional(name: str, kind: Any, *args: Any, **kwargs: Any) -> Column[Any]:
    return Column(name, kind, *args, nullable=True, **kwargs)


runs_table = Table(
    # A run; `run_json` is the RunResult without its cases (those live in case_results).
    "runs",
    metadata,
    _required("run_id", String(), primary_key=True),
    _required("status", String(16)),
    _optional("repository", String()),
    _optional("commit_sha", String(64)),
    _optional("branch", String()),
    _optional("base_branch", String()),
    _optional("base_sha", String(64)),
    _optional("pr_number", Integer()),
    _optional("merge_base", String(64)),
    _optional("shard_index", Integer()),
    _optional("shard_count", Integer()),
    _optional("group_id", String()),
    _required("fingerprint", String(64)),
    _required("comparability_key", String(64)),
    _required("evalward_version", String(64)),
    _optional("agent_kind", String(64)),
    _optional("agent_target", Text()),
    _optional("agent_config_hash", String(64)),
    _optional("passed", Boolean()),
    _required("repetitions", Integer()),
    _required("planned_count", Integer()),
    _optional("started_at", UTCDateTime()),
    _optional("finished_at", UTCDateTime()),
    _required("created_at", UTCDateTime()),
    _required("run_json", JSON()),
    _optional("case_order", JSON()),
    Index(None, "commit_sha", "status"),
    Index(None, "branch", "started_at"),
    Index(None, "comparability_key", "commit_sha"),
    Index(None, "fingerprint", "commit_sha"),
    Index(None, "group_id"),
)

plan_table = Table(
    "run_plan",
    metadata,
    _required("run_id", String(), ForeignKey("runs.run_id", ondelete="CASCADE")),
    _required("eval_set_id", String()),
    _required("case_id", String()),
    _required("repetition", Integer()),
    PrimaryKeyConstraint("run_id", "eval_set_id", "case_id", "repetition"),
)

cases_table = Table(
    # One finished case × repetition. The unique constraint is what makes writes idempotent.
    "case_results",
    metadata,
    _required("id", BigId, primary_key=True, autoincrement=True),
    _required("run_id", String(), ForeignKey("runs.run_id", ondelete="CASCADE")),
    _required("eval_set_id", String()),
    _required("case_id", String()),
    _required("repetition", Integer()),
    _required("status", String(16)),
    _required("content_hash", String(64)),
    _required("must_pass", Boolean()),
    _optional("latency_s", Float()),
    _optional("input_tokens", BigInteger()),
    _optional("output_tokens", BigInteger()),
    _optional("cost_usd", Float()),
    _optional("error_kind", String(32)),
    _optional("started_at", UTCDateTime()),
    _optional("finished_at", UTCDateTime()),
    _required("recorded_at", UTCDateTime()),
    _required("case_json", JSON()),
    UniqueConstraint("run_id", "eval_set_id", "case_id", "repetition"),
    Index(None, "case_id", "run_id"),
    # Covers flip rates and run counts, so they never read the (large) case JSON rows.
    Index("ix_case_results_outcome", "run_id", "eval_set_id", "case_id", "status", "content_hash"),
)

scores_table = Table(
    # One metric's case-level score for one case result (None when not applicable or on error).
    "metric_scores",
    metadata,
    _required("run_id", String()),
    _required("eval_set_id", String()),
    _required("case_id", String()),
    _required("repetition", Integer()),
    _required("metric", String()),
    _optional("score", Float()),
    _required("status", String(16)),
    PrimaryKeyConstraint("run_id", "eval_set_id", "case_id", "repetition", "metric"),
    ForeignKeyConstraint(
        ["run_id", "eval_set_id", "case_id", "repetition"],
        ["case_results.run_id", "case_results.eval_set_id", "case_results.case_id", "case_results.repetition"],
        ondelete="CASCADE",
    ),
    Index(None, "case_id", "metric"),
)

JOB_OPEN_STATUSES: tuple[str, ...] = ("held", "queued", "running")
"""`jobs.status` of a job not finished yet (`job_queue`, `job_supersede`)."""
JOB_FINAL_STATUSES: tuple[str, ...] = ("done", "failed", "cancelled")
"""`jobs.status` of a finished job (`job_queue`, `job_check_runs`)."""

jobs_table = Table(
    # A daemon job. Workers claim with `SELECT … FOR UPDATE SKIP LOCKED` (PostgreSQL) and hold a lease.
    "jobs",
    metadata,
    _required("id", BigId, primary_key=True, autoincrement=True),
    _required("kind", String(64)),
    _required("payload", JSON()),
    _required("status", String(16)),
    _optional("lease_until", UTCDateTime()),
    _required("attempts", Integer()),
    _optional("repo", String()),
    _optional("head_sha", String(64)),
    _required("dedupe_key", String(), unique=True),
    _optional("last_error", Text()),
    _required("created_at", UTCDateTime()),
    _required("updated_at", UTCDateTime()),
    # The check run the job opened (`in_progress`) and whether it still has to be completed: NULL (none),
    # `opening` (being created: find it by external_id), `open`, `closed`. Migration 0006.
    _optional("check_run_id", BigInteger()),
    _optional("check_run_state", String(16)),
    # The pull request of a PR job and its `updated_at` in the delivery that made (or last matched) the job: a
    # late delivery of an older push supersedes nothing (`job_supersede.py`). NULL: not a PR job, or older rows.
    # Migration 0007.
    _optional("pr_number", Integer()),
    _optional("pr_updated_at", UTCDateTime()),
    Index(None, "status", "lease_until"),
    Index(None, "check_run_state"),
    Index(None, "repo", "pr_number"),
)

webhook_deliveries_table = Table(
    # A webhook delivery the daemon verified and acted on, by its `X-GitHub-Delivery` GUID (kept for days).
    "webhook_deliveries",
    metadata,
    _required("guid", String(), primary_key=True),
    _required("event", String(64)),
    _optional("action", String(64)),
    _required("outcome", String(32)),
    _required("received_at", UTCDateTime()),
    Index(None, "received_at"),
)

gate_verdicts_table = Table(
    # A verdict reached for a run (append-only: a re-gate adds a row; the newest is the one shown).
    "gate_verdicts",
    metadata,
    _required("id", BigId, primary_key=True, autoincrement=True),
    _required("run_id", String(), ForeignKey("runs.run_id", ondelete="CASCADE")),
    _optional("baseline_run_id", String()),
    _required("outcome", String(16)),
    _optional("policy_digest", String(64)),
    _required("source", String(32)),
    _required("created_at", UTCDateTime()),
    _required("verdict_json", JSON()),
    Index(None, "run_id", "created_at"),
)

judge_cache_table = Table(
    # One judge reply, keyed by sha256 of (model, full prompt messages, parameters incl. sample index).
    "judge_cache",
    metadata,
    _required("key", String(64), primary_key=True),
    _required("model", String()),
    _required("reply", Text()),
    _optional("input_tokens", Integer()),
    _optional("output_tokens", Integer()),
    _required("created_at", UTCDateTime()),
)
