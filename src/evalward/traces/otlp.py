"""Read OpenTelemetry spans (and the log records tied to them) from files: OTLP JSON, the Collector's
file-exporter output, and Jaeger JSON.

Accepted shapes (detected by content):
- OTLP JSON (`ExportTraceServiceRequest`): `{"resourceSpans": [{"resource", "scopeSpans": [{"scope",
  "spans": [...]}]}]}`; snake_case keys (`resource_spans`, `scope_spans`) and the pre-1.0
  `instrumentationLibrarySpans` are accepted too; an OTLP logs export (`{"resourceLogs": [...]}`,
  `traces.otlp_logs`) is read for its log records;
- the Collector's file exporter: one such object per line (JSON lines), spans and logs mixed when one file
  exporter serves both pipelines, which `records_from_lines` reads one line at a time; a single OTLP or
  Jaeger document is parsed whole (`read_records`);
- Jaeger JSON (`{"data": [{"traceID", "spans": [{"spanID", "references", "tags", "startTime"}]}]}`).

Attribute values are decoded to plain Python values (`traces.otlp_values`). Times are nanoseconds since the
epoch (OTLP) or microseconds (Jaeger, converted to nanoseconds). A span status `code` of 2 or
`STATUS_CODE_ERROR` (Jaeger: tag `error=true` or `otel.status_code=ERROR`) marks an error.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from evalward.errors import EvalFileError, FileProblem
from evalward.traces.otlp_logs import LogRecord, is_otlp_logs_document, logs_from_otlp
from evalward.traces.otlp_values import decode_any_value, decode_attributes, first_key, nanos

__all__ = [
    "LogRecord",
    "Record",
    "Span",
    "SpanEvent",
    "decode_any_value",
    "decode_attributes",
    "is_jaeger_document",
    "is_otlp_document",
    "read_records",
    "read_spans",
    "records_from_lines",
]


@dataclass(frozen=True)
class SpanEvent:
    """A timestamped event recorded on a span (e.g. the pre-1.37 `gen_ai.choice` events), or a log record
    emitted inside the span, attached to it (`traces.span_logs`); only log records have a `body`."""

    name: str
    time_ns: int
    attributes: dict[str, Any]
    body: Any = None


@dataclass(frozen=True)
class Span:
    """One span, with decoded attributes; `parent_id` is None for a root span."""

    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    start_ns: int
    end_ns: int
    attributes: dict[str, Any]
    resource: dict[str, Any] = field(default_factory=dict)
    error: bool = False
    status_message: str = ""
    events: tuple[SpanEvent, ...] = ()

    @property
    def key(self) -> tuple[str, str]:
        return (self.trace_id, self.span_id)


Record = Span | LogRecord
"""What a trace file holds: spans, and the log records emitted inside them."""


def is_otlp_document(data: Any) -> bool:
    """Whether `data` is an OTLP JSON export of spans or of logs (`resourceSpans`/`resourceLogs` at the top,
    or their snake_case names)."""
    return (isinstance(data, dict) and ("resourceSpans" in data or "resource_spans" in data)) or (
        is_otlp_logs_document(data)
    )


def is_jaeger_document(data: Any) -> bool:
    """Whether `data` is a Jaeger JSON export: `{"data": [{"traceID", "spans"}]}`."""
    if not isinstance(data, dict) or not isinstance(data.get("data"), list):
        return False
    return all(isinstance(t, dict) and "spans" in t for t in data["data"]) and bool(data["data"])


def spans_from_otlp(data: dict[str, Any]) -> list[Span]:
    """Every span of one OTLP JSON export."""
    spans: list[Span] = []
    for resource_spans in first_key(data, "resourceSpans", "resource_spans") or []:
        resource = decode_attributes((resource_spans.get("resource") or {}).get("attributes"))
        scopes = first_key(resource_spans, "scopeSpans", "scope_spans", "instrumentationLibrarySpans") or []
        for scope_spans in scopes:
            for raw in scope_spans.get("spans") or []:
                spans.append(_otlp_span(raw, resource))
    return spans


def _otlp_span(raw: dict[str, Any], resource: dict[str, Any]) -> Span:
    status = raw.get("status") or {}
    code = status.get("code")
    events = tuple(
        SpanEvent(
            name=str(e.get("name", "")),
            time_ns=nanos(first_key(e, "timeUnixNano", "time_unix_nano")),
            attributes=decode_attributes(e.get("attributes")),
        )
        for e in raw.get("events") or []
    )
    parent = first_key(raw, "parentSpanId", "parent_span_id")
    return Span(
        trace_id=str(first_key(raw, "traceId", "trace_id") or ""),
        span_id=str(first_key(raw, "spanId", "span_id") or ""),
        parent_id=str(parent) if parent else None,
        name=str(raw.get("name", "")),
        start_ns=nanos(first_key(raw, "startTimeUnixNano", "start_time_unix_nano")),
        end_ns=nanos(first_key(raw, "endTimeUnixNano", "end_time_unix_nano")),
        attributes=decode_attributes(raw.get("attributes")),
        resource=resource,
        error=code in (2, "2", "STATUS_CODE_ERROR", "ERROR"),
        status_message=str(status.get("message") or ""),
        events=events,
    )


def spans_from_jaeger(data: dict[str, Any]) -> list[Span]:
    """Every span of a Jaeger JSON export (times converted from µs to ns)."""
    spans: list[Span] = []
    for trace in data.get("data") or []:
        processes = trace.get("processes") or {}
        for raw in trace.get("spans") or []:
            tags = {t.get("key"): t.get("value") for t in raw.get("tags") or [] if isinstance(t, dict)}
            parent = next(
                (r.get("spanID") for r in raw.get("references") or [] if r.get("refType") == "CHILD_OF"), None
            )
            process = processes.get(raw.get("processID"), {})
            resource = {t.get("key"): t.get("value") for t in process.get("tags") or [] if isinstance(t, dict)}
            start_ns = nanos(raw.get("startTime")) * 1000
            error = tags.get("error") in (True, "true") or str(tags.get("otel.status_code", "")).upper() == "ERROR"
            spans.append(
                Span(
                    trace_id=str(raw.get("traceID") or trace.get("traceID") or ""),
                    span_id=str(raw.get("spanID") or ""),
                    parent_id=str(parent) if parent else None,
                    name=str(raw.get("operationName", "")),
                    start_ns=start_ns,
                    end_ns=start_ns + nanos(raw.get("duration")) * 1000,
                    attributes={str(k): v for k, v in tags.items()},
                    resource={str(k): v for k, v in resource.items()},
                    error=error,
                    status_message=str(tags.get("otel.status_description", "")),
                    events=tuple(
                        SpanEvent(
                            name=str({f.get("key"): f.get("value") for f in log.get("fields") or []}.get("event", "")),
                            time_ns=nanos(log.get("timestamp")) * 1000,
                            attributes={f.get("key"): f.get("value") for f in log.get("fields") or []},
                        )
                        for log in raw.get("logs") or []
                    ),
                )
            )
    return spans


def read_spans(text: str, *, source: str) -> list[Span]:
    """Every span in a trace file's text (OTLP JSON, OTLP JSON lines, or Jaeger JSON); `read_records` also
    gives the log records."""
    return [record for record in read_records(text, source=source) if isinstance(record, Span)]


def read_records(text: str, *, source: str) -> list[Record]:
    """Every span and log record in a trace file's text (OTLP JSON, OTLP JSON lines, or Jaeger JSON).

    Raises `EvalFileError` naming `source` (and the line, for JSON lines) when the text is none of these.
    """
    stripped = text.strip()
    if not stripped:
        raise EvalFileError([FileProblem(source, "the trace file is empty", expected="OTLP JSON or Jaeger JSON")])
    try:
        whole: Any = json.loads(stripped)
    except json.JSONDecodeError:
        whole = None
    else:
        if is_otlp_document(whole):
            return _otlp_records(whole)
        if is_jaeger_document(whole):
            return list(spans_from_jaeger(whole))
        raise EvalFileError(
            [
                FileProblem(
                    source,
                    "not a trace export",
                    json_path="$",
                    expected='OTLP JSON ({"resourceSpans": [...]}) or Jaeger JSON ({"data": [...]})',
                    found=_shape(whole),
                )
            ]
        )
    return list(records_from_lines(enumerate(text.splitlines(), start=1), source=source))


def records_from_lines(lines: Iterable[tuple[int, str]], *, source: str) -> Iterator[Record]:
    """The spans and log records of OTLP JSON lines (line number, text), one line held at a time, as they
    are read.

    Every bad line is reported (with its number) in one `EvalFileError`, raised once all lines are read:
    records of the good lines come first, so a caller that keeps them must drop them when it is raised."""
    problems: list[FileProblem] = []
    for number, line in lines:
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.append(FileProblem(source, f"not valid JSON: {exc.msg}", line=number, column=exc.colno))
            continue
        if not is_otlp_document(data):
            problems.append(
                FileProblem(
                    source,
                    "not an OTLP export line",
                    line=number,
                    expected='{"resourceSpans": [...]} or {"resourceLogs": [...]} (the Collector file exporter '
                    "writes one per line)",
                    found=_shape(data),
                )
            )
            continue
        yield from _otlp_records(data)
    if problems:
        raise EvalFileError(problems)


def _otlp_records(data: dict[str, Any]) -> list[Record]:
    return [*spans_from_otlp(data), *logs_from_otlp(data)]


def _shape(value: Any) -> str:
    if isinstance(value, dict):
        keys = ", ".join(sorted(str(k) for k in value)[:6])
        return f"an object with keys {keys}" if keys else "an empty object"
    return f"a JSON {type(value).__name__}"
