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
from typing import Any, ClassVar, cast

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
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
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column
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


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)
    type_annotation_map: ClassVar[dict[Any, Any]] = {datetime: UTCDateTime(), dict[str, Any]: JSON(), list[Any]: JSON()}


class RunTable(Base):
    """A run; `run_json` is the RunResult without its cases (those live in case_results)."""

    __tablename__ = "runs"

    run_id: Mapped[str] = mapped_column(String(), primary_key=True)
    status: Mapped[str] = mapped_column(String(16))
    repository: Mapped[str | None] = mapped_column(String())
    commit_sha: Mapped[str | None] = mapped_column(String(64))
    branch: Mapped[str | None] = mapped_column(String())
    base_branch: Mapped[str | None] = mapped_column(String())
    base_sha: Mapped[str | None] = mapped_column(String(64))
    pr_number: Mapped[int | None] = mapped_column(Integer())
    merge_base: Mapped[str | None] = mapped_column(String(64))
    shard_index: Mapped[int | None] = mapped_column(Integer())
    shard_count: Mapped[int | None] = mapped_column(Integer())
    group_id: Mapped[str | None] = mapped_column(String())
    fingerprint: Mapped[str] = mapped_column(String(64))
    comparability_key: Mapped[str] = mapped_column(String(64))
    evalward_version: Mapped[str] = mapped_column(String(64))
    agent_kind: Mapped[str | None] = mapped_column(String(64))
    agent_target: Mapped[str | None] = mapped_column(Text())
    agent_config_hash: Mapped[str | None] = mapped_column(String(64))
    passed: Mapped[bool | None] = mapped_column(Boolean())
    repetitions: Mapped[int] = mapped_column(Integer())
    planned_count: Mapped[int] = mapped_column(Integer())
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    run_json: Mapped[dict[str, Any]] = mapped_column(JSON())
    case_order: Mapped[list[Any] | None] = mapped_column(JSON())

    __table_args__ = (
        Index(None, "commit_sha", "status"),
        Index(None, "branch", "started_at"),
        Index(None, "comparability_key", "commit_sha"),
        Index(None, "fingerprint", "commit_sha"),
        Index(None, "group_id"),
    )


class PlanTable(Base):
    __tablename__ = "run_plan"

    run_id: Mapped[str] = mapped_column(String(), ForeignKey("runs.run_id", ondelete="CASCADE"))
    eval_set_id: Mapped[str] = mapped_column(String())
    case_id: Mapped[str] = mapped_column(String())
    repetition: Mapped[int] = mapped_column(Integer())

    __table_args__ = (PrimaryKeyConstraint("run_id", "eval_set_id", "case_id", "repetition"),)


class CaseTable(Base):
    """One finished case × repetition. The unique constraint is what makes writes idempotent."""

    __tablename__ = "case_results"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    run_id: Mapped[str] = mapped_column(String(), ForeignKey("runs.run_id", ondelete="CASCADE"))
    eval_set_id: Mapped[str] = mapped_column(String())
    case_id: Mapped[str] = mapped_column(String())
    repetition: Mapped[int] = mapped_column(Integer())
    status: Mapped[str] = mapped_column(String(16))
    content_hash: Mapped[str] = mapped_column(String(64))
    must_pass: Mapped[bool] = mapped_column(Boolean())
    latency_s: Mapped[float | None] = mapped_column(Float())
    input_tokens: Mapped[int | None] = mapped_column(BigInteger())
    output_tokens: Mapped[int | None] = mapped_column(BigInteger())
    cost_usd: Mapped[float | None] = mapped_column(Float())
    error_kind: Mapped[str | None] = mapped_column(String(32))
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    recorded_at: Mapped[datetime] = mapped_column(UTCDateTime())
    case_json: Mapped[dict[str, Any]] = mapped_column(JSON())

    __table_args__ = (
        UniqueConstraint("run_id", "eval_set_id", "case_id", "repetition"),
        Index(None, "case_id", "run_id"),
        # Covers flip rates and run counts, so they never read the (large) case JSON rows.
        Index("ix_case_results_outcome", "run_id", "eval_set_id", "case_id", "status", "content_hash"),
    )


