"""Read OpenTelemetry spans from files: OTLP JSON, the Collector's file-exporter output, and Jaeger JSON.

Accepted shapes (detected by content):
- OTLP JSON (`ExportTraceServiceRequest`): `{"resourceSpans": [{"resource", "scopeSpans": [{"scope",
  "spans": [...]}]}]}`; snake_case keys (`resource_spans`, `scope_spans`) and the pre-1.0
  `instrumentationLibrarySpans` are accepted too;
- the Collector's file exporter: one such object per line (JSON lines), which `spans_from_lines` reads one
  line at a time; a single OTLP or Jaeger document is parsed whole (`read_spans`);
- Jaeger JSON (`{"data": [{"traceID", "spans": [{"spanID", "references", "tags", "startTime"}]}]}`).

OTLP attribute values are `AnyValue` objects (`{"stringValue": "x"}`, `{"intValue": "3"}` — 64-bit ints
are strings in JSON —, `doubleValue`, `boolValue`, `arrayValue.values`, `kvlistValue.values`,
`bytesValue`); they are decoded to plain Python values. Times are nanoseconds since the epoch (OTLP) or
microseconds (Jaeger, converted to nanoseconds). A span status `code` of 2 or `STATUS_CODE_ERROR`
(Jaeger: tag `error=true` or `otel.status_code=ERROR`) marks an error.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from evalward.errors import EvalFileError, FileProblem


@dataclass(frozen=True)
class SpanEvent:
    """A timestamped event recorded on a span (e.g. the pre-1.37 `gen_ai.choice` events)."""

    name: str
    time_ns: int
    attributes: dict[str, Any]


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


def decode_any_value(value: Any) -> Any:
    """An OTLP `AnyValue` (JSON mapping) as a plain Python value; anything else is returned as is."""
    if not isinstance(value, dict):
        return value
    if not value:
        return None
    key, inner = next(iter(value.items()))
    if key in ("stringValue", "string_value"):
        return inner
    if key in ("boolValue", "bool_value"):
        return bool(inner)
    if key in ("intValue", "int_value"):
        try:
            return int(inner)
        except (TypeError, ValueError):
            return inner
    if key in ("doubleValue", "double_value"):
        try:
            return float(inner)
        except (TypeError, ValueError):
            return inner
    if key in ("arrayValue", "array_value"):
        return [decode_any_value(v) for v in (inner or {}).get("values", [])]
    if key in ("kvlistValue", "kvlist_value"):
        return decode_attributes((inner or {}).get("values", []))
    if key in ("bytesValue", "bytes_value"):
        return inner
    return value


def decode_attributes(items: Any) -> dict[str, Any]:
    """OTLP `[{key, value: AnyValue}]` → {key: decoded value}; a plain mapping is returned decoded."""
    if isinstance(items, dict):
        return {str(k): decode_any_value(v) for k, v in items.items()}
    decoded: dict[str, Any] = {}
    for item in items or []:
        if isinstance(item, dict) and "key" in item:
            decoded[str(item["key"])] = decode_any_value(item.get("value"))
    return decoded


def _get(mapping: dict[str, Any], *names: str) -> Any:
    for name in names:
        if name in mapping:
            return mapping[name]
    return None


def _nanos(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def is_otlp_document(data: Any) -> bool:
    """Whether `data` is an OTLP JSON export (`resourceSpans`/`resource_spans` at the top)."""
    return isinstance(data, dict) and ("resourceSpans" in data or "resource_spans" in data)


def is_jaeger_document(data: Any) -> bool:
    """Whether `data` is a Jaeger JSON export: `{"data": [{"traceID", "spans"}]}`."""
    if not isinstance(data, dict) or not isinstance(data.get("data"), list):
        return False
    return all(isinstance(t, dict) and "spans" in t for t in data["data"]) and bool(data["data"])


def spans_from_otlp(data: dict[str, Any]) -> list[Span]:
    """Every span of one OTLP JSON export."""
    spans: list[Span] = []
    for resource_spans in _get(data, "resourceSpans", "resource_spans") or []:
        resource = decode_attributes((resource_spans.get("resource") or {}).get("attributes"))
        scopes = _get(resource_spans, "scopeSpans", "scope_spans", "instrumentationLibrarySpans") or []
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
            time_ns=_nanos(_get(e, "timeUnixNano", "time_unix_nano")),
            attributes=decode_attributes(e.get("attributes")),
        )
        for e in raw.get("events") or []
    )
    parent = _get(raw, "parentSpanId", "parent_span_id")
    return Span(
        trace_id=str(_get(raw, "traceId", "trace_id") or ""),
        span_id=str(_get(raw, "spanId", "span_id") or ""),
        parent_id=str(parent) if parent else None,
        name=str(raw.get("name", "")),
        start_ns=_nanos(_get(raw, "startTimeUnixNano", "start_time_unix_nano")),
        end_ns=_nanos(_get(raw, "endTimeUnixNano", "end_time_unix_nano")),
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
            start_ns = _nanos(raw.get("startTime")) * 1000
            error = tags.get("error") in (True, "true") or str(tags.get("otel.status_code", "")).upper() == "ERROR"
            spans.append(
                Span(
                    trace_id=str(raw.get("traceID") or trace.get("traceID") or ""),
                    span_id=str(raw.get("spanID") or ""),
                    parent_id=str(parent) if parent else None,
                    name=str(raw.get("operationName", "")),
                    start_ns=start_ns,
                    end_ns=start_ns + _nanos(raw.get("duration")) * 1000,
                    attributes={str(k): v for k, v in tags.items()},
                    resource={str(k): v for k, v in resource.items()},
                    error=error,
                    status_message=str(tags.get("otel.status_description", "")),
                    events=tuple(
                        SpanEvent(
                            name=str({f.get("key"): f.get("value") for f in log.get("fields") or []}.get("event", "")),
                            time_ns=_nanos(log.get("timestamp")) * 1000,
                            attributes={f.get("key"): f.get("value") for f in log.get("fields") or []},
                        )
                        for log in raw.get("logs") or []
                    ),
                )
            )
    return spans


def read_spans(text: str, *, source: str) -> list[Span]:
    """Every span in a trace file's text (OTLP JSON, OTLP JSON lines, or Jaeger JSON).

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
            return spans_from_otlp(whole)
        if is_jaeger_document(whole):
            return spans_from_jaeger(whole)
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
    return list(spans_from_lines(enumerate(text.splitlines(), start=1), source=source))


def spans_from_lines(lines: Iterable[tuple[int, str]], *, source: str) -> Iterator[Span]:
    """The spans of OTLP JSON lines (line number, text), one line held at a time, as they are read.

    Every bad line is reported (with its number) in one `EvalFileError`, raised once all lines are read:
    spans of the good lines come first, so a caller that keeps them must drop them when it is raised."""
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
                    expected='{"resourceSpans": [...]} (the Collector file exporter writes one per line)',
                    found=_shape(data),
                )
            )
            continue
        yield from spans_from_otlp(data)
    if problems:
        raise EvalFileError(problems)


def _shape(value: Any) -> str:
    if isinstance(value, dict):
        keys = ", ".join(sorted(str(k) for k in value)[:6])
        return f"an object with keys {keys}" if keys else "an empty object"
    return f"a JSON {type(value).__name__}"
