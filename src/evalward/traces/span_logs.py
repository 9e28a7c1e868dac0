"""Log records joined to the spans they were emitted in, as span events.

An instrumentation that records GenAI content as log records (`traces.otlp_logs`) emits them while its span
is current, so each record carries that span's trace and span id. Attached to the span as a `SpanEvent`
(with the record's body), the record is read by the same message readers as the events older
instrumentations put on the span itself (`genai_events`).

Order: a span's events keep their order and are followed by its log records in time order (the observed
time when the record has no time of its own); records with the same time keep the order they were read in,
which is the order they were emitted in within one export. A record whose span is not among the spans
given (no span id, or its span is missing from the file) is not attached: the caller counts it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from evalward.traces.otlp import LogRecord, Span, SpanEvent


def attach_logs(spans: Sequence[Span], logs: Sequence[LogRecord]) -> tuple[list[Span], int]:
    """`spans` (in their order) with each log record of `logs` attached to its span, and how many records
    found no span among `spans`."""
    by_span: dict[tuple[str, str], list[LogRecord]] = {}
    known = {span.key for span in spans}
    unattached = 0
    for record in logs:
        key = (record.trace_id, record.span_id)
        if record.span_id and key in known:
            by_span.setdefault(key, []).append(record)
        else:
            unattached += 1
    if not by_span:
        return list(spans), unattached
    joined: list[Span] = []
    for span in spans:
        records = by_span.get(span.key)
        if not records:
            joined.append(span)
            continue
        events = [
            SpanEvent(name=r.event_name, time_ns=r.time_ns, attributes=r.attributes, body=r.body)
            for r in sorted(records, key=lambda r: r.time_ns)
        ]
        joined.append(dataclasses.replace(span, events=(*span.events, *events)))
    return joined, unattached