class ScoreTable(Base):
    """One metric's case-level score for one case result (None when not applicable or on error)."""

    __tablename__ = "metric_scores"

    run_id: Mapped[str] = mapped_column(String())
    eval_set_id: Mapped[str] = mapped_column(String())
    case_id: Mapped[str] = mapped_column(String())
    repetition: Mapped[int] = mapped_column(Integer())
    metric: Mapped[str] = mapped_column(String())
    score: Mapped[float | None] = mapped_column(Float())
    status: Mapped[str] = mapped_column(String(16))

    __table_args__ = (
        PrimaryKeyConstraint("run_id", "eval_set_id", "case_id", "repetition", "metric"),
        ForeignKeyConstraint(
            ["run_id", "eval_set_id", "case_id", "repetition"],
            [
                "case_results.run_id",
                "case_results.eval_set_id",
                "case_results.case_id",
                "case_results.repetition",
            ],
            ondelete="CASCADE",
        ),
        Index(None, "case_id", "metric"),
    )


class JobTable(Base):
    """A daemon job. Workers claim with `SELECT … FOR UPDATE SKIP LOCKED` (PostgreSQL) and hold a lease."""

    __tablename__ = "jobs"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    kind: Mapped[str] = mapped_column(String(64))
    payload: Mapped[dict[str, Any]] = mapped_column(JSON())
    status: Mapped[str] = mapped_column(String(16))
    lease_until: Mapped[datetime | None] = mapped_column(UTCDateTime())
    attempts: Mapped[int] = mapped_column(Integer())
    repo: Mapped[str | None] = mapped_column(String())
    head_sha: Mapped[str | None] = mapped_column(String(64))
    dedupe_key: Mapped[str] = mapped_column(String(), unique=True)
    last_error: Mapped[str | None] = mapped_column(Text())
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime())

    __table_args__ = (Index(None, "status", "lease_until"),)


class WebhookDeliveryTable(Base):
    """A webhook delivery the daemon verified and acted on, by its `X-GitHub-Delivery` GUID (kept for days)."""

    __tablename__ = "webhook_deliveries"

    guid: Mapped[str] = mapped_column(String(), primary_key=True)
    event: Mapped[str] = mapped_column(String(64))
    action: Mapped[str | None] = mapped_column(String(64))
    outcome: Mapped[str] = mapped_column(String(32))
    received_at: Mapped[datetime] = mapped_column(UTCDateTime())

    __table_args__ = (Index(None, "received_at"),)


class GateVerdictTable(Base):
    """A verdict reached for a run (append-only: a re-gate adds a row; the newest is the one shown)."""

    __tablename__ = "gate_verdicts"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    run_id: Mapped[str] = mapped_column(String(), ForeignKey("runs.run_id", ondelete="CASCADE"))
    baseline_run_id: Mapped[str | None] = mapped_column(String())
    outcome: Mapped[str] = mapped_column(String(16))
    policy_digest: Mapped[str | None] = mapped_column(String(64))
    source: Mapped[str] = mapped_column(String(32))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    verdict_json: Mapped[dict[str, Any]] = mapped_column(JSON())

    __table_args__ = (Index(None, "run_id", "created_at"),)


class JudgeCacheTable(Base):
    """One judge reply, keyed by sha256 of (model, full prompt messages, parameters incl. sample index)."""

    __tablename__ = "judge_cache"

    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    model: Mapped[str] = mapped_column(String())
    reply: Mapped[str] = mapped_column(Text())
    input_tokens: Mapped[int | None] = mapped_column(Integer())
    output_tokens: Mapped[int | None] = mapped_column(Integer())
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())


metadata = Base.metadata
runs_table = cast(Table, RunTable.__table__)
plan_table = cast(Table, PlanTable.__table__)
cases_table = cast(Table, CaseTable.__table__)
scores_table = cast(Table, ScoreTable.__table__)
jobs_table = cast(Table, JobTable.__table__)
judge_cache_table = cast(Table, JudgeCacheTable.__table__)
webhook_deliveries_table = cast(Table, WebhookDeliveryTable.__table__)
gate_verdicts_table = cast(Table, GateVerdictTable.__table__)
