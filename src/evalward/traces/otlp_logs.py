"""OTLP log records: where some instrumentations put the content of GenAI calls.

`opentelemetry-instrumentation-openai-v2` with `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`
(its default conventions) records the prompt and the completion not on its `chat` span but as log
records emitted inside it: `gen_ai.system.message`, `gen_ai.user.message`, `gen_ai.assistant.message`,
`gen_ai.tool.message` and `gen_ai.choice`, each with the message as its body. In `event_only` mode it emits
one `gen_ai.client.inference.operation.details` record whose attributes hold `gen_ai.input.messages` and
`gen_ai.output.messages`; OpenLLMetry's event mode emits the per-message names. A Collector whose file
exporter serves both the traces and the logs pipeline writes both to one file, one export a line:
`{"resourceSpans": [...]}` and `{"resourceLogs": [{"resource", "scopeLogs": [{"scope", "logRecords":
[...]}]}]}`.

A record is tied to its span by `traceId` and `spanId` (hex, as the OTLP JSON mapping writes them); its name
is `eventName` (OTLP 1.5+), else the older `event.name` attribute. `traces.span_logs` attaches each record
to its span as an event, where the message readers find it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from evalward.traces.otlp_values import decode_any_value, decode_attributes, first_key, nanos


@dataclass(frozen=True)
class LogRecord:
    """One OTLP log record, with its body and attributes decoded; ids are "" when it has none."""

    trace_id: str
    span_id: str
    event_name: str
    time_ns: int
    body: Any
    attributes: dict[str, Any]


def is_otlp_logs_document(data: Any) -> bool:
    """Whether `data` is an OTLP JSON logs export (`resourceLogs`/`resource_logs` at the top)."""
    return isinstance(data, dict) and ("resourceLogs" in data or "resource_logs" in data)


def logs_from_otlp(data: dict[str, Any]) -> list[LogRecord]:
    """Every log record of one OTLP JSON export (none when it holds only spans)."""
    records: list[LogRecord] = []
    for resource_logs in first_key(data, "resourceLogs", "resource_logs") or []:
        if not isinstance(resource_logs, dict):
            continue
        for scope_logs in first_key(resource_logs, "scopeLogs", "scope_logs") or []:
            if not isinstance(scope_logs, dict):
                continue
            for raw in first_key(scope_logs, "logRecords", "log_records") or []:
                if isinstance(raw, dict):
                    records.append(_log_record(raw))
    return records


def _log_record(raw: dict[str, Any]) -> LogRecord:
    attributes = decode_attributes(raw.get("attributes"))
    name = first_key(raw, "eventName", "event_name") or attributes.get("event.name") or ""
    # SDKs leave `timeUnixNano` unset on events (0, so omitted); the observed time is always set.
    time_ns = nanos(first_key(raw, "timeUnixNano", "time_unix_nano")) or nanos(
        first_key(raw, "observedTimeUnixNano", "observed_time_unix_nano")
    )
    return LogRecord(
        trace_id=str(first_key(raw, "traceId", "trace_id") or ""),
        span_id=str(first_key(raw, "spanId", "span_id") or ""),
        event_name=str(name),
        time_ns=time_ns,
        body=decode_any_value(raw.get("body")),
        attributes=attributes,
    )
