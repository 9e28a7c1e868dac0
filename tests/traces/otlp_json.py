"""The OpenTelemetry SDK's finished spans and log records as OTLP JSON, as a Collector's file exporter writes it.

`opentelemetry-exporter-otlp-proto-common` is not installed, and protobuf's `json_format` would not give OTLP
JSON anyway: the OTLP JSON mapping departs from the proto3 one (trace and span ids are hex, not base64;
enums are integers). So the mapping is written out here, per the OTLP specification ("JSON Protobuf
Encoding") and as the Collector's `pdata` marshaler writes it: camelCase field names, 64-bit integers
(`intValue`, times) as decimal strings, ids as lowercase hex, enums (span kind, status code, severity) as
integers, fields at their default value (0, "", empty) left out. One call makes one export (one line of the
file exporter's output): `{"resourceSpans": [...]}` or `{"resourceLogs": [...]}`, records grouped by
resource and instrumentation scope.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from opentelemetry.sdk._logs import ReadableLogRecord
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import SpanKind, StatusCode
from tests.traces.otlp_builders import any_value


def key_values(attributes: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    return [{"key": key, "value": any_value(value)} for key, value in (attributes or {}).items()]


def _without_defaults(fields: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in fields.items() if value not in (None, "", 0, [], {})}


def _resource(resource: Resource) -> dict[str, Any]:
    return _without_defaults({"attributes": key_values(resource.attributes)})


def _scope(scope: InstrumentationScope | None) -> dict[str, Any]:
    if scope is None:
        return {}
    return _without_defaults({"name": scope.name, "version": scope.version, "attributes": key_values(scope.attributes)})


_KIND = {
    SpanKind.INTERNAL: 1,
    SpanKind.SERVER: 2,
    SpanKind.CLIENT: 3,
    SpanKind.PRODUCER: 4,
    SpanKind.CONSUMER: 5,
}
_STATUS = {StatusCode.UNSET: 0, StatusCode.OK: 1, StatusCode.ERROR: 2}


def _span(span: ReadableSpan) -> dict[str, Any]:
    context = span.get_span_context()
    assert context is not None
    events = [
        _without_defaults(
            {"timeUnixNano": str(event.timestamp), "name": event.name, "attributes": key_values(event.attributes)}
        )
        for event in span.events
    ]
    encoded = _without_defaults(
        {
            "traceId": f"{context.trace_id:032x}",
            "spanId": f"{context.span_id:016x}",
            "parentSpanId": f"{span.parent.span_id:016x}" if span.parent is not None else "",
            "flags": int(context.trace_flags),
            "name": span.name,
            "kind": _KIND[span.kind],
            "startTimeUnixNano": str(span.start_time),
            "endTimeUnixNano": str(span.end_time),
            "attributes": key_values(span.attributes),
            "events": events,
        }
    )
    # The Collector writes the status even when it is unset, as an empty object.
    encoded["status"] = _without_defaults(
        {"message": span.status.description, "code": _STATUS[span.status.status_code]}
    )
    return encoded


def _log(record: ReadableLogRecord) -> dict[str, Any]:
    log = record.log_record
    severity = log.severity_number.value if log.severity_number is not None else 0
    return _without_defaults(
        {
            "timeUnixNano": str(log.timestamp) if log.timestamp else "",
            "observedTimeUnixNano": str(log.observed_timestamp) if log.observed_timestamp else "",
            "severityNumber": severity,
            "severityText": log.severity_text,
            "body": any_value(log.body),
            "attributes": key_values(log.attributes),
            "flags": int(log.trace_flags or 0),
            "traceId": f"{log.trace_id:032x}" if log.trace_id else "",
            "spanId": f"{log.span_id:016x}" if log.span_id else "",
            "eventName": log.event_name,
        }
    )


def _grouped(
    records: Sequence[Any],
    encode: Callable[[Any], dict[str, Any]],
    scope_key: str,
    items_key: str,
) -> list[dict[str, Any]]:
    """Records grouped by resource, then by scope, in the order first seen."""
    by_resource: dict[int, tuple[Resource, dict[int, tuple[InstrumentationScope | None, list[Any]]]]] = {}
    for record in records:
        _, scopes = by_resource.setdefault(id(record.resource), (record.resource, {}))
        _, items = scopes.setdefault(id(record.instrumentation_scope), (record.instrumentation_scope, []))
        items.append(encode(record))
    return [
        _without_defaults(
            {
                "resource": _resource(resource),
                scope_key: [
                    _without_defaults(
                        {
                            "scope": _scope(scope),
                            items_key: items,
                            "schemaUrl": scope.schema_url if scope is not None else "",
                        }
                    )
                    for scope, items in scopes.values()
                ],
                "schemaUrl": resource.schema_url,
            }
        )
        for resource, scopes in by_resource.values()
    ]


def spans_export(spans: Sequence[ReadableSpan]) -> dict[str, Any]:
    """One OTLP JSON traces export (`ExportTraceServiceRequest`) of `spans`."""
    return {"resourceSpans": _grouped(spans, _span, "scopeSpans", "spans")}


def logs_export(records: Sequence[ReadableLogRecord]) -> dict[str, Any]:
    """One OTLP JSON logs export (`ExportLogsServiceRequest`) of `records`."""
    return {"resourceLogs": _grouped(records, _log, "scopeLogs", "logRecords")}
