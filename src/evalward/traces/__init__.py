"""Recorded agent behaviour → trajectories: OpenTelemetry GenAI traces, response logs and stored runs.

- `otlp`: read spans from OTLP JSON (also JSON lines from the Collector's file exporter) and Jaeger JSON,
  with the OTLP log records beside them (`otlp_logs`; values decoded by `otlp_values`), which `span_logs`
  attaches to the spans they were emitted in;
- `genai`: rebuild one `AgentOutput` per turn from GenAI spans, classified by operation across dialects
  (`genai_spans`) with their messages read in every shape (`genai_messages`: attributes, flattened
  attributes in `genai_flattened`, events and log records in `genai_events`);
- `query_check`: a replayed turn checked against its eval case (a changed query, content not recorded);
- `recordings`: every recording source keyed by (eval set, case, turn, repetition), for `replay:FILE`
  and `evalward import-traces`; `recording_set` holds the lookup rules they share;
- `responses`, `trace_turns`, `recordings_index`, `row_index`: responses JSONL and traces read incrementally and
  indexed (a few tens of bytes a recorded turn), each turn read back from its file when it is replayed.
"""

from evalward.traces.genai import TracedTurn, TraceOptions, turns_from_spans
from evalward.traces.genai_spans import operation
from evalward.traces.otlp import LogRecord, Span, SpanEvent, read_records, read_spans
from evalward.traces.recordings import RecordedError, Recordings, RecordingSet, detect_kind, load_recordings

__all__ = [
    "LogRecord",
    "RecordedError",
    "RecordingSet",
    "Recordings",
    "Span",
    "SpanEvent",
    "TraceOptions",
    "TracedTurn",
    "detect_kind",
    "load_recordings",
    "operation",
    "read_records",
    "read_spans",
    "turns_from_spans",
]
