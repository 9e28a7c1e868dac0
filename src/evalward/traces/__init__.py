"""Recorded agent behaviour → trajectories: OpenTelemetry GenAI traces, response logs and stored runs.

- `otlp`: read spans from OTLP JSON (also JSON lines from the Collector's file exporter) and Jaeger JSON;
- `genai`: classify spans by GenAI operation across dialects and rebuild one `AgentOutput` per turn;
- `recordings`: every recording source keyed by (eval set, case, turn, repetition), for `replay:FILE`
  and `evalward import-traces`.
"""

from evalward.traces.genai import TracedTurn, TraceOptions, operation, turns_from_spans
from evalward.traces.otlp import Span, SpanEvent, read_spans
from evalward.traces.recordings import RecordedError, Recordings, detect_kind, load_recordings

__all__ = [
    "RecordedError",
    "Recordings",
    "Span",
    "SpanEvent",
    "TraceOptions",
    "TracedTurn",
    "detect_kind",
    "load_recordings",
    "operation",
    "read_spans",
    "turns_from_spans",
]
